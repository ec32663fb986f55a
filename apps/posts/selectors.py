"""Reads of posts that more than one caller shares: the list filters, and posts as plain rows for
the read endpoints and the webhook payloads, for one post or a whole batch at a fixed number of
queries.

The rows are read as tuples with exactly the columns their representation renders, not as model
instances with Django's per-post prefetch machinery: building instances and prefetching cost more
than everything else a request or a content-plan batch does per post. Which columns each read form
loads is planned here (LIST_COLUMNS, CONTENT_COLUMNS, DETAIL_COLUMNS); the serializers only render
the rows (tests/posts/test_read_columns.py holds the two to the same fields).
"""

import re
from collections import defaultdict, namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Final, NamedTuple

from django.db.models import Q, QuerySet

from apps.channels.models import Channel
from apps.channels.selectors import channel_version
from apps.core import paging
from apps.core.coherence import Entries, readable
from apps.core.destinations import Image
from apps.core.lookups import AnyOf
from apps.core.paging import Window, skipped
from apps.core.prepared import PreparedLookup
from apps.media.selectors import image_of, media_shown_in, shows_media
from apps.posts import page_anchors
from apps.posts.models import Media, Post, PostQuerySet, PublicationStatus, Tag, shown_at
from apps.publishing.models import JobAction
from apps.publishing.selectors import latest_publications

# The nested forms of a post, in the order they follow its own columns in a row.
NESTED = ("channel", "tags", "media")


class Columns(NamedTuple):
    """What post_rows reads: the post's own columns (`id` among them), and its tags' and media's."""

    own: tuple[str, ...]
    tags: tuple[str, ...]
    media: tuple[str, ...]


# --- The column plan: what each read form of a post loads -------------------------------------

# The list form (the posts list): the post's own columns; its channel is the listed one.
LIST_COLUMNS: Final = ("id", "title", "teaser", "slug", "publication_status", "created_at", "updated_at")
TAG_COLUMNS: Final = ("id", "name")
MEDIA_COLUMNS: Final = ("id", "medium", "kind", "url", "alt_text", "width", "height")
# The full post (webhooks' `data.post`): the list form's columns, the body, the SEO texts and the
# external references, with its channel, tags and media.
CONTENT_COLUMNS: Final = Columns(
    (*LIST_COLUMNS, "body", "published_at", "meta_title", "meta_description", "external_id", "external_url", "story"),
    TAG_COLUMNS,
    MEDIA_COLUMNS,
)
# Columns read through a relation: the story a post belongs to is its link's (apps/stories, above
# this app, links its posts; the name is all this app knows of it), rendered as `{"id": ...}`.
SOURCES: Final = {"story": "story_link__story_id"}
REFERENCES: Final = frozenset({"story"})
# The single-post form (the API's GET, the writes' answers, the change feed): the full post and its
# planned time; post_details adds what it computes for each row (DETAIL_COMPUTED).
DETAIL_COLUMNS: Final = Columns((*CONTENT_COLUMNS.own, "scheduled_at"), TAG_COLUMNS, MEDIA_COLUMNS)
DETAIL_COMPUTED: Final = ("url", "publication")


@cache
def row_type(fields: tuple[str, ...]) -> type:
    """A plain row with these attributes, in this order."""
    return namedtuple("Row", fields)


_channel_of_post = PreparedLookup(
    Post, "id", (1, 2), lambda pk: Post.objects.only("channel_id").filter(pk=pk).order_by()[:1]
)
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


def _channel_id_from_database(post_id: int) -> int | None:
    post = _channel_of_post.first(post_id)
    return None if post is None else post.channel_id


# Each post's channel in the shared cache: invalidated when the post moves (channels 0007,
# `p:<id>`). A deleted post's entry may stay: its channel's version changed, and ids are not reused.
_post_channels = Entries("p", _channel_id_from_database)


def post_channel_version(post_id: int) -> tuple[int, int] | None:
    """The (account id, version) of the post's channel, or None when there is no such post."""
    if not readable():
        # One query for both, where the shared cache cannot be used.
        post = _channel_version_by_post.first(post_id)
        return None if post is None else (post.channel.account_id, post.channel.version)
    channel_id = _post_channels.get(post_id)
    return None if channel_id is None else channel_version(channel_id)


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


def channel_posts_page(*, channel: Channel, filters: dict, window: Window) -> tuple[list, int]:
    """The posts list's page: the window's posts of the channel that pass the filters, in id order,
    as rows of the list form (LIST_COLUMNS and the channel); and how many posts the list has. Unfiltered, that is
    the channel's stored number, and a deep page starts from the channel's anchors (filtered lists
    have none: they are read by OFFSET)."""
    posts = filter_posts(Post.objects.filter(channel_id=channel.pk), **filters).order_by("id")
    count = posts.count() if filters else channel.posts_count
    start = None
    if not filters and window.after is None:
        start = page_anchors.start_of(channel.pk, channel.posts_ids_version, window.offset, skipped(window, count))
    values = paging.rows(posts.values_list(*LIST_COLUMNS), window, count, start)
    return rows_with_channel(LIST_COLUMNS, values, channel), count


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


