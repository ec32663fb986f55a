"""A channel's change feed (GET /v1/channels/{channel_id}/changes): its posts in the order their
changes committed, each in its latest form, and the posts that left it, as tombstones.

Positions are the database's (posts 0006): `Post.change_position` and `PostDeletion.position`. A
page is read up to a horizon below which every position is final: on PostgreSQL the oldest
transaction still running when the page's snapshot was taken (positions are transaction ids, and
every transaction not yet visible has one at or above it), on SQLite the next tick of the clock
(one writer at a time). So a cursor, (position, post id) of the last item handed out, is never
overtaken by a later commit: a client that follows it misses no committed change. A long
transaction anywhere on the database server holds the horizon back: changes wait, none is lost.

Tombstones are kept CHANGES_RETENTION; the sweep deletes older ones and raises the floor, and a
cursor that a swept tombstone could lie after, or issued longer ago than CHANGES_RETENTION, is
expired (410).
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core import signing
from django.db import connections, transaction
from django.db.models import BooleanField, Max
from django.db.models.expressions import RawSQL
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.errors import Gone
from apps.core.validation import field_error
from apps.posts.models import ChangeFeedState, Post, PostDeletion
from apps.posts.selectors import post_details

CURSOR_EXPIRED = (
    "This cursor is too old: deletions it would have to tell are no longer kept. Start over without a cursor."
)
SWEEP_BATCH = 1000
_STATE_ID = 1

_signer = signing.Signer(salt="cps.posts.changes.cursor")


@dataclass(frozen=True, order=True)
class Position:
    """Where an item stands in a channel's feed: its change's position, then the post's id."""

    position: int
    post_id: int


START = Position(0, 0)
# Above every post id: a place after every change at its position.
_LAST_ID = 2**63 - 1


@dataclass(frozen=True)
class Cursor:
    """A client's place in a channel's feed: after `at`. `since` is the horizon of the sync's first
    page: tombstones below it are of posts deleted before the client saw any, and are skipped.
    `issued` (Unix seconds), when read from a client, is when the service gave it."""

    channel_id: int
    at: Position
    since: int
    issued: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Deletion:
    id: int
    deleted_at: datetime


@dataclass(frozen=True)
class ChangesPage:
    """`items`: post rows (selectors.post_details) and Deletions, in feed order. `next` is the
    cursor after them (up to the horizon when no more are ready); `more`: more changes are ready now."""

    items: list
    next: Cursor
    more: bool


def cursor_text(cursor: Cursor, *, now: datetime | None = None) -> str:
    """The cursor as the opaque, signed text clients pass back, stamped with when it was issued."""
    issued = int((now or timezone.now()).timestamp())
    return _signer.sign_object(
        [cursor.channel_id, cursor.at.position, cursor.at.post_id, cursor.since, issued], compress=True
    )


def cursor_read(text: str, *, channel_id: int) -> Cursor:
    """The cursor `text` names, for the feed of `channel_id`: 400 VALIDATION_ERROR (field `cursor`)
    for one altered, cut short or of another channel."""
    try:
        channel, position, post_id, since, issued = _signer.unsign_object(text)
        values = (channel, position, post_id, since, issued)
        if not all(type(value) is int for value in values):
            raise ValueError
    except (signing.BadSignature, ValueError, TypeError):
        raise field_error(
            "cursor", "invalid_cursor", "This cursor is not one this API gave (altered or cut short)."
        ) from None
    if channel != channel_id:
        raise field_error(
            "cursor", "foreign_cursor", "This cursor belongs to another channel's feed: follow each feed's own cursor."
        )
    return Cursor(channel, Position(position, post_id), since, issued)


def _check_age(cursor: Cursor, now: datetime | None) -> None:
    """410 `cursor_expired` for a cursor issued longer ago than CHANGES_RETENTION."""
    age = (now or timezone.now()).timestamp() - (cursor.issued or 0)
    if age > settings.CHANGES_RETENTION.total_seconds():
        raise Gone(CURSOR_EXPIRED, code="cursor_expired")


@contextlib.contextmanager
def _one_snapshot(connection) -> Iterator[None]:
    """On PostgreSQL, the page's reads in one read-only snapshot (REPEATABLE READ), so the horizon,
    the changes and the posts' forms agree: a post is handed out once per change. Inside a
    transaction already begun (tests on pytest-django's `db`), its snapshot rules; the horizon
    keeps the page exact either way. SQLite's transactions take the write lock when they begin
    (config/settings/database.py): its reads go without one, which the horizon allows (see channel_changes)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with transaction.atomic(using=connection.alias):
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _horizon(connection) -> int:
    """The lowest position that may still be taken by a change not yet visible."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
            return cursor.fetchone()[0]
    clock = ChangeFeedState.objects.filter(pk=_STATE_ID).values_list("clock", flat=True).first()
    return (clock or 0) + 1


