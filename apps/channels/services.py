from apps.api.exceptions import NotFound
from apps.channels.models import Channel, ChannelQuerySet

CHANNEL_NOT_FOUND = "Resource not found."


def channel_get(*, account_id: int, channel_id: int, queryset: ChannelQuerySet | None = None) -> Channel:
    """The account's channel, or 404 `not_found`. Another account's channel is "not found" too,
    so a key never learns that it exists."""
    channels = Channel.objects.all() if queryset is None else queryset
    channel = channels.of_account(account_id).filter(pk=channel_id).first()
    if channel is None:
        raise NotFound(CHANNEL_NOT_FOUND)
    return channel
