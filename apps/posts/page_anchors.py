"""Starting points ("anchors") for the deep pages of a channel's posts in id order.

A page at offset O of a list ordered by id costs O index entries skipped (or, counted from the end,
as many as follow it): 500,000 in the middle of a channel of a million posts. Every SPACING-th post
id of the channel (the ids at positions 0, SPACING, 2 * SPACING, ...) is kept in the default cache
instead, so that the page at offset O is the (O % SPACING)-th post from the anchor of O // SPACING
on: fewer than SPACING entries skipped at any depth.

They are kept under the channel's `posts_ids_version`, which the database renews whenever a post of
the channel takes another position (a post inserted or moved in below others, one deleted or moved
out from below others; see Channel.posts_ids_version), and only then: appending posts and editing
them keep the anchors. A channel that grew since its anchors were made has no anchor for its newest
positions; the first page that needs one makes them again, under the same version.

Made with the version they belong to in one statement (one snapshot), by one pass over the
channel's (channel_id, id) index, only when a page deep enough to need them is asked for; while one
process makes them, the others read such pages as before (OFFSET), as they do when the cache is
unreachable: anchors only ever spare work, the answer is the same without them. Inside a
transaction they are read but never made (it may see writes of its own that are rolled back later).
"""

import logging
import struct

from django.core.cache import caches
from django.db import connection

from apps.channels.models import Channel
from apps.core.fail_open import FailOpen
from apps.posts.models import Post

logger = logging.getLogger(__name__)

# Positions between two anchors: the most index entries a page skips from its anchor. A million
# posts make a thousand anchors.
SPACING = 1000
# Anchors per cache entry, each 8 bytes: a page reads one entry of 2 KiB at any size of the
# channel, and takes its one id out without making objects of the others.
CHUNK = 256
ANCHOR = struct.Struct("<q")
# Anchors of versions no longer current are never read again; this bounds how long they stay.
KEEP_SECONDS = 24 * 3600
# How long another process waits for the one making a channel's anchors before making them itself
# (should that one die first).
MAKING_SECONDS = 60
# The version of channels inserted by raw SQL (the column's default): the same in every database,
# so it could name another database's anchors in a cache that outlived it. They have none.
UNNAMED = 0
# Seconds without the cache after a failed call: a hung cache costs one socket timeout per pause.
RETRY_AFTER = 5.0


class AnchorStore(FailOpen):
    """The anchors in the default cache, failing open. `namespace` keeps separate sets apart."""

    outage = "Cache unreachable; deep pages read without anchors"
    retry_after = RETRY_AFTER
    logger = logger

    def __init__(self, namespace: str = "post-anchors") -> None:
        super().__init__()
        self.namespace = namespace

    def key(self, channel_id: int, version: int, chunk: int | str) -> str:
        return f"{self.namespace}:{channel_id}:{version}:{chunk}"

    def call(self, operation, *args):
        """`operation(cache, *args)`, or None when the cache is unreachable (or was, moments ago)."""
        return self.attempt(lambda: operation(caches["default"], *args))[1]


store = AnchorStore()


def start_of(channel_id: int, version: int, offset: int, skipped: int) -> tuple[int, int] | None:
    """(post id, skip): the channel's post at `offset` in id order is the `skip`-th (from 0) of its
    posts with an id from `post id` on, `skip` below SPACING. `version` is the channel's
    `posts_ids_version` as read with its `posts_count`; `skipped`, the index entries a read without
    anchors would skip (from the start or from the end). None when that is fewer than SPACING, when
    the anchors are not at hand and cannot be made now (another process is making them, the cache
    is unreachable, a transaction is open), or when the channel has no post at `offset`."""
    index = offset // SPACING
    if index == 0 or skipped < SPACING or version == UNNAMED:
        return None
    chunk, at = divmod(index, CHUNK)
    anchors = store.call(lambda cache: cache.get(store.key(channel_id, version, chunk), b""))
    if anchors is None:
        return None
    if at >= len(anchors) // ANCHOR.size:
        if connection.in_atomic_block:
            # What a transaction reads may include its own writes, which may yet be rolled back:
            # anchors of those would outlive them.
            return None
        anchors = _made(channel_id, version, chunk)
        if anchors is None or at >= len(anchors) // ANCHOR.size:
            return None
    return ANCHOR.unpack_from(anchors, at * ANCHOR.size)[0], offset - index * SPACING


def _made(channel_id: int, version: int, chunk: int) -> bytes | None:
    """The channel's anchors made anew and stored, their `chunk`-th part returned; None when another
    process is making them. Stored under the version they were read with, which is `version` unless
    the posts moved since the caller read it: then they serve this page as well (they are the posts'
    positions now, as OFFSET would read them), and pages of the version they belong to after it."""
    making = store.key(channel_id, version, "making")
    if not store.call(lambda cache: cache.add(making, True, MAKING_SECONDS)):
        return None
    try:
        made_version, anchors = _read_anchors(channel_id)
        if made_version in (None, UNNAMED):  # the channel is gone, or has no anchors
            return None
        chunks = [_packed(anchors[start : start + CHUNK]) for start in range(0, len(anchors), CHUNK)]
        entries = {store.key(channel_id, made_version, number): part for number, part in enumerate(chunks)}
        store.call(lambda cache: cache.set_many(entries, KEEP_SECONDS))
        return chunks[chunk] if chunk < len(chunks) else b""
    finally:
        store.call(lambda cache: cache.delete(making))


def _packed(ids: list[int]) -> bytes:
    return b"".join(ANCHOR.pack(post_id) for post_id in ids)


def _read_anchors(channel_id: int) -> tuple[int | None, list[int]]:
    """The channel's `posts_ids_version` and the ids at every SPACING-th position of its posts,
    read in one statement, so the anchors are those of that version."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT channel.posts_ids_version, post.id
            FROM {Channel._meta.db_table} channel
            LEFT JOIN (
                SELECT id, row_number() OVER (ORDER BY id) - 1 AS position
                FROM {Post._meta.db_table} WHERE channel_id = %s
            ) post ON post.position %% %s = 0
            WHERE channel.id = %s
            ORDER BY post.id
            """,  # noqa: S608 (the models' own tables)
            [channel_id, SPACING, channel_id],
        )
        rows = cursor.fetchall()
    if not rows:
        return None, []
    return rows[0][0], [post_id for _, post_id in rows if post_id is not None]
