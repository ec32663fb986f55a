"""Posts as plain rows in the API's field forms: the read endpoints' responses and the `data.post`
of webhook deliveries, for one post or a whole batch at a fixed number of queries.

The rows are read as tuples with exactly the columns the serializers render (their declarations
say which), not as model instances with Django's per-post prefetch machinery: building instances
and prefetching cost more than everything else a request or a content-plan batch does per post.
"""

from collections import defaultdict, namedtuple
from collections.abc import Iterable
from functools import cache

from django.db.models import QuerySet
from rest_framework.serializers import BaseSerializer

from apps.channels.models import Channel
from apps.posts.models import Media, Post, Tag

NESTED = ("channel", "tags", "media")


@cache
def own_columns(serializer_class: type) -> tuple[str, ...]:
    """The post's own columns the serializer renders (its nested forms come from other tables)."""
    return tuple(
        name
        for name, field in serializer_class._declared_fields.items()
        if not isinstance(field, BaseSerializer) and name not in NESTED
    )


@cache
def _row_type(serializer_class: type) -> type:
    """A plain row with the attributes a (ResponseSerializer) class renders: its own columns
    first, in own_columns' order, then the nested forms it has, in NESTED's order."""
    nested = [name for name in NESTED if name in serializer_class._declared_fields]
    return namedtuple(f"{serializer_class.__name__}Row", [*own_columns(serializer_class), *nested])


def rows_with_channel(serializer_class: type, values: Iterable[tuple], channel: Channel) -> list:
    """Rows for a serializer whose one nested form is the channel: `values` are tuples of its
    own columns (a values_list of own_columns), all of posts of `channel`."""
    make = _row_type(serializer_class)._make
    return [make((*row, channel)) for row in values]


def _rows_by(queryset: QuerySet, key: str, serializer_class: type) -> dict[int, list]:
    """The queryset's rows as the serializer reads them, grouped by `key`, in the queryset's order."""
    make = _row_type(serializer_class)._make
    grouped = defaultdict(list)
    for key_value, *values in queryset.values_list(key, *own_columns(serializer_class)):
        grouped[key_value].append(make(values))
    return grouped


def post_rows(posts: QuerySet, serializer_class: type, channels: dict | None = None) -> list:
    """The posts of the queryset as rows for `serializer_class` (a form with channel, tags and
    media), in id order: four queries whatever their number, three when `channels` (id ->
    channel in the list form) already holds their channels, one when there is no post.

    Channels that `channels` lacks are read with their account and added to it, so a caller
    rendering many batches reads each channel once.
    """
    from apps.posts.api import MediaSerializer, TagSerializer

    own = own_columns(serializer_class)
    values = list(posts.order_by("id").values_list("channel_id", *own))
    if not values:
        return []
    channels = {} if channels is None else channels
    missing = {channel_id for channel_id, *_ in values} - channels.keys()
    if missing:
        channels.update(Channel.objects.with_posts_count().select_related("account").in_bulk(missing))
    id_position = 1 + own.index("id")
    ids = [row[id_position] for row in values]
    # In the orders the single-post form uses: tags by name, media by position.
    tags = _rows_by(Tag.objects.filter(posts__in=ids).order_by("name", "id"), "posts__id", TagSerializer)
    media = _rows_by(Media.objects.filter(post__in=ids).order_by("position", "id"), "post_id", MediaSerializer)
    make = _row_type(serializer_class)._make
    return [
        make((*fields, channels[channel_id], tags.get(pk, []), media.get(pk, [])))
        for (channel_id, *fields), pk in zip(values, ids, strict=True)
    ]


def posts_webhook_data(post_ids: Iterable[int], channels: dict | None = None) -> list[tuple[Channel, int, dict]]:
    """(channel with its account, post id, `data.post`) for each post, in id order.

    `channels` (id -> channel, with its account and posts_count), when given, is used and filled
    in: a caller rendering many batches reads each channel once.
    """
    from apps.posts.api import PostContentSerializer

    rows = post_rows(Post.objects.filter(pk__in=list(post_ids)), PostContentSerializer, channels)
    # One serializer for the batch: each channel is rendered once, not once per post.
    data = PostContentSerializer(rows, many=True).data
    return [(row.channel, row.id, item) for row, item in zip(rows, data, strict=True)]


def post_webhook_data(post: Post) -> dict:
    [(_, _, data)] = posts_webhook_data([post.pk])
    return data
