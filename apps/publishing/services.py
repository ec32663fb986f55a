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
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial, reduce

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.destinations import (
    Destination,
    InProgress,
    JobContext,
    Outcome,
    PublishError,
    destination_for,
    subject,
)
from apps.core.mail import tell_account_admins
from apps.core.outbox import lease_end, leased, retry_delay, unleased
from apps.publishing.models import UNFINISHED, JobAction, JobState, PublicationJob
from apps.publishing.workers import worker_identity

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
    """Take the channel's oldest unfinished job, when it is due and no worker holds it. The later
    jobs of the channel wait behind it, so the channel's jobs run one at a time, in order."""
    now = timezone.now()
    head = PublicationJob.objects.filter(channel_id=channel_id, state__in=UNFINISHED).order_by("id").first()
    if head is None or head.next_attempt_at > now:
        return None
    if leased(head.locked_until, now):
        return None
    # A job starts no new operation after PUBLISH_TIMEOUT and each operation times out after it.
    lease = lease_end(now, timeout=settings.PUBLISH_TIMEOUT, margin=10)
    published_at = head.published_at
    if published_at is None and head.action == JobAction.PUBLISH:
        published_at = now.replace(microsecond=0)
    # A conditional UPDATE is atomic: of two workers that read the same head, one wins.
    taken = PublicationJob.objects.filter(
        pk=head.pk, state=head.state, attempts=head.attempts, locked_until=head.locked_until
    ).update(
        state=JobState.RUNNING,
        attempts=head.attempts + 1,
        locked_until=lease,
        published_at=published_at,
        locked_by=worker_identity(),
        updated_at=now,
    )
    if not taken:
        return None
    head.state, head.attempts, head.locked_until, head.published_at, head.locked_by = (
        JobState.RUNNING,
        head.attempts + 1,
        lease,
        published_at,
        worker_identity(),
    )
    return head


def _last_success(job: PublicationJob) -> tuple[str, datetime | None]:
    """Where the post's file is after its last successful job, and the date it was published with."""
    succeeded = PublicationJob.objects.filter(
        post_id=job.post_id, channel_id=job.channel_id, state=JobState.SUCCEEDED
    ).order_by("-id")
    path = succeeded.values_list("path", flat=True).first() or ""
    published_at = succeeded.exclude(published_at=None).values_list("published_at", flat=True).first()
    return path, published_at


def _destination(job: PublicationJob) -> Destination:
    channel = Channel.objects.only("platform").get(pk=job.channel_id)
    return destination_for(
        channel_id=job.channel_id, platform=channel.platform, platform_name=channel.get_platform_display()
    )


def _carry_out(job: PublicationJob) -> Outcome:
    destination = _destination(job)
    previous_path, published_at = _last_success(job)
    document = subject().document(post_id=job.post_id, action=job.action, published_at=job.published_at or published_at)
    context = JobContext(
        job_id=job.pk,
        post_id=job.post_id,
        action=job.action,
        title=job.title,
        previous_path=previous_path,
        deadline=time.monotonic() + settings.PUBLISH_TIMEOUT,
    )
    if job.action == JobAction.UNPUBLISH:
        return destination.unpublish(context, document)
    if document is None:
        raise PublishError("The post was deleted before it could be published.", permanent=True)
    return destination.publish(context, document)


def job_run(job: PublicationJob) -> PublicationJob | None:
    """Carry out a claimed job and record its outcome; return the job as recorded (None when its
    lease ran out first and another worker took it over)."""
    started = time.monotonic()
    outcome, error, permanent, retry_after, progress = None, "", False, None, None
    try:
        outcome = _carry_out(job)
    except InProgress as exc:
        progress = exc
    except PublishError as exc:
        error, permanent, retry_after = exc.message, exc.permanent, exc.retry_after
    except Exception as exc:  # a destination's bug must not leave the job running forever
        logger.exception("publication job=%s failed unexpectedly", job.pk)
        error = f"Unexpected error ({type(exc).__name__}); the details are in the worker's log."
    if progress is not None:
        recorded = _record_progress(job, progress)
    else:
        recorded = _record(job, outcome=outcome, error=error, permanent=permanent, retry_after=retry_after)
    logger.info(
        "publication job=%s channel=%s post=%s action=%s attempt=%d state=%s duration_ms=%d%s",
        job.pk,
        job.channel_id,
        job.post_id,
        job.action,
        job.attempts,
        recorded.state if recorded else "lease-lost",
        int((time.monotonic() - started) * 1000),
        f" error={error!r}" if error else "",
    )
    return recorded


