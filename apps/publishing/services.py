"""The publishing pipeline: jobs written in the transaction of the change that calls for them (an
outbox, as the webhooks are), carried out by workers one at a time per channel, in order, with
leases, retries on a schedule and a sweeper.

A job is claimed with a lease (`locked_until`); a worker that dies leaves it to be claimed again
once the lease runs out. Destinations make every action safe to repeat (a repository destination compares the file
with what it would write before committing), so a job whose outcome is unknown (a timeout after
the push was sent) is simply run again: it finds its work done and confirms it.
"""

import logging
import operator
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial, reduce

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.destinations import PublishError
from apps.core.lookups import bigint_array
from apps.core.outbox import leased, unleased
from apps.publishing import runs
from apps.publishing.models import UNFINISHED, JobState, PublicationJob

logger = logging.getLogger(__name__)

SWEEP_BATCH = 1000
# A channel's run hands its thread back after this long (and its channel to the broker), so a
# channel with a long queue takes turns with the others.
RUN_BUDGET = 60.0
# A canceled job is a failed one whose last error starts so (jobs_cancel's reasons all do).
CANCELED_PREFIX = "Canceled:"
CANCELED = f"{CANCELED_PREFIX} the post was taken back to draft before it was published."


@dataclass(frozen=True)
class JobInput:
    channel_id: int
    post_id: int
    title: str
    action: str
    scheduled_for: datetime | None = None


def jobs_enqueue(*, items: Iterable[JobInput]) -> list[PublicationJob]:
    """Write jobs in the caller's transaction; hand their channels to the broker after commit.

    A post that already has a queued job of the same action gets no second one: that job reads the
    post when it runs, so it carries the newer change too.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("jobs_enqueue must run inside the transaction of the change that calls for it")
    items = list(items)
    if not items:
        return []
    queued = set(
        PublicationJob.objects.filter(post_id__in={item.post_id for item in items}, state=JobState.QUEUED).values_list(
            "post_id", "action"
        )
    )
    now = timezone.now()
    jobs = []
    for item in items:
        if (item.post_id, item.action) in queued:
            if item.scheduled_for is not None:
                # The queued job serves this scheduled time too: the content plan hands it over once.
                PublicationJob.objects.filter(post_id=item.post_id, action=item.action, state=JobState.QUEUED).update(
                    scheduled_for=item.scheduled_for
                )
            continue
        queued.add((item.post_id, item.action))
        jobs.append(
            PublicationJob(
                channel_id=item.channel_id,
                post_id=item.post_id,
                title=item.title[:300],
                action=item.action,
                scheduled_for=item.scheduled_for,
                next_attempt_at=now,
                created_at=now,
            )
        )
    PublicationJob.objects.bulk_create(jobs)
    channel_ids = sorted({job.channel_id for job in jobs})
    if channel_ids:
        transaction.on_commit(partial(enqueue_channels, channel_ids))
    return jobs


# From this many jobs on, PostgreSQL writes them with one statement from arrays (jobs_enqueue_many).
MANY_MIN_JOBS = 100

# jobs_enqueue's rules in one statement: the given jobs (in their order, a post's first job of
# each action), the scheduled time of a post's queued job of the same action moved instead of a
# second job, and the others written queued. The statement's snapshot sees the queued jobs as they
# were before it, so the UPDATE and the NOT EXISTS agree on which posts have one.
_MANY_SQL = """
WITH given AS (
    SELECT DISTINCT ON (post_id, action) *
    FROM unnest(%(channels)s::bigint[], %(posts)s::bigint[], %(titles)s::text[], %(actions)s::text[],
                %(scheduled)s::timestamptz[])
         WITH ORDINALITY AS g (channel_id, post_id, title, action, scheduled_for, n)
    ORDER BY post_id, action, n
), moved AS (
    UPDATE {jobs} j SET scheduled_for = g.scheduled_for
    FROM given g
    WHERE j.post_id = g.post_id AND j.action = g.action AND j.state = %(queued)s AND g.scheduled_for IS NOT NULL
)
INSERT INTO {jobs} (channel_id, post_id, title, action, state, scheduled_for, attempts, next_attempt_at,
                    locked_until, locked_by, last_error, reference, path, url, published_at, created_at, updated_at,
                    finished_at)