def post_rows(posts: QuerySet, columns: Columns, *, channels: dict | None = None) -> list:
    """The posts of the queryset as rows with their own columns, then their channel, tags and
    media, in id order: four queries whatever their number, three when `channels` (id -> channel
    in the list form) already holds their channels, one when there is no post.

    Channels that `channels` lacks are read with their account and added to it, so a caller
    rendering many batches reads each channel once.
    """
    values = list(posts.order_by("id").values_list("channel_id", *(SOURCES.get(name, name) for name in columns.own)))
    if not values:
        return []
    references = [position for position, name in enumerate(columns.own, start=1) if name in REFERENCES]
    if references:
        values = [_as_references(row, references) for row in values]
    channels = {} if channels is None else channels
    missing = {channel_id for channel_id, *_ in values} - channels.keys()
    if missing:
        channels.update(Channel.objects.listed().select_related("account").in_bulk(missing))
    id_position = 1 + columns.own.index("id")
    ids = [row[id_position] for row in values]
    # In the orders the single-post form uses: tags by name, media by position.
    tags = _rows_by(Tag.objects.filter(AnyOf("posts__id", ids)).order_by("name", "id"), "posts__id", columns.tags)
    media = _rows_by(Media.objects.filter(AnyOf("post_id", ids)).order_by("position", "id"), "post_id", columns.media)
    make = row_type((*columns.own, *NESTED))._make
    return [
        make((*fields, channels[channel_id], tags.get(pk, []), media.get(pk, [])))
        for (channel_id, *fields), pk in zip(values, ids, strict=True)
    ]


def _as_references(row: tuple, positions: list[int]) -> tuple:
    """The row with the ids at `positions` as references (a row with `id`, or None)."""
    row = list(row)
    reference = row_type(("id",))._make
    for position in positions:
        row[position] = None if row[position] is None else reference((row[position],))
    return tuple(row)


def post_details(posts: QuerySet, *, channels: dict | None = None) -> list:
    """The single-post form's rows: post_rows with DETAIL_COLUMNS, each with where readers find the
    post (`url`) and its latest publication job on its channel's destination (`publication`, read
    only for posts of channels that have one)."""
    rows = post_rows(posts, DETAIL_COLUMNS, channels=channels)
    if not rows:
        return rows
    destined = [row.id for row in rows if row.channel.publishes_through_destination]
    publications = latest_publications(destined) if destined else {}
    make = row_type((*rows[0]._fields, *DETAIL_COMPUTED))._make
    # A planned time means something only while the post waits for it; a post that was scheduled
    # once (then published, or made a draft) keeps the column, not the meaning.
    rows = [
        row if row.publication_status == PublicationStatus.SCHEDULED else row._replace(scheduled_at=None)
        for row in rows
    ]
    return [make((*row, page_url(row, publications.get(row.id)), publications.get(row.id))) for row in rows]


def page_url(post, publication) -> str | None:
    """Where readers find a post (a row or a Post with its channel), given its latest publication
    job (or None): the API's `url`, the Settings area's "View on site"."""
    if post.publication_status != PublicationStatus.PUBLISHED:
        return None
    channel = post.channel
    if channel.has_public_site:
        return channel.post_url(post.slug)
    if channel.publishes_externally:
        return post.external_url or None
    if publication is not None and publication.action != JobAction.UNPUBLISH:
        return publication.url
    return None


# --- The public site of blog channels (apps/blog): published posts only, newest first ---