def _after(at: Position, position: str, post_id: str) -> RawSQL:
    # A row comparison, which PostgreSQL reads as one range of the (channel, position, id) index:
    # a page costs the same at any depth, also among the many posts one transaction wrote.
    # The column names are this module's constants; the values are parameters.
    sql = f"({position}, {post_id}) > (%s, %s)"
    return RawSQL(sql, (at.position, at.post_id), output_field=BooleanField())  # noqa: S611


def _floor() -> int:
    """0 until the sweep deletes a tombstone (their positions are above 0)."""
    return ChangeFeedState.objects.filter(pk=_STATE_ID).values_list("floor", flat=True).first() or 0


def _changed_posts(channel: Channel, at: Position, horizon: int, size: int) -> list[tuple[Position, None]]:
    rows = (
        Post.objects.filter(channel_id=channel.pk, change_position__lt=horizon)
        .filter(_after(at, '"posts_post"."change_position"', '"posts_post"."id"'))
        .order_by("change_position", "id")
        .values_list("change_position", "id")[: size + 1]
    )
    return [(Position(position, pk), None) for position, pk in rows]


def _deletions(channel: Channel, at: Position, since: int, horizon: int, size: int) -> list[tuple[Position, Deletion]]:
    rows = (
        PostDeletion.objects.filter(channel_id=channel.pk, position__lt=horizon, position__gte=since)
        .filter(_after(at, '"posts_postdeletion"."position"', '"posts_postdeletion"."post_id"'))
        .order_by("position", "post_id")
        .values_list("position", "post_id", "deleted_at")[: size + 1]
    )
    return [(Position(position, pk), Deletion(pk, deleted_at)) for position, pk, deleted_at in rows]


def _check_floor(at: Position, since: int) -> None:
    """410 when a swept tombstone could lie after `at`. Read after the page's reads: the sweep raises
    the floor in the transaction that deletes, so a tombstone the reads missed for it shows here.
    Tombstones below `since` are not wanted."""
    floor = _floor()
    if floor and since <= floor and at < Position(floor, _LAST_ID):
        raise Gone(CURSOR_EXPIRED, code="cursor_expired")


def _items(page: list, rows: list) -> list:
    by_id = {row.id: row for row in rows}
    # A post deleted between the reads (SQLite, or a snapshot begun by the caller) is left out: its
    # tombstone lies at or above the horizon, so it comes on a later page.
    return [deletion or by_id[place.post_id] for place, deletion in page if deletion or place.post_id in by_id]


def channel_changes(*, channel: Channel, cursor: Cursor | None, size: int, now: datetime | None = None) -> ChangesPage:
    """The page of `channel`'s feed after `cursor` (None: a first sync, every post from the start,
    no tombstones), at most `size` items; post rows of the single-post form (post_details). 410
    `cursor_expired` for a cursor issued longer ago than CHANGES_RETENTION, or when deletions after
    it may have been swept."""
    if cursor is not None:
        _check_age(cursor, now)
    connection = connections[Post.objects.db]
    with _one_snapshot(connection):
        horizon = _horizon(connection)
        at = START if cursor is None else cursor.at
        since = horizon if cursor is None else cursor.since
        deletions = [] if cursor is None else _deletions(channel, at, since, horizon, size)
        # A post that left and came back with the same position (one transaction) is there.
        merged = sorted(
            _changed_posts(channel, at, horizon, size) + deletions, key=lambda item: (item[0], item[1] is None)
        )
        page, more = merged[:size], len(merged) > size
        if cursor is not None:
            _check_floor(at, since)
        ids = [place.post_id for place, deletion in page if deletion is None]
        rows = post_details(Post.objects.filter(pk__in=ids), channels={channel.pk: channel}) if ids else []
    items = _items(page, rows)
    # Up to date: every change below the horizon was on this page, so the cursor moves up to it.
    last = page[-1][0] if more else max(at, Position(horizon - 1, _LAST_ID))
    return ChangesPage(items=items, next=Cursor(channel.pk, last, since), more=more)


def _set_floor(position: int) -> None:
    state, _ = ChangeFeedState.objects.select_for_update().get_or_create(pk=_STATE_ID)
    if position > state.floor:
        state.floor = position
        state.save(update_fields=["floor"])


def tombstones_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> int:
    """Delete the tombstones older than CHANGES_RETENTION, `batch` at a time (each batch its own
    transaction, raising the floor to the highest position it deleted); return how many."""
    cutoff = (now or timezone.now()) - settings.CHANGES_RETENTION
    total = 0
    while True:
        with transaction.atomic():
            old = PostDeletion.objects.filter(deleted_at__lt=cutoff).order_by("deleted_at", "id")
            ids = list(old.values_list("id", flat=True)[:batch])
            if not ids:
                return total
            old = PostDeletion.objects.filter(pk__in=ids)
            highest = old.aggregate(highest=Max("position"))["highest"]
            _set_floor(highest)
            deleted, _ = old.delete()
            total += deleted
