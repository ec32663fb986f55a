"""The content plan: scheduled posts whose time has come move on, in bounded batches.

Each batch is one transaction that locks its posts with `FOR UPDATE SKIP LOCKED`, moves them with
set-based UPDATEs and writes their events through the webhooks outbox. Two overlapping runs (a
slow run and the next beat, two beats by mistake) skip each other's locked posts, and a post that
has moved is no longer `scheduled`: each post moves once and its event is written once.
"""

import gc
import logging
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.channels.models import Platform, through_destination
from apps.core.lookups import AnyOf
from apps.posts.events import PostEvent
from apps.posts.lifecycle import api_records_statement, posts_put_statement, put_values
from apps.posts.models import Post, PublicationStatus
from apps.posts.outcomes import moved
from apps.posts.selectors import CONTENT_COLUMNS, post_rows
from apps.posts.serializers import rows_webhook_data
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.services import JobInput, jobs_enqueue_many, jobs_enqueue_statement, jobs_enqueued
from apps.webhooks.models import EventInput
from apps.webhooks.services import PreparedEvents, events_emit_prepared, events_prepare_many

logger = logging.getLogger(__name__)

# A batch's fixed costs (its dozen statements compiled and planned, its commit, its broker
# messages) were a tenth of a run at 1,000 posts; at 2,000 a batch still holds its posts' locks for
# a fraction of a second, and a crash loses (to the next run) no more than that.
BATCH_SIZE = 2000


@dataclass
class ContentPlanResult:
    publishing_pending: int = 0
    published: int = 0
    # Posts of channels that publish through a destination, handed to it: they stay `scheduled` until
    # the destination confirms.
    handed_over: int = 0

    @property
    def moved(self) -> int:
        return self.publishing_pending + self.published + self.handed_over


def _events(kinds: dict[str, list[int]], payloads: list[tuple]) -> list[PreparedEvents]:
    """The batch's events rendered, of each kind for its posts (in id order); `payloads`:
    rows_webhook_data of the posts of every kind, read and rendered together."""
    by_post = {pk: (channel, data) for channel, pk, data in payloads}
    return [
        events_prepare_many(
            kind=kind,
            items=[
                EventInput(account=by_post[pk][0].account, data={"post": by_post[pk][1]}, post_id=pk)
                for pk in sorted(post_ids)
            ],
        )
        for kind, post_ids in kinds.items()
        if post_ids
    ]


# Where a batch ends in the order of the scan: (scheduled_at, id).
Position = tuple[datetime, int]


def _due_batch(*, now: datetime, batch_size: int, after: Position | None) -> tuple[list[tuple], int, Position | None]:
    """The next batch of due posts, locked, in the order of the scan, without those already handed
    to their destination for their scheduled time; with how many posts were scanned and where the
    scan ended. Runs in the batch's transaction."""
    due_posts = Post.objects.filter(publication_status=PublicationStatus.SCHEDULED, scheduled_at__lte=now)
    if after is not None:
        # Each batch goes on from where the last one ended: rescanning from the start would walk
        # over the index entries of every post already moved (still there until vacuum), which
        # made a run's time grow with the square of its posts. The first condition alone is what
        # bounds the index scan (the planner cannot start a range from the OR).
        due_posts = due_posts.filter(scheduled_at__gte=after[0]).filter(
            Q(scheduled_at__gt=after[0]) | Q(scheduled_at=after[0], id__gt=after[1])
        )
    # Scanned and locked in one statement: another run's posts are skipped, not waited for, and
    # the scan goes on past them. A post rescheduled by a save that committed meanwhile is checked
    # again as it is now (PostgreSQL re-reads a row it locks after a concurrent change), so it is
    # moved only if its new time is due too.
    scanned = list(
        due_posts.select_for_update(skip_locked=True, of=("self",))
        .order_by("scheduled_at", "id")
        .values_list("id", "channel__platform", "scheduled_at", "channel_id", "title")[:batch_size]
    )
    if not scanned:
        return [], 0, after
    # A post handed to its destination stays `scheduled` until the destination confirms; the job
    # written for its scheduled time says it was handed over, so it is not handed over again. The
    # jobs are looked up by the batch's ids (one index probe each), not by an anti-join in the
    # scan, whose plan PostgreSQL picks from the jobs table's statistics: stale after a mass
    # deletion, they made it read the whole table for every batch (105 s for 100,000 posts).
    destined = [pk for pk, platform, *_ in scanned if through_destination(platform)]
    handed_over = (
        set(
            PublicationJob.objects.filter(AnyOf("post_id", destined), action=JobAction.PUBLISH).values_list(
                "post_id", "scheduled_for"
            )
        )
        if destined
        else set()
    )
    due = [row for row in scanned if (row[0], row[2]) not in handed_over]
    last_id, _, last_at, *_ = scanned[-1]
    return due, len(scanned), (last_at, last_id)


# What a batch reads of posts, media and jobs is in memory (it has just been written or scanned).
# PostgreSQL's default cost of a random page (4, for disks) made it read every row of the media
# and jobs tables for each batch's thousand ids, instead of a thousand index probes: a batch's
# reads grew with the tables, 3-4x as slow at 100,000 posts (18 ms against 5 for the media).
PROBES_COST = "SET LOCAL random_page_cost = 1.1"


def _plan_for_probes() -> None:
    """For the rest of the batch's transaction only (SET LOCAL): other work keeps the server's costs."""
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(PROBES_COST)