SELECT g.channel_id, g.post_id, g.title, g.action, %(queued)s, g.scheduled_for, 0, %(now)s, NULL, '', '', '', '',
       '', NULL, %(now)s, %(now)s, NULL
FROM given g
WHERE NOT EXISTS (SELECT FROM {jobs} j WHERE j.post_id = g.post_id AND j.action = g.action AND j.state = %(queued)s)
ORDER BY g.n
RETURNING channel_id
"""


def jobs_enqueue_many(*, items: Sequence[JobInput]) -> int:
    """jobs_enqueue for a batch of many posts (the content plan's): the same jobs, written on
    PostgreSQL in one statement from arrays, without a model instance each; returns how many jobs
    were written. A model instance built and its values prepared for each job took more than a
    quarter of a content plan run."""
    connection = transaction.get_connection()
    statement = jobs_enqueue_statement(items=items)
    if statement is None:
        return len(jobs_enqueue(items=items))
    with connection.cursor() as cursor:
        cursor.execute(*statement)
        return jobs_enqueued(cursor.fetchall())


def jobs_enqueue_statement(*, items: Sequence[JobInput]) -> tuple[str, dict] | None:
    """jobs_enqueue_many's statement, for a caller that sends it and reads its rows later (the
    content plan, while PostgreSQL writes and Python renders): give its rows to jobs_enqueued. None
    where jobs_enqueue writes the jobs instead (another database, a few jobs)."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql" or len(items) < MANY_MIN_JOBS:
        return None
    if not connection.in_atomic_block:
        raise RuntimeError("jobs_enqueue must run inside the transaction of the change that calls for it")
    params = {
        "channels": bigint_array(item.channel_id for item in items),
        "posts": bigint_array(item.post_id for item in items),
        "titles": [item.title[:300] for item in items],
        "actions": [str(item.action) for item in items],
        "scheduled": [item.scheduled_for for item in items],
        "queued": str(JobState.QUEUED),
        "now": timezone.now(),
    }
    return _MANY_SQL.format(jobs=connection.ops.quote_name(PublicationJob._meta.db_table)), params


def jobs_enqueued(written: list[tuple]) -> int:
    """The broker's part of jobs_enqueue_statement's jobs (`written`: its rows), after commit;
    returns how many jobs were written."""
    channel_ids = sorted({channel_id for (channel_id,) in written})
    if channel_ids:
        transaction.on_commit(partial(enqueue_channels, channel_ids))
    return len(written)


def job_enqueue(*, channel_id: int, post_id: int, title: str, action: str) -> PublicationJob | None:
    jobs = jobs_enqueue(items=[JobInput(channel_id=channel_id, post_id=post_id, title=title, action=action)])
    return jobs[0] if jobs else None


def jobs_cancel(*, post_id: int, actions: Iterable[str], reason: str = CANCELED) -> int:
    """Fail the post's queued jobs of these actions (not those running: their outcome will tell).
    `reason` starts with CANCELED_PREFIX: a canceled job is not retried."""
    if not reason.startswith(CANCELED_PREFIX):
        raise ValueError(f"a cancellation's reason starts with {CANCELED_PREFIX!r}")
    now = timezone.now()
    return PublicationJob.objects.filter(post_id=post_id, state=JobState.QUEUED, action__in=list(actions)).update(
        state=JobState.FAILED, last_error=reason, finished_at=now, updated_at=now
    )


def enqueue_channels(channel_ids: list[int]) -> None:
    """Give the broker a run of each channel. A broker that is down loses nothing: the jobs are in
    the database, and the sweeper hands their channels over once it is back."""
    from apps.publishing.tasks import run_channel

    try:
        with run_channel.app.producer_or_acquire() as producer:
            for channel_id in channel_ids:
                run_channel.apply_async((channel_id,), retry=False, producer=producer)
    except Exception as exc:  # the broker's errors vary by transport; none may fail the caller
        logger.warning("broker unavailable, %d channels' jobs left for the sweeper: %s", len(channel_ids), exc)


