"""A newsletter channel's people and mailings: its subscribers, the account's suppression list,
and each edition's send, one delivery record per (edition, subscriber)."""

import hashlib
import secrets

from django.db import models
from django.utils import timezone

from apps.core.crypto import hash_secret


def normalize_email(email: str) -> str:
    """An address as it is compared and stored: no surrounding spaces, the domain lower-case (the
    local part is the mail server's to interpret, but every provider people use ignores its case,
    and two subscribers differing only by case would be mailed twice)."""
    return email.strip().lower()


def email_hash(email: str) -> str:
    """The suppression list's key: it outlives the subscriber, so it keeps no address."""
    return hashlib.sha256(normalize_email(email).encode()).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(24)


# Longer tokens are nobody's (new_token() makes 32 characters); a URL's token is not hashed past it.
# The platform value of this kind's channels (Channel.platform).
PLATFORM = "newsletter"
CONFIRM_TOKEN_MAX_LENGTH = 64


class SubscriberStatus(models.TextChoices):
    UNCONFIRMED = "unconfirmed", "Unconfirmed"
    CONFIRMED = "confirmed", "Confirmed"
    UNSUBSCRIBED = "unsubscribed", "Unsubscribed"


class Newsletter(models.Model):
    """A newsletter channel's sending settings (made with defaults when first needed)."""

    channel = models.OneToOneField("channels.Channel", on_delete=models.CASCADE, related_name="newsletter")
    sender_name = models.CharField(
        max_length=200, blank=True, help_text="The name editions come from. Empty: the channel's title."
    )
    reply_to = models.EmailField(blank=True, help_text="Where readers' replies go. Empty: no Reply-To header.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.sender_name or self.channel.title


class SubscriberQuerySet(models.QuerySet):
    def of_account(self, account_id: int) -> "SubscriberQuerySet":
        return self.filter(channel__account_id=account_id)

    def with_token(self, token: str) -> "SubscriberQuerySet":
        """The subscriber an unsubscribe link's token names (none for a token no subscriber could have)."""
        if not token or len(token) > Subscriber._meta.get_field("token").max_length:
            return self.none()
        return self.filter(token=token)

    def with_confirm_token(self, token: str) -> "SubscriberQuerySet":
        """The subscriber a confirmation link's token was last issued to (expired or not)."""
        if not token or len(token) > CONFIRM_TOKEN_MAX_LENGTH:
            return self.none()
        return self.filter(confirm_token_hash=hash_secret(token))


class Subscriber(models.Model):
    """A person on a newsletter channel's list. Only `confirmed` ones are mailed (double opt-in)."""

    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="subscribers")
    email = models.EmailField(max_length=254)
    name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=SubscriberStatus.choices, default=SubscriberStatus.UNCONFIRMED)
    # Opaque, per person, never changed: every edition's unsubscribe link carries it, so the links of
    # editions sent long ago keep working. It only ever unsubscribes: a forwarded edition holds it.
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    # The confirmation e-mail's link has a token of its own (its SHA-256 here), issued with each such
    # e-mail and good until confirm_expires_at. An unsubscribe clears it: after one, no link the
    # person has subscribes them again, only a new subscription with a new e-mail.
    confirm_token_hash = models.CharField(max_length=64, null=True, blank=True, unique=True, editable=False)
    confirm_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    # When the last confirmation e-mail went out (the public form sends at most one per interval).
    confirmation_sent_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = SubscriberQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["channel", "email"], name="subscriber_unique_email")]
        indexes = [
            models.Index(fields=["channel", "status", "id"], name="subscriber_channel_status"),
            models.Index(fields=["channel", "-id"], name="subscriber_channel_newest"),
            # A provider's bounce for an address no delivery names: its subscribers in every channel.
            models.Index(fields=["email"], name="subscriber_email"),
        ]

    def __str__(self) -> str:
        return self.email

    def save(self, *args, **kwargs) -> None:
        self.email = normalize_email(self.email)
        super().save(*args, **kwargs)


class SuppressionReason(models.TextChoices):
    UNSUBSCRIBED = "unsubscribed", "Unsubscribed"
    BOUNCE = "bounce", "Hard bounce"
    COMPLAINT = "complaint", "Complaint"