@transaction.atomic
def _move_batch(
    *, now: datetime, batch_size: int, after: Position | None, channels: dict
) -> tuple[int, int, int, int, Position | None]:
    """Move one batch; return (publishing_pending, published, handed_over, posts scanned, where
    the batch ended)."""
    _plan_for_probes()
    due, scanned, position = _due_batch(now=now, batch_size=batch_size, after=after)
    # A post whose publication already waits in a queued job (its "Publish now", waiting for a
    # retry) gets no second one (jobs_enqueue_many), and is not counted as handed over.
    jobs = [
        JobInput(channel_id=channel_id, post_id=post_id, title=title, action=JobAction.PUBLISH, scheduled_for=at)
        for post_id, platform, at, channel_id, title in due
        if through_destination(platform)
    ]
    kinds = {
        PostEvent.PUBLISHING_PENDING: [post_id for post_id, platform, *_ in due if platform == Platform.API],
        PostEvent.PUBLISHED: [post_id for post_id, platform, *_ in due if platform == Platform.BLOG],
    }
    handed = _write(kinds=kinds, jobs=jobs, now=now, channels=channels)
    return len(kinds[PostEvent.PUBLISHING_PENDING]), len(kinds[PostEvent.PUBLISHED]), handed, scanned, position


# The status each kind of event reports its posts moved to.
STATUS_OF = {
    PostEvent.PUBLISHING_PENDING: PublicationStatus.PUBLISHING_PENDING,
    PostEvent.PUBLISHED: PublicationStatus.PUBLISHED,
}


def _rows_after(kinds: dict[str, list[int]], values: dict[str, dict], channels: dict) -> list:
    """The payloads' rows of the posts of each kind, with the values the kind's UPDATE writes."""
    after = {pk: values[kind] for kind, post_ids in kinds.items() for pk in post_ids}
    if not after:
        return []
    read = post_rows(Post.objects.filter(AnyOf("id", list(after))), CONTENT_COLUMNS, channels=channels)
    return [row._replace(**after[row.id]) for row in read]


def _write(*, kinds: dict[str, list[int]], jobs: list[JobInput], now: datetime, channels: dict) -> int:
    """The batch's writes, on PostgreSQL with its payloads rendered while they run: the posts'
    UPDATEs, the API records and the jobs are sent at once (psycopg's pipeline mode) and PostgreSQL
    runs them while Python renders the events' payloads, instead of each side waiting for the other
    (the run is a dialogue of two processes on two cores). Other databases run the same statements
    one after the other. The payloads' rows are read before the writes, the posts locked so that
    nothing else changes them, and given the values the UPDATEs write (put_values): the same bytes
    as rows read after them. Returns how many publish jobs were written."""
    values = {kind: put_values(STATUS_OF[kind], now=now) for kind in kinds}
    rows = _rows_after(kinds, values, channels)
    statements = [
        posts_put_statement(post_ids=post_ids, values=values[kind]) for kind, post_ids in kinds.items() if post_ids
    ]
    if kinds[PostEvent.PUBLISHING_PENDING]:
        statements.append(api_records_statement(post_ids=kinds[PostEvent.PUBLISHING_PENDING], now=now))
    jobs_statement = jobs_enqueue_statement(items=jobs) if jobs else None
    connection = transaction.get_connection()
    # The jobs' statement (its arrays, 50-100 kB) goes first: PostgreSQL reads no more of a pipeline
    # while it runs a statement, and the UPDATEs' few bytes wait in the socket's buffer, where the
    # jobs' would have kept Python sending until the UPDATEs were done. The cursors stay open until
    # the pipeline has its results: the jobs' rows are read after it.
    pipeline = connection.connection.pipeline() if connection.vendor == "postgresql" else nullcontext()
    with ExitStack() as cursors:
        with pipeline:
            jobs_cursor = cursors.enter_context(connection.cursor())
            if jobs_statement:
                jobs_cursor.execute(*jobs_statement)
            for statement in statements:
                cursors.enter_context(connection.cursor()).execute(*statement)
            events = _events(kinds, rows_webhook_data(rows))
        written = jobs_cursor.fetchall() if jobs_statement else []
    # Who listens reads the posts' stories: once for the batch, not once per kind.
    moved([pk for post_ids in kinds.values() for pk in post_ids])
    for prepared in events:
        events_emit_prepared(prepared)
    if jobs_statement:
        return jobs_enqueued(written)
    return jobs_enqueue_many(items=jobs) if jobs else 0


@contextmanager
def _collector_spared():
    """The objects that exist before a run (the process's modules, Django's own) are set aside
    from the cyclic garbage collector while it runs: a run allocates millions of short-lived
    objects, and each full collection would otherwise walk all of the process's objects again
    (a quarter of the run's time). Freed objects are still freed at once by reference counting."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def content_plan_run(*, now: datetime | None = None, batch_size: int = BATCH_SIZE) -> ContentPlanResult:
    """Move every scheduled post whose `scheduled_at` has passed; return how many moved where."""
    now = now or timezone.now()
    result = ContentPlanResult()
    with _collector_spared():
        position = None
        # Each channel (with its team, account and stored posts_count, which moving posts does not
        # change) is read once per run, not once per batch.
        channels: dict = {}
        while True:
            pending, published, handed_over, scanned, position = _move_batch(
                now=now, batch_size=batch_size, after=position, channels=channels
            )
            result.publishing_pending += pending
            result.published += published
            result.handed_over += handed_over
            if scanned < batch_size:
                break
    logger.info(
        "content plan run moved=%d publishing_pending=%d published=%d handed_over=%d",
        result.moved,
        result.publishing_pending,
        result.published,
        result.handed_over,
    )
    return result
