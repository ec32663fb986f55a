from django.db import models
from django.utils import timezone

from apps.core import crypto

# The platform value of this kind's channels (Channel.platform).
PLATFORM = "mastodon"
# The languages a status may name (ISO 639-1, two letters: what Mastodon's `language` takes).
_ISO_639_1 = (
    "aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el "
    "en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it "
    "iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt "
    "my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl "
    "sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo "
    "za zh zu"
)
LANGUAGES = frozenset(_ISO_639_1.split())


class Visibility(models.TextChoices):
    PUBLIC = "public", "Public"
    # Public, but kept out of the public timelines and trends.
    UNLISTED = "unlisted", "Unlisted"
    PRIVATE = "private", "Followers only"


class MastodonApp(models.Model):
    """The service's app registered on one instance (POST /api/v1/apps), shared by every channel
    that connects an account there; registered again when the callback's address changes."""

    base_url = models.CharField("instance", max_length=300, unique=True)
    client_id = models.CharField(max_length=300)
    client_secret_encrypted = models.TextField(editable=False)
    redirect_uri = models.CharField(max_length=500)
    scopes = models.CharField(max_length=300)
    registered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "Mastodon app"

    def __str__(self) -> str:
        return self.base_url

    def client_secret(self) -> str:
        return crypto.decrypt(self.client_secret_encrypted)


class MastodonConnection(models.Model):
    """A `mastodon` channel's account on an instance: who granted access, the access token (stored
    encrypted, never shown), how its statuses are posted, and the instance's limits as last read."""

    channel = models.OneToOneField("channels.Channel", on_delete=models.CASCADE, related_name="mastodon_connection")
    app = models.ForeignKey(MastodonApp, on_delete=models.PROTECT, related_name="connections", editable=False)
    account_id = models.CharField("account id", max_length=100, editable=False)
    acct = models.CharField("Mastodon account", max_length=300, editable=False, help_text="user@instance")
    display_name = models.CharField(max_length=300, blank=True, editable=False)
    access_token_encrypted = models.TextField(editable=False)
    scopes = models.CharField(max_length=300, blank=True, editable=False)
    visibility = models.CharField(
        max_length=10,
        choices=Visibility.choices,
        default=Visibility.PUBLIC,
        help_text=(
            "Who sees the channel's statuses (unlisted: everyone, but not in the public timelines). Mastodon keeps "
            "a status's visibility when it is edited."
        ),
    )
    language = models.CharField(
        max_length=2,
        blank=True,
        help_text="The statuses' language, as a two-letter ISO 639-1 code (en, de, ja); empty: the account's own.",
    )
    # The instance's limits (GET /api/v2/instance), read when connecting and again when stale.
    max_characters = models.PositiveIntegerField(default=500, editable=False)
    characters_reserved_per_url = models.PositiveIntegerField(default=23, editable=False)
    max_media_attachments = models.PositiveIntegerField(default=4, editable=False)
    limits_read_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when the instance refused the token (revoked, the account gone): no job is tried until
    # someone reconnects.
    needs_reconnect_since = models.DateTimeField(null=True, blank=True, editable=False)
    reconnect_reason = models.TextField(blank=True, editable=False)
    connected_by = models.CharField(max_length=300, blank=True, editable=False)
    connected_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Mastodon connection"

    def __str__(self) -> str:
        return f"@{self.acct}"

    @property
    def base_url(self) -> str:
        return self.app.base_url

    @property
    def needs_reconnect(self) -> bool:
        return self.needs_reconnect_since is not None

    def access_token(self) -> str:
        return crypto.decrypt(self.access_token_encrypted)


class SentStatus(models.Model):
    """A create request sent for a job, written before it is sent: its Idempotency-Key (the instance
    answers a repeat with the status the first made) and the text's hash, so a later attempt that
    finds no status id (the answer was lost) looks the account's recent statuses up before it sends."""

    job_id = models.BigIntegerField(unique=True)
    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="+")
    # The account it was sent as: "<instance> <account id>".
    owner = models.CharField(max_length=400)
    idempotency_key = models.CharField(max_length=64)
    text_sha256 = models.CharField(max_length=64)
    sent_at = models.DateTimeField(default=timezone.now)
    status_id = models.CharField(max_length=100, blank=True)

    class Meta:
        verbose_name = "sent Mastodon status"
        verbose_name_plural = "sent Mastodon statuses"

    def __str__(self) -> str:
        return self.status_id or f"job {self.job_id} (answer not known)"


class SentMedia(models.Model):
    """An uploaded image the instance has (POST /api/v2/media), for one channel and account, written
    as soon as the upload succeeded: a retried job names it again instead of uploading it again. A
    medium attached to a status belongs to that status on Mastodon: another status uploads it anew."""

    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="+")
    owner = models.CharField(max_length=400)
    medium_id = models.BigIntegerField()
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    media_id = models.CharField(max_length=100)
    # The instance has processed it (a status may name it).
    processed = models.BooleanField(default=False)
    # The status it is attached to, once one is made with it ("": none yet).
    status_id = models.CharField(max_length=100, blank=True)
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "image sent to Mastodon"
        verbose_name_plural = "images sent to Mastodon"
        indexes = [models.Index(fields=["channel", "owner", "medium_id"], name="mastodon_media_lookup")]

    def __str__(self) -> str:
        return self.media_id