def jobs_sweep(*, limit: int = SWEEP_BATCH) -> int:
    """Hand the broker every channel with a job due and held by no worker: never handed over (the
    broker was down), a retry whose time has come, or one whose holder died (its lease ran out)."""
    now = timezone.now()
    channel_ids = sorted(
        set(
            PublicationJob.objects.filter(unleased(now), state__in=UNFINISHED, next_attempt_at__lte=now)
            .order_by()
            .values_list("channel_id", flat=True)
            .distinct()[:limit]
        )
    )
    if channel_ids:
        enqueue_channels(channel_ids)
        logger.info("publishing sweep enqueued channels=%d", len(channel_ids))
    return len(channel_ids)


def _claim_head(channel_id: int) -> PublicationJob | None:
    """Take the channel's oldest unfinished job alone, when it is due and no worker holds it."""
    jobs = runs.claim(channel_id, limit=1)
    return jobs[0] if jobs else None


def channel_run(channel_id: int, *, budget: float = RUN_BUDGET) -> int:
    """Carry out the channel's due jobs in order, a batch at a time (runs.py); return how many
    ran. A run that uses up its budget hands the channel back to the broker for the rest."""
    run = runs.Run(channel_id)
    deadline = time.monotonic() + budget
    ran = 0
    while ran_now := runs.run_batch(run, deadline=deadline):
        ran += ran_now
        if time.monotonic() > deadline:
            enqueue_channels([channel_id])
            break
    return ran


@transaction.atomic
def job_retry_now(*, job: PublicationJob) -> PublicationJob:
    """Run a failed job again now (a queued one waiting for its retry: now rather than later)."""
    job = PublicationJob.objects.select_for_update().get(pk=job.pk)
    if job.state == JobState.SUCCEEDED:
        raise PublishError("This job has succeeded; there is nothing to retry.")
    if job.state == JobState.RUNNING and leased(job.locked_until, timezone.now()):
        raise PublishError("This job is running now.")
    # An editor's decision stands: a failed job that it canceled (the post taken back or deleted)
    # is not run after all, nor one a later job of the post has superseded (an old unpublish would
    # take down a post published since). A queued job runs anyway: now rather than later is fine.
    if job.state == JobState.FAILED:
        if job.last_error.startswith(CANCELED_PREFIX):
            raise PublishError("This job was canceled by a change of the post; publish the post again instead.")
        if PublicationJob.objects.filter(post_id=job.post_id, id__gt=job.pk).exists():
            raise PublishError("A later job of this post has been written since; retrying this one would undo it.")
    job.state, job.next_attempt_at, job.finished_at, job.locked_until = JobState.QUEUED, timezone.now(), None, None
    job.save(update_fields=["state", "next_attempt_at", "finished_at", "locked_until", "updated_at"])
    transaction.on_commit(partial(enqueue_channels, [job.channel_id]))
    return job


def jobs_resume(*, channel_id: int, errors_starting: tuple[str, ...]) -> int:
    """Run again the channel's failed jobs whose error starts with one of `errors_starting` (a
    destination's "connect it" sentences, once it is connected again): the newest of each post only,
    as `job_retry_now` refuses an older one that would undo what a later one asked."""
    failed = PublicationJob.objects.filter(channel_id=channel_id, state=JobState.FAILED)
    failed = failed.filter(reduce(operator.or_, (Q(last_error__startswith=prefix) for prefix in errors_starting)))
    resumed = 0
    for job in failed.order_by("id"):
        try:
            job_retry_now(job=job)
        except PublishError:
            continue  # superseded by a later job of the post, or canceled meanwhile
        resumed += 1
    if resumed:
        logger.info("channel=%s connected again: %d jobs resumed", channel_id, resumed)
    return resumed