class Suppression(models.Model):
    """An address the account never mails: an unsubscribe (that channel's editions), a hard bounce
    or a spam complaint (every newsletter of the account). Keyed by a hash of the address, so it
    outlives the subscriber it was made for."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="suppressions")
    # The newsletter an unsubscribe is from; null: all of the account's newsletters.
    channel = models.ForeignKey(
        "channels.Channel", on_delete=models.CASCADE, null=True, blank=True, related_name="suppressions"
    )
    email_hash = models.CharField(max_length=64, editable=False)
    reason = models.CharField(max_length=16, choices=SuppressionReason.choices)
    detail = models.TextField(blank=True, help_text="What the mail server or provider said, or who decided.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "email_hash"], condition=models.Q(channel=None), name="suppression_unique_account"
            ),
            models.UniqueConstraint(
                fields=["account", "channel", "email_hash"],
                condition=~models.Q(channel=None),
                name="suppression_unique_channel",
            ),
        ]
        indexes = [models.Index(fields=["account", "email_hash"], name="suppression_lookup")]

    def __str__(self) -> str:
        return f"{self.get_reason_display()} ({self.email_hash[:12]}…)"


class TrackingEvent(models.Model):
    """A provider's bounce or complaint event already acted on: each counts once, however often
    the provider delivers it."""

    esp_name = models.CharField(max_length=50)
    event_id = models.CharField(max_length=200)
    event_type = models.CharField(max_length=30)
    received_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["esp_name", "event_id"], name="tracking_event_once")]

    def __str__(self) -> str:
        return f"{self.esp_name} {self.event_type} {self.event_id}"


class Edition(models.Model):
    """A post of a newsletter channel, as mailed: frozen when its send starts (subject, both parts),
    so every recipient gets the same text; later edits change its archive page only. One per post:
    a sent edition is never sent again."""

    post_id = models.BigIntegerField(unique=True)
    channel = models.ForeignKey("channels.Channel", on_delete=models.CASCADE, related_name="editions")
    job_id = models.BigIntegerField()
    subject = models.CharField(max_length=300)
    html = models.TextField()
    text = models.TextField()
    archive_url = models.URLField(max_length=2000, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The recipients' counts, kept by the sender as it settles records (and recounted from the
    # records after a crash), so reading them costs one row whatever the audience.
    total = models.PositiveIntegerField(default=0)
    sent = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    suppressed = models.PositiveIntegerField(default=0)
    uncertain = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return self.subject

    @property
    def pending(self) -> int:
        return max(self.total - self.sent - self.failed - self.suppressed - self.uncertain, 0)

    def recipients(self) -> dict[str, int]:
        """The publication's `recipients` counts."""
        return {
            "total": self.total,
            "pending": self.pending,
            "sent": self.sent,
            "failed": self.failed,
            "suppressed": self.suppressed,
            "uncertain": self.uncertain,
        }


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    # Taken by a sender's batch; sent one at a time in id order (see sending.py).
    CLAIMED = "claimed", "Claimed"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    SUPPRESSED = "suppressed", "Suppressed"
    UNCERTAIN = "uncertain", "Uncertain"


SETTLED = (DeliveryState.SENT, DeliveryState.FAILED, DeliveryState.SUPPRESSED, DeliveryState.UNCERTAIN)


class Delivery(models.Model):
    """One edition for one subscriber. Unique per pair: nobody is mailed an edition twice. Holds no
    address: it is read from the subscriber when sent (an erased subscriber is never mailed)."""

    # Every index is written again by each message's UPDATE (no column of it is left unindexed): the
    # edition's own index would repeat the unique constraint's leading column.
    edition = models.ForeignKey(Edition, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    subscriber = models.ForeignKey(Subscriber, on_delete=models.SET_NULL, null=True, related_name="deliveries")
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    # The sender's batch that holds a `claimed` record.
    batch = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    message_id = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["edition", "subscriber"], name="delivery_once_per_subscriber"),
        ]
        indexes = [
            models.Index(
                fields=["edition", "id"],
                name="delivery_unsettled",
                condition=models.Q(state__in=["pending", "claimed"]),
            ),
            # The Settings area's lists of an edition's failed and uncertain addresses.
            models.Index(
                fields=["edition", "state", "id"],
                name="delivery_edition_trouble",
                condition=models.Q(state__in=["failed", "uncertain"]),
            ),
            # A provider's bounce or complaint names the message it is about.
            models.Index(fields=["message_id"], name="delivery_message_id", condition=~models.Q(message_id="")),
        ]

    def __str__(self) -> str:
        return f"{self.edition} → {self.subscriber or 'erased'}"
