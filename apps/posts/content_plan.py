"""The content plan: scheduled posts whose time has come move on, in bounded batches.

Each batch is one transaction that locks its posts with `FOR UPDATE SKIP LOCKED`, moves them with
set-based UPDATEs and writes their events through the webhooks outbox. Two overlapping runs (a
slow run and the next beat, two beats by mistake) skip each other's locked posts, and a post that
has moved is no longer `scheduled`: each post moves once and its event is written once.
"""

import gc
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.channels.models import Platform, through_destination
from apps.core.lookups import AnyOf
from apps.posts.events import PostEvent
from apps.posts.lifecycle import posts_hand_over, posts_put
from apps.posts.models import Post, PublicationStatus
from apps.posts.serializers import posts_webhook_data
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.services import JobInput, jobs_enqueue_many
from apps.webhooks.models import EventInput
from apps.webhooks.services import events_emit_many

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


def _emit(kinds: dict[str, list[int]], channels: dict) -> None:
    """The batch's events, of each kind for its posts (in id order): the posts of every kind are
    read and rendered together, three queries a batch rather than three a kind."""
    every = [pk for post_ids in kinds.values() for pk in post_ids]
    payloads = {pk: (channel, data) for channel, pk, data in posts_webhook_data(every, channels)}
    for kind, post_ids in kinds.items():
        if post_ids:
            items = [
                EventInput(account=payloads[pk][0].account, data={"post": payloads[pk][1]}, post_id=pk)
                for pk in sorted(post_ids)
            ]
            events_emit_many(kind=kind, items=items)


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
    scanned = dict(due_posts.order_by("scheduled_at", "id").values_list("id", "scheduled_at")[:batch_size])
    if not scanned:
        return [], 0, after
    # A post handed to its destination stays `scheduled` until the destination confirms; the job
    # written for its scheduled time says it was handed over, so it is not handed over again. The
    # jobs are looked up by the batch's ids (one index probe each), not by an anti-join in the
    # scan, whose plan PostgreSQL picks from the jobs table's statistics: stale after a mass
    # deletion, they made it read the whole table for every batch (105 s for 100,000 posts).
    handed_over = set(
        PublicationJob.objects.filter(AnyOf("post_id", scanned), action=JobAction.PUBLISH).values_list(
            "post_id", "scheduled_for"
        )
    )
    locked = (
        Post.objects.filter(
            AnyOf("id", [pk for pk, at in scanned.items() if (pk, at) not in handed_over]),
            publication_status=PublicationStatus.SCHEDULED,
        )
        .select_for_update(skip_locked=True, of=("self",))
        .order_by("scheduled_at", "id")
        .values_list("id", "channel__platform", "scheduled_at", "channel_id", "title")
    )
    # A post rescheduled since the scan (to a later time, or another due one) is left to the next
    # run, which sees its new time.
    due = [row for row in locked if row[2] == scanned[row[0]]]
    last_id, last_at = next(reversed(scanned.items()))
    return due, len(scanned), (last_at, last_id)


@transaction.atomic
def _move_batch(
    *, now: datetime, batch_size: int, after: Position | None, channels: dict
) -> tuple[int, int, int, int, Position | None]:
    """Move one batch; return (publishing_pending, published, handed_over, posts scanned, where
    the batch ended)."""
    due, scanned, position = _due_batch(now=now, batch_size=batch_size, after=after)
    external = [post_id for post_id, platform, *_ in due if platform == Platform.API]
    destined = [row for row in due if through_destination(row[1])]
    direct = [post_id for post_id, platform, *_ in due if platform == Platform.BLOG]
    if external:
        posts_hand_over(post_ids=external, now=now)
    if direct:
        posts_put(post_ids=direct, status=PublicationStatus.PUBLISHED, now=now)
    if external or direct:
        _emit({PostEvent.PUBLISHING_PENDING: external, PostEvent.PUBLISHED: direct}, channels)
    # A post whose publication already waits in a queued job (its "Publish now", waiting for a
    # retry) gets no second one (jobs_enqueue_many), and is not counted as handed over.
    handed = 0
    if destined:
        handed = jobs_enqueue_many(
            items=[
                JobInput(
                    channel_id=channel_id,
                    post_id=post_id,
                    title=title,
                    action=JobAction.PUBLISH,
                    scheduled_for=scheduled_at,
                )
                for post_id, _, scheduled_at, channel_id, title in destined
            ]
        )
    return len(external), len(direct), handed, scanned, position


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
