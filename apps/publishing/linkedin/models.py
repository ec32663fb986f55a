from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.core import crypto
from apps.core.fields import JSONField

# The platform value of this kind's channels (Channel.platform).
PLATFORM = "linkedin"
PERSON_URN_PREFIX = "urn:li:person:"
ORGANIZATION_URN_PREFIX = "urn:li:organization:"


class LinkedInConnection(models.Model):
    """A `linkedin` channel's access to LinkedIn: the member who granted it, whom its posts are
    published as (the member, or a company page the member administers), and the tokens, stored
    encrypted (apps/core/crypto.py) and never shown again."""

    channel = models.OneToOneField("channels.Channel", on_delete=models.CASCADE, related_name="linkedin_connection")
    member_urn = models.CharField("member", max_length=200, help_text="urn:li:person:… of who granted access.")
    member_name = models.CharField(max_length=300, blank=True)
    organization_urn = models.CharField(
        "post as page",
        max_length=200,
        blank=True,
        help_text="Empty: posts appear as the member's. urn:li:organization:…: as that company page.",
    )
    # The pages the member administers, as [{"urn": ..., "name": ...}] (read when connecting).
    organizations = JSONField(default=list, blank=True, editable=False)
    access_token_encrypted = models.TextField(editable=False)
    refresh_token_encrypted = models.TextField(blank=True, editable=False)
    expires_at = models.DateTimeField("access expires", null=True, blank=True)
    refresh_expires_at = models.DateTimeField(null=True, blank=True)
    scopes = models.CharField(max_length=500, blank=True)
    # Set when LinkedIn refused the token (revoked, expired without a refresh token): no job is
    # tried until someone reconnects.
    needs_reconnect_since = models.DateTimeField(null=True, blank=True)
    reconnect_reason = models.TextField(blank=True)
    connected_by = models.CharField(max_length=300, blank=True, help_text="Who connected it, and how.")
    connected_at = models.DateTimeField(default=timezone.now)
    # The expiry the admins were last e-mailed about (one e-mail per expiry, not one per day).
    warned_for_expiry = models.DateTimeField(null=True, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "LinkedIn connection"

    def __str__(self) -> str:
        return f"{self.member_name or self.member_urn} → {self.author}"

    @property
    def author(self) -> str:
        """Whom posts are published as (the Posts API's `author`)."""
        return self.organization_urn or self.member_urn

    @property
    def author_name(self) -> str:
        if not self.organization_urn:
            return self.member_name or self.member_urn
        names = {page.get("urn"): page.get("name") for page in self.organizations if isinstance(page, dict)}
        return names.get(self.organization_urn) or self.organization_urn

    @property
    def needs_reconnect(self) -> bool:
        return self.needs_reconnect_since is not None

    def access_token(self) -> str:
        return crypto.decrypt(self.access_token_encrypted)

    def refresh_token(self) -> str:
        return crypto.decrypt(self.refresh_token_encrypted) if self.refresh_token_encrypted else ""

    def can_refresh(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return bool(self.refresh_token_encrypted) and (self.refresh_expires_at is None or self.refresh_expires_at > now)

    def expires_within(self, days: int | None = None, now: datetime | None = None) -> bool:
        if self.expires_at is None:
            return False
        days = settings.LINKEDIN_EXPIRY_WARNING_DAYS if days is None else days
        return self.expires_at - (now or timezone.now()) < timedelta(days=days)


class SentPost(models.Model):
    """A create request sent to LinkedIn for a job, written before it is sent: a later attempt of
    the job that finds it (the answer was lost) looks the author's recent posts up for this text
    before it sends again, so a post is never made twice."""

    job_id = models.BigIntegerField(unique=True)
    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="+")
    author = models.CharField(max_length=200)
    commentary_sha256 = models.CharField(max_length=64)
    sent_at = models.DateTimeField(default=timezone.now)
    # The post's URN once LinkedIn's answer (or the look-up) told it.
    urn = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "sent LinkedIn post"

    def __str__(self) -> str:
        return self.urn or f"job {self.job_id} (answer not known)"


class SentImage(models.Model):
    """An uploaded image whose bytes LinkedIn has (Images API), for one channel and owner: written as
    soon as the upload succeeded, so a later attempt of the job, a new post of the same image or a
    post published again names it by its URN instead of uploading it again."""

    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="+")
    # Whom the image belongs to on LinkedIn: a post may show only its own author's images.
    owner = models.CharField(max_length=200)
    # The uploaded medium (apps/media), and its content-addressed name: other bytes, another name.
    medium_id = models.BigIntegerField()
    name = models.CharField(max_length=200)
    urn = models.CharField(max_length=200)
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "image sent to LinkedIn"
        constraints = [
            models.UniqueConstraint(fields=["channel", "owner", "medium_id"], name="linkedin_one_image_per_medium")
        ]

    def __str__(self) -> str:
        return self.urn