@transaction.atomic
def _record(
    job: PublicationJob, *, outcome: Outcome | None, error: str, permanent: bool, retry_after: float | None = None
) -> PublicationJob | None:
    # The lease is the lock: only its holder writes the outcome.
    current = PublicationJob.objects.select_for_update().filter(pk=job.pk, locked_until=job.locked_until).first()
    if current is None:
        logger.warning("publication job=%s outlived its lease; its outcome is not recorded", job.pk)
        return None
    now = timezone.now()
    current.locked_until = None
    if outcome is not None:
        current.state, current.finished_at, current.last_error = JobState.SUCCEEDED, now, ""
        current.reference, current.path, current.url = outcome.reference, outcome.path, outcome.url
    elif permanent:
        current.state, current.finished_at, current.last_error = JobState.FAILED, now, error
    elif (delay := retry_delay(current.attempts, settings.PUBLISH_RETRY_DELAYS, at_least=retry_after)) is None:
        # The destination says what went wrong; the pipeline says what comes of it.
        current.state, current.finished_at = JobState.FAILED, now
        attempts = f"{current.attempts} attempt{'s' if current.attempts > 1 else ''}"
        current.last_error = f"{error} Gave up after {attempts}."
    else:
        # The schedule's delay, or longer where the destination asked for a longer pause.
        current.state = JobState.QUEUED
        current.next_attempt_at = now + timedelta(seconds=delay)
        current.last_error = f"{error} It will be tried again at {current.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC."
    current.save()
    if current.state == JobState.SUCCEEDED:
        subject().confirmed(job=current)
    elif current.state == JobState.FAILED:
        subject().failed(job=current)
        transaction.on_commit(partial(_tell_admins_failed, current.pk))
    return current


@transaction.atomic
def _record_progress(job: PublicationJob, progress: InProgress) -> PublicationJob | None:
    """The destination has more to do: the job stays the head of its channel's queue, due again
    after the pause it asked for, and this attempt does not count against the retry schedule."""
    current = PublicationJob.objects.select_for_update().filter(pk=job.pk, locked_until=job.locked_until).first()
    if current is None:
        logger.warning("publication job=%s outlived its lease; its progress is not recorded", job.pk)
        return None
    current.state, current.locked_until, current.last_error = JobState.QUEUED, None, progress.message
    current.attempts = max(current.attempts - 1, 0)
    current.next_attempt_at = timezone.now() + timedelta(seconds=progress.retry_after)
    current.save(update_fields=["state", "locked_until", "last_error", "attempts", "next_attempt_at", "updated_at"])
    return current


def channel_run(channel_id: int, *, budget: float = RUN_BUDGET) -> int:
    """Carry out the channel's due jobs one after the other; return how many ran. A run that uses
    up its budget hands the channel back to the broker for the rest."""
    started = time.monotonic()
    ran = 0
    while (job := _claim_head(channel_id)) is not None:
        job_run(job)
        ran += 1
        if time.monotonic() - started > budget:
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


def _failure_links(job: PublicationJob) -> list[tuple[str, str]]:
    """Where an admin fixes what failed: the pages of the post (and its story), then its channel's."""
    channel = ("The channel", reverse("admin:channels_channel_change", args=[job.channel_id]))
    pages = [*subject().links(job=job), channel]
    return [(label, f"{settings.SITE_URL}{path}") for label, path in pages]


def _tell_admins_failed(job_id: int) -> None:
    job = PublicationJob.objects.select_related("channel__account").filter(pk=job_id).first()
    if job is None:
        return
    tell_account_admins(
        account=job.channel.account,
        template="publishing/job_failed_email",
        context={"job": job, "links": _failure_links(job)},
        page=("admin:publishing_publicationjob_change", job.pk),
    )
