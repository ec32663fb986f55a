"""Reads of channels that more than one caller shares."""

from apps.channels.models import Channel
from apps.core.coherence import Entries, Stored
from apps.core.errors import NotFound
from apps.core.prepared import PreparedLookup

CHANNEL_NOT_FOUND = "Resource not found."

# Every read of a channel's posts starts with this lookup. The ORM spent several times longer
# compiling the query than the database spent running it; compiled once per process instead. The
# account is checked on the row, so the one parameter is the channel's id.
_listed_by_id = PreparedLookup(Channel, "id", (1, 2), lambda pk: Channel.objects.listed().filter(pk=pk).order_by()[:1])

# The first read of a cached representation (apps.api.representations): no count, no team.
_version_by_id = PreparedLookup(
    Channel, "id", (1, 2), lambda pk: Channel.objects.only("account_id", "version").filter(pk=pk).order_by()[:1]
)


def _version_from_database(channel_id: int) -> tuple[int, int] | None:
    channel = _version_by_id.first(channel_id)
    return None if channel is None else (channel.account_id, channel.version)


# Versions in the shared cache: invalidated by channels 0007's triggers (`c:<id>`), which fire
# wherever channels 0002 renews a version.
_versions = Entries("c", _version_from_database)


def channel_version(channel_id: int) -> tuple[int, int] | None:
    """The channel's (account id, version), or None when there is no such channel."""
    return _versions.get(channel_id)


def channel_version_entry(channel_id: int, version: tuple[int, int]) -> Stored | None:
    """The channel's version entry in the shared cache when it holds `version` (account id,
    version); None when it is gone, being filled, or holds another."""
    stored = _versions.stored(channel_id)
    return stored if stored is not None and stored.value == version else None


def channel_get(*, account_id: int, channel_id: int, listed: bool = False) -> Channel:
    """The account's channel, or 404 `not_found`. Another account's channel is "not found" too,
    so a key never learns that it exists. `listed`: in the list form, with its team."""
    channel = _listed_by_id.first(channel_id) if listed else Channel.objects.filter(pk=channel_id).first()
    if channel is not None and channel.account_id != account_id:
        channel = None
    if channel is None:
        raise NotFound(CHANNEL_NOT_FOUND)
    return channel
