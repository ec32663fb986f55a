"""Reads of a newsletter channel's subscribers that more than one caller shares (the API, the
Settings area)."""

from apps.channels.models import Channel
from apps.channels.selectors import channel_get
from apps.core.errors import NotFound
from apps.publishing.newsletter.models import Subscriber, SubscriberQuerySet, normalize_email
from apps.publishing.newsletter.services import check_newsletter

SUBSCRIBER_NOT_FOUND = "Subscriber not found."


def newsletter_get(*, account_id: int, channel_id: int) -> Channel:
    """The account's newsletter channel, or NotFound: another account's channel, and a channel
    that is not a newsletter (it has no subscribers), are not found, as an unknown id is."""
    channel = channel_get(account_id=account_id, channel_id=channel_id)
    check_newsletter(channel)
    return channel


def filter_subscribers(
    subscribers: SubscriberQuerySet, *, status: str | None = None, email: str | None = None
) -> SubscriberQuerySet:
    """The list's filters; an empty value is no filter. `email` is one exact address, compared as
    stored (so in any case, with or without surrounding spaces)."""
    if status:
        subscribers = subscribers.filter(status=status)
    if email:
        subscribers = subscribers.filter(email=normalize_email(email))
    return subscribers


def subscriber_get(*, channel: Channel, subscriber_id: int) -> Subscriber:
    """The channel's subscriber with this id, or NotFound (another channel's is not found too)."""
    subscriber = Subscriber.objects.filter(channel=channel, pk=subscriber_id).first()
    if subscriber is None:
        raise NotFound(SUBSCRIBER_NOT_FOUND)
    # The webhook bodies and the channel's own checks read it: no second query for it.
    subscriber.channel = channel
    return subscriber
