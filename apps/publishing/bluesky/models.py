from django.db import models
from django.utils import timezone

from apps.core import crypto
from apps.core.fields import JSONField

# The platform value of this kind's channels (Channel.platform).
PLATFORM = "bluesky"
POST_COLLECTION = "app.bsky.feed.post"


class BlueskyConnection(models.Model):
    """A `bluesky` channel's account: its handle and DID, its server (PDS), and the app password and
    the session's tokens, stored encrypted (apps/core/crypto.py) and never shown again. The app
    password is kept because Bluesky's refresh token ends (about two months): a new session is made
    from it then, so only a revoked app password asks a person to reconnect."""

    channel = models.OneToOneField("channels.Channel", on_delete=models.CASCADE, related_name="bluesky_connection")
    handle = models.CharField(max_length=253)
    did = models.CharField("DID", max_length=200)
    pds_url = models.CharField("server", max_length=500, help_text="The account's server (PDS).")
    app_password_encrypted = models.TextField(editable=False)
    access_jwt_encrypted = models.TextField(blank=True, editable=False)
    refresh_jwt_encrypted = models.TextField(blank=True, editable=False)
    # Set when Bluesky refused the app password: no job is tried until someone reconnects.
    needs_reconnect_since = models.DateTimeField(null=True, blank=True)
    reconnect_reason = models.TextField(blank=True)
    connected_by = models.CharField(max_length=300, blank=True, help_text="Who connected it, and how.")
    connected_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Bluesky connection"

    def __str__(self) -> str:
        return f"@{self.handle}"

    @property
    def needs_reconnect(self) -> bool:
        return self.needs_reconnect_since is not None

    def app_password(self) -> str:
        return crypto.decrypt(self.app_password_encrypted)

    def access_jwt(self) -> str:
        return crypto.decrypt(self.access_jwt_encrypted) if self.access_jwt_encrypted else ""

    def refresh_jwt(self) -> str:
        return crypto.decrypt(self.refresh_jwt_encrypted) if self.refresh_jwt_encrypted else ""


class SentRecord(models.Model):
    """A post record a job creates, written (committed) BEFORE the create call with the record key
    chosen there: a later attempt whose answer was lost finds the record at that key (getRecord),
    so it is never made twice. `text_sha256` is the posted text's: an edit replaces the record only
    when the text changed."""

    job_id = models.BigIntegerField(unique=True)
    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="+")
    did = models.CharField(max_length=200)
    rkey = models.CharField(max_length=13)
    text_sha256 = models.CharField(max_length=64)
    sent_at = models.DateTimeField(default=timezone.now)
    # Set once Bluesky's answer (or the look-up) confirmed the record.
    confirmed = models.BooleanField(default=False)

    class Meta:
        verbose_name = "sent Bluesky post"

    def __str__(self) -> str:
        return self.uri

    @property
    def uri(self) -> str:
        return f"at://{self.did}/{POST_COLLECTION}/{self.rkey}"


class SentBlob(models.Model):
    """An image whose bytes the account's server has (uploadBlob), for one channel and account: a
    retried job or another post of the same image names the blob instead of uploading it again."""

    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="+")
    did = models.CharField(max_length=200)
    medium_id = models.BigIntegerField()
    # The medium's content-addressed name: other bytes, another name.
    name = models.CharField(max_length=200)
    blob = JSONField(default=dict)
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "image sent to Bluesky"
        constraints = [
            models.UniqueConstraint(fields=["channel", "did", "medium_id"], name="bluesky_one_blob_per_medium")
        ]

    def __str__(self) -> str:
        return self.name
