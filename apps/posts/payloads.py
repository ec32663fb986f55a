"""`data.post` of webhook deliveries: posts as the database holds them at the time of the event,
in the same field forms as the API, for one post or a whole batch at a fixed number of queries.

The content plan renders thousands of posts per batch, so the rows are read as plain tuples with
exactly the fields the serializers render (their declarations say which), not as model instances
with Django's per-post prefetch machinery: that cost more than everything else it does per post.
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
def _row_type(serializer_class: type, extra: tuple[str, ...] = ()) -> type:
    """A plain row with the attributes a (ResponseSerializer) class renders, and `extra` ones."""
    return namedtuple(f"{serializer_class.__name__}Row", [*serializer_class._declared_fields, *extra])


def _rows_by(queryset: QuerySet, key: str, serializer_class: type) -> dict[int, list]:
    """The queryset's rows as the serializer reads them, grouped by `key`, in the queryset's order."""
    row = _row_type(serializer_class)
    grouped = defaultdict(list)
    for key_value, *values in queryset.values_list(key, *row._fields):
        grouped[key_value].append(row._make(values))
    return grouped


def _post_fields(serializer_class: type) -> list[str]:
    """The post's own columns the serializer renders (its nested forms come from other tables)."""
    return [
        name
        for name, field in serializer_class._declared_fields.items()
        if not isinstance(field, BaseSerializer) and name not in NESTED
    ]


def posts_webhook_data(post_ids: Iterable[int], channels: dict | None = None) -> list[tuple[Channel, int, dict]]:
    """(channel with its account, post id, `data.post`) for each post, in id order.

    `channels` (id -> channel, with its account and posts_count), when given, is used and filled
    in: a caller rendering many batches reads each channel once.
    """
    from apps.posts.api import MediaSerializer, PostContentSerializer, TagSerializer

    ids = list(post_ids)
    own = _post_fields(PostContentSerializer)
    row = _row_type(PostContentSerializer)
    posts = list(Post.objects.filter(pk__in=ids).order_by("id").values_list("channel_id", *own))
    channels = {} if channels is None else channels
    missing = {p[0] for p in posts} - channels.keys()
    if missing:
        channels.update(Channel.objects.with_posts_count().select_related("account").in_bulk(missing))
    # In the orders the single-post form uses: tags by name, media by position.
    tags = _rows_by(Tag.objects.filter(posts__in=ids).order_by("name", "id"), "posts__id", TagSerializer)
    media = _rows_by(Media.objects.filter(post__in=ids).order_by("position", "id"), "post_id", MediaSerializer)
    snapshots = []
    for channel_id, *values in posts:
        fields = dict(zip(own, values, strict=True))
        pk = fields["id"]
        fields.update(channel=channels[channel_id], tags=tags.get(pk, []), media=media.get(pk, []))
        snapshots.append(row(**fields))
    # One serializer for the batch: each channel is rendered once, not once per post.
    data = PostContentSerializer(snapshots, many=True).data
    return [(snapshot.channel, snapshot.id, item) for snapshot, item in zip(snapshots, data, strict=True)]


def post_webhook_data(post: Post) -> dict:
    [(_, _, data)] = posts_webhook_data([post.pk])
    return data
