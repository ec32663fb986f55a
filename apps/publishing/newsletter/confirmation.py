"""The confirmation e-mail's link: it confirms a subscription waiting for it, until it expires
(NEWSLETTER_CONFIRM_TTL after that e-mail). Its token is its own, never an edition's (whose links
only unsubscribe), and an unsubscribe clears it: after one, no link the person already has
subscribes them again, only a new subscription on the form with its own e-mail. Pressing it again
after it confirmed changes nothing."""

from dataclasses import dataclass
from enum import StrEnum

from django.db import transaction
from django.utils import timezone

from apps.publishing.newsletter.events import SubscriberEvent
from apps.publishing.newsletter.models import (
    Subscriber,
    SubscriberStatus,
    Suppression,
    SuppressionReason,
    email_hash,
)
from apps.publishing.newsletter.serializers import subscriber_webhook_data
from apps.publishing.newsletter.services import suppression_of
from apps.webhooks.services import event_emit


class LinkState(StrEnum):
    INVALID = "invalid"  # nobody's token: mistyped, replaced by a newer e-mail's, or cleared by an unsubscribe
    EXPIRED = "expired"
    ASK = "ask"  # opened: the page asks to press "Confirm"
    ALREADY = "already"  # mailed already: the link is harmless
    DONE = "done"
    REFUSED = "refused"  # a bounce or a complaint: confirming does not lift them


@dataclass(frozen=True)
class ConfirmLink:
    state: LinkState
    subscriber: Subscriber | None = None


def _state_of(subscriber: Subscriber) -> LinkState | None:
    """What pressing the link would meet; None: it confirms."""
    reason = suppression_of(subscriber.channel, subscriber.email)
    if reason in (SuppressionReason.BOUNCE, SuppressionReason.COMPLAINT):
        return LinkState.REFUSED
    if subscriber.status == SubscriberStatus.CONFIRMED and reason is None:
        return LinkState.ALREADY
    if subscriber.confirm_expires_at is None or subscriber.confirm_expires_at <= timezone.now():
        return LinkState.EXPIRED
    return None


def confirm_link_of(*, token: str) -> ConfirmLink:
    """What the link is, for its page (opening it changes nothing: mail scanners open links)."""
    subscriber = Subscriber.objects.with_confirm_token(token).select_related("channel").first()
    if subscriber is None:
        return ConfirmLink(LinkState.INVALID)
    return ConfirmLink(_state_of(subscriber) or LinkState.ASK, subscriber)


@transaction.atomic
def subscriber_confirm(*, token: str) -> ConfirmLink:
    """The person pressed "Confirm": they are mailed from now on, and an unsubscribe of theirs (which
    they subscribed again after, or the link would be cleared) is lifted."""
    subscriber = (
        Subscriber.objects.with_confirm_token(token).select_for_update().select_related("channel__account").first()
    )
    if subscriber is None:
        return ConfirmLink(LinkState.INVALID)
    state = _state_of(subscriber)
    if state is not None:
        return ConfirmLink(state, subscriber)
    channel = subscriber.channel
    Suppression.objects.filter(
        account_id=channel.account_id, channel=channel, email_hash=email_hash(subscriber.email)
    ).delete()
    subscriber.status, subscriber.confirmed_at, subscriber.unsubscribed_at = (
        SubscriberStatus.CONFIRMED,
        timezone.now(),
        None,
    )
    subscriber.save(update_fields=["status", "confirmed_at", "unsubscribed_at"])
    event_emit(account=channel.account, kind=SubscriberEvent.CONFIRMED, data=subscriber_webhook_data(subscriber))
    return ConfirmLink(LinkState.DONE, subscriber)
