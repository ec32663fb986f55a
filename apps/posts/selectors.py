"""Reads of posts that more than one caller shares: the list filters, and posts as plain rows for
the read endpoints and the webhook payloads, for one post or a whole batch at a fixed number of
queries.

The rows are read as tuples with exactly the columns their representation renders (the caller
names them), not as model instances with Django's per-post prefetch machinery: building instances
and prefetching cost more than everything else a request or a content-plan batch does per post.
"""

from collections import defaultdict, namedtuple
from collections.abc import Iterable
from functools import cache

from django.db.models import QuerySet

from apps.channels.models import Channel
from apps.core.prepared import PreparedLookup
from apps.posts.models import Media, Post, PostQuerySet, Tag

# The nested forms of a post, in the order they follow its own columns in a row.
NESTED = ("channel", "tags", "media")


@cache
def row_type(fields: tuple[str, ...]) -> type:
    """A plain row with these attributes, in this order."""
    return namedtuple("Row", fields)


_channel_version_by_post = PreparedLookup(
    Post,
    "id",
    (1, 2),
    lambda pk: (
        Post.objects.select_related("channel")
        .only("channel__account_id", "channel__version")
        .filter(pk=pk)
        .order_by()[:1]
    ),
)


def post_channel_version(post_id: int) -> tuple[int, int] | None:
    """The (account id, version) of the post's channel, or None when there is no such post."""
    post = _channel_version_by_post.first(post_id)
    return None if post is None else (post.channel.account_id, post.channel.version)


def filter_posts(
    posts: PostQuerySet, *, publication_status: list[str] | None = None, tag: str | None = None, updated_since=None
) -> PostQuerySet:
    """The posts list's filters (an extension of the spec); an empty value is no filter."""
    if publication_status:
        posts = posts.filter(publication_status__in=publication_status)
    if tag:
        posts = posts.filter(tags__name=tag)
    if updated_since:
        posts = posts.filter(updated_at__gte=updated_since)
    return posts


def rows_with_channel(columns: tuple[str, ...], values: Iterable[tuple], channel: Channel) -> list:
    """Rows of posts of `channel` whose one nested form is the channel: `values` are tuples of
    the post's own `columns` (a values_list of them)."""
    make = row_type((*columns, "channel"))._make
    return [make((*row, channel)) for row in values]


def _rows_by(queryset: QuerySet, key: str, columns: tuple[str, ...]) -> dict[int, list]:
    """The queryset's rows with `columns`, grouped by `key`, in the queryset's order."""
    make = row_type(columns)._make
    grouped = defaultdict(list)
    for key_value, *values in queryset.values_list(key, *columns):
        grouped[key_value].append(make(values))
    return grouped


def post_rows(
    posts: QuerySet,
    columns: tuple[str, ...],
    *,
    tag_columns: tuple[str, ...],
    media_columns: tuple[str, ...],
    channels: dict | None = None,
) -> list:
    """The posts of the queryset as rows with their own `columns` (which include `id`), then their
    channel, tags and media, in id order: four queries whatever their number, three when
    `channels` (id -> channel in the list form) already holds their channels, one when there is
    no post.

    Channels that `channels` lacks are read with their account and added to it, so a caller
    rendering many batches reads each channel once.
    """
    values = list(posts.order_by("id").values_list("channel_id", *columns))
    if not values:
        return []
    channels = {} if channels is None else channels
    missing = {channel_id for channel_id, *_ in values} - channels.keys()
    if missing:
        channels.update(Channel.objects.listed().select_related("account").in_bulk(missing))
    id_position = 1 + columns.index("id")
    ids = [row[id_position] for row in values]
    # In the orders the single-post form uses: tags by name, media by position.
    tags = _rows_by(Tag.objects.filter(posts__in=ids).order_by("name", "id"), "posts__id", tag_columns)
    media = _rows_by(Media.objects.filter(post__in=ids).order_by("position", "id"), "post_id", media_columns)
    make = row_type((*columns, *NESTED))._make
    return [
        make((*fields, channels[channel_id], tags.get(pk, []), media.get(pk, [])))
        for (channel_id, *fields), pk in zip(values, ids, strict=True)
    ]
