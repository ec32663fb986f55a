"""Bounces, complaints and unsubscribes reported by an e-mail provider through django-anymail's
tracking webhooks (/newsletter/anymail/<esp>/tracking/, docs/newsletter.md): each puts its address
on the suppression list, once however often the provider delivers it.

The account is found through the delivery record the reported message belongs to (its Message-ID,
or the provider's own id, is what the sender recorded). A message the service sent outside an
edition (a confirmation, a "Send test") has none: the address is then suppressed in every account
that has it as a subscriber, as the provider itself will refuse to mail it again for all of them.
"""

import hashlib
import logging
from collections.abc import Callable

from anymail.signals import AnymailTrackingEvent, EventType, RejectReason, tracking
from django.db import IntegrityError, transaction
from django.db.models import F

from apps.publishing.newsletter import services
from apps.publishing.newsletter.models import (
    Delivery,
    DeliveryState,
    Edition,
    Subscriber,
    SubscriberStatus,
    SuppressionReason,
    TrackingEvent,
    email_hash,
    normalize_email,
)

logger = logging.getLogger(__name__)

# A provider "rejects" a message when its own suppression list already holds the address: the
# same reasons, learnt earlier or from another sender of the provider's account.
REJECTED = {
    RejectReason.BOUNCED: SuppressionReason.BOUNCE,
    RejectReason.INVALID: SuppressionReason.BOUNCE,
    RejectReason.SPAM: SuppressionReason.COMPLAINT,
    RejectReason.UNSUBSCRIBED: SuppressionReason.UNSUBSCRIBED,
}


def _raw(event: AnymailTrackingEvent, *path: str):
    """A field of the provider's own event, or None."""
    value = event.esp_event
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _sparkpost_bounce_class(event: AnymailTrackingEvent) -> str | None:
    """SparkPost wraps the event in {"msys": {"<kind>_event": {...}}}."""
    wrapped = _raw(event, "msys")
    inner = next(iter(wrapped.values()), None) if isinstance(wrapped, dict) else None
    return inner.get("bounce_class") if isinstance(inner, dict) else None


# The providers whose "bounced" also covers failures that are not the address's (anymail passes
# their word on): a full mailbox, a greylisting server, a virus found. How each one's own event
# tells them apart; a reader is not dropped for those.
NOT_HARD: dict[str, Callable[[AnymailTrackingEvent], bool]] = {
    "Amazon SES": lambda event: _raw(event, "bounce", "bounceType") != "Permanent",
    "Brevo": lambda event: _raw(event, "event") == "soft_bounce",
    "SendinBlue": lambda event: _raw(event, "event") == "soft_bounce",
    "MailerSend": lambda event: _raw(event, "data", "type") == "soft_bounced",
    "Mailjet": lambda event: _raw(event, "hard_bounce") is False,
    "Mandrill": lambda event: _raw(event, "event") == "soft_bounce",
    "Postmark": lambda event: _raw(event, "Type") in ("SoftBounce", "VirusNotification"),
    "Resend": lambda event: _raw(event, "data", "bounce", "type") not in (None, "Permanent"),
    "SendGrid": lambda event: _raw(event, "type") == "blocked",
    # Classes 10 (invalid recipient) and 30 (no such mailbox): https://support.sparkpost.com bounce classes.
    "SparkPost": lambda event: _sparkpost_bounce_class(event) not in ("10", "30"),
}


def reason_of(*, esp_name: str, event: AnymailTrackingEvent) -> str | None:
    """What the event means for its address (a SuppressionReason), or None: nothing to do."""
    if event.event_type == EventType.BOUNCED:
        # A block for the sender's reputation or the content says nothing about the address.
        if event.reject_reason in (RejectReason.BLOCKED, RejectReason.SPAM):
            return None
        not_hard = NOT_HARD.get(esp_name)
        return None if not_hard is not None and not_hard(event) else SuppressionReason.BOUNCE
    if event.event_type == EventType.COMPLAINED:
        return SuppressionReason.COMPLAINT
    if event.event_type == EventType.UNSUBSCRIBED:
        return SuppressionReason.UNSUBSCRIBED
    if event.event_type == EventType.REJECTED:
        return REJECTED.get(event.reject_reason)
    return None