@dataclass(frozen=True)
class PageCursor:
    """A position in a blog's posts, newest first: the (shown_at, id) of a post. As text in
    addresses: microseconds since the epoch and the id, `1764115200000000-42`."""

    shown_at: datetime
    id: int

    def __str__(self) -> str:
        return f"{round(self.shown_at.timestamp() * 1_000_000)}-{self.id}"

    @classmethod
    def parse(cls, text: str | None) -> "PageCursor | None":
        """The cursor, or None for anything that is not one (an unknown page is the first)."""
        match = CURSOR.fullmatch(text or "")
        if not match:
            return None
        try:
            shown_at = datetime.fromtimestamp(int(match.group(1)) / 1_000_000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
        return cls(shown_at, int(match.group(2)))

    @classmethod
    def of(cls, post) -> "PageCursor":
        return cls(post.shown_at, post.id)


CURSOR = re.compile(r"(\d{1,17})-(\d{1,18})")


@dataclass(frozen=True)
class PublicPage:
    posts: list
    older: PageCursor | None
    newer: PageCursor | None


def published_posts(channel_id: int) -> QuerySet:
    """What readers of the channel's blog may see: its `published` posts, with `shown_at`."""
    return Post.objects.filter(channel_id=channel_id, publication_status=PublicationStatus.PUBLISHED).annotate(
        shown_at=shown_at()
    )


def _with_tags(posts: list) -> list:
    """Each post with `tag_names` (sorted), in one query for all of them."""
    names = defaultdict(list)
    for post_id, name in (
        Tag.objects.filter(posts__in=[post.id for post in posts]).order_by("name").values_list("posts__id", "name")
    ):
        names[post_id].append(name)
    for post in posts:
        post.tag_names = names.get(post.id, [])
    return posts


def published_page(
    *,
    channel_id: int,
    size: int,
    before: PageCursor | None = None,
    after: PageCursor | None = None,
    tag: str | None = None,
) -> PublicPage:
    """A page of the blog's posts, newest first: the first page, the one `before` a post (older) or
    the one `after` it (newer). Keyset paging on the (shown_at, id) index: a page costs the same at
    any depth and in a channel of any size."""
    posts = published_posts(channel_id).only("id", "title", "slug", "teaser", "body", "published_at", "created_at")
    if tag is not None:
        # By the tag's id, read first: the planner then knows from its statistics how many posts
        # carry it, and reads a rare tag's few posts instead of walking the channel's.
        tag_id = Tag.objects.filter(account__channels=channel_id, name=tag).values_list("id", flat=True).first()
        if tag_id is None:
            return PublicPage([], None, None)
        posts = posts.filter(tags=tag_id)
    if after is not None:
        rows = list(
            posts.filter(shown_at__gte=after.shown_at)
            .filter(Q(shown_at__gt=after.shown_at) | Q(id__gt=after.id))
            .order_by("shown_at", "id")[: size + 1]
        )
        more = len(rows) > size
        rows = rows[:size][::-1]
        newer = PageCursor.of(rows[0]) if more and rows else None
        older = PageCursor.of(rows[-1]) if rows else None
        return PublicPage(_with_tags(rows), older, newer)
    if before is not None:
        posts = posts.filter(shown_at__lte=before.shown_at).filter(
            Q(shown_at__lt=before.shown_at) | Q(id__lt=before.id)
        )
    rows = list(posts.order_by("-shown_at", "-id")[: size + 1])
    older = PageCursor.of(rows[size - 1]) if len(rows) > size else None
    rows = rows[:size]
    newer = PageCursor.of(rows[0]) if before is not None and rows else None
    return PublicPage(_with_tags(rows), older, newer)


def published_post(*, channel_id: int, slug: str):
    """The channel's published post with this slug, with `tag_names` and `media_items`; None for
    any other (a draft, another channel's, an unknown slug: readers cannot tell them apart)."""
    post = published_posts(channel_id).filter(slug=slug).first()
    return None if post is None else with_parts(post)


def with_parts(post):
    """The post with `tag_names`, `media_items` (in order) and `images` (post_images), for
    rendering its page."""
    _with_tags([post])
    post.media_items = list(Media.objects.filter(post_id=post.id).order_by("position", "id"))
    post.images = post_images(post)
    return post


def latest_published(*, channel_id: int, size: int) -> list:
    """The blog's newest posts, whole, with `tag_names` (its feed)."""
    return _with_tags(list(published_posts(channel_id).order_by("-shown_at", "-id")[:size]))


def post_images(post) -> tuple[Image, ...]:
    """The uploaded images the post shows (apps.core.destinations.Image): its media items that name
    a medium, in order, with their own alt texts, then those only its body shows, in the order it
    shows them."""
    return posts_images([post])[post.pk]


def posts_images(posts: list) -> dict[int, tuple[Image, ...]]:
    """post_images of each of the posts (their channels loaded), their media items read in one query."""
    items = defaultdict(list)
    media = Media.objects.filter(post_id__in=[post.pk for post in posts], medium__isnull=False)
    for item in media.select_related("medium").order_by("post_id", "position", "id"):
        items[item.post_id].append(item)
    return {post.pk: _images(post, items[post.pk]) for post in posts}


def _images(post, items: list) -> tuple[Image, ...]:
    attached = {item.medium_id for item in items}
    shown = media_shown_in(post.body, account_id=post.channel.account_id) if shows_media(post.body) else []
    return (
        *(image_of(item.medium, alt_text=item.alt_text) for item in items),
        *(image_of(medium, attached=False) for medium in shown if medium.pk not in attached),
    )


def posts_showing(medium_id: int) -> list[dict]:
    """The posts, other than drafts, that show the medium (attached or in their body): what keeps
    it in the media library (apps/media/usage.py)."""
    live = Post.objects.exclude(publication_status=PublicationStatus.DRAFT).filter(
        Q(media__medium_id=medium_id) | Q(body_media=medium_id)
    )
    return list(live.distinct().order_by("id").values("id", "channel_id", "title", "publication_status")[:50])