def event_key(*, event: AnymailTrackingEvent, email: str) -> str:
    """The event's identity for counting it once. Some providers (Amazon SES) give one id to the
    events of all a message's recipients, so the address is part of it; hashed, as the suppression
    list keeps no address. Without an id: what the event says, and when."""
    if event.event_id:
        identity = f"{event.event_id}\n{email}"
    else:
        when = event.timestamp.isoformat() if event.timestamp else ""
        identity = f"{event.event_type}\n{email}\n{event.message_id or ''}\n{when}"
    return hashlib.sha256(identity.encode()).hexdigest()


def _detail(esp_name: str, event: AnymailTrackingEvent) -> str:
    said = "; ".join(part for part in (event.description, event.mta_response) if part)
    return f"{esp_name} {event.event_type}" + (f": {said}" if said else "")


def _delivery(message_id: str | None) -> Delivery | None:
    """The record of the reported message. Providers write a Message-ID with or without its angle
    brackets, whichever way it was recorded."""
    bare = (message_id or "").strip().strip("<>")
    if not bare:
        return None
    return (
        Delivery.objects.select_related("edition__channel", "subscriber")
        .filter(message_id__in=[bare, f"<{bare}>"])
        .order_by()
        .first()
    )


@transaction.atomic
def event_record(*, esp_name: str, event: AnymailTrackingEvent) -> bool:
    """Act on a provider's tracking event: a hard bounce or a rejection for a bad address suppresses
    it account-wide (and its delivery, if `sent`, becomes `failed`), a complaint too, an unsubscribe
    unsubscribes the person from the newsletter the message came from. False when there was nothing
    to do: another kind of event, no address, or one already counted."""
    reason = reason_of(esp_name=esp_name, event=event)
    if reason is None or not event.recipient:
        return False
    email = normalize_email(event.recipient)
    try:
        with transaction.atomic():
            TrackingEvent.objects.create(
                esp_name=esp_name[:50], event_id=event_key(event=event, email=email), event_type=event.event_type[:30]
            )
    except IntegrityError:  # the provider delivered it again
        return False
    detail = _detail(esp_name, event)
    delivery = _delivery(event.message_id)
    if delivery is not None:
        _apply_to_delivery(delivery, email=email, reason=reason, detail=detail)
    else:
        _apply_to_address(email=email, reason=reason, detail=detail)
    return True


def _apply_to_delivery(delivery: Delivery, *, email: str, reason: str, detail: str) -> None:
    channel = delivery.edition.channel
    logger.info(
        "newsletter tracking: %s for edition=%s account=%s hash=%s",
        reason,
        delivery.edition_id,
        channel.account_id,
        email_hash(email)[:12],
    )
    if reason == SuppressionReason.UNSUBSCRIBED:
        if delivery.subscriber is not None:
            services.subscriber_unsubscribe(token=delivery.subscriber.token)
        else:  # erased since: their address still must not be mailed again by this newsletter
            services.suppress(account_id=channel.account_id, channel=channel, email=email, reason=reason, detail=detail)
        return
    services.suppress(account_id=channel.account_id, email=email, reason=reason, detail=detail)
    if reason == SuppressionReason.BOUNCE:
        failed = Delivery.objects.filter(pk=delivery.pk, state=DeliveryState.SENT).update(
            state=DeliveryState.FAILED, error=detail
        )
        if failed:
            Edition.objects.filter(pk=delivery.edition_id).update(sent=F("sent") - 1, failed=F("failed") + 1)


def _apply_to_address(*, email: str, reason: str, detail: str) -> None:
    subscribers = Subscriber.objects.filter(email=email).select_related("channel")
    if reason == SuppressionReason.UNSUBSCRIBED:
        tokens = list(subscribers.exclude(status=SubscriberStatus.UNSUBSCRIBED).values_list("token", flat=True))
        for token in tokens:
            services.subscriber_unsubscribe(token=token)
        touched = len(tokens)
    else:
        accounts = sorted(set(subscribers.values_list("channel__account_id", flat=True)))
        for account_id in accounts:
            services.suppress(account_id=account_id, email=email, reason=reason, detail=detail)
        touched = len(accounts)
    logger.info(
        "newsletter tracking: %s for a message of no edition, hash=%s, applied %d time(s)",
        reason,
        email_hash(email)[:12],
        touched,
    )


def on_tracking(sender, event: AnymailTrackingEvent, esp_name: str, **kwargs) -> None:
    # An error propagates: the webhook answers 500 and the provider delivers the event again later.
    event_record(esp_name=esp_name, event=event)


def connect() -> None:
    """Hear anymail's tracking signal (called from the app's ready())."""
    tracking.connect(on_tracking, dispatch_uid="newsletter-tracking")
