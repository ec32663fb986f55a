"""A channel's run, batch by batch: up to BATCH of its due jobs claimed in one transaction, carried
out one after the other with the destination loaded once for the run, and their outcomes recorded
in one transaction (one UPDATE of the jobs, one of the posts they publish, one insert of their
events: the channel's version renewed once per statement, not three times per job).

What a crash leaves uncertain is one batch: jobs claimed, perhaps carried out, not recorded. Their
leases run out (or a worker back from the crash releases them at once) and they run again; every
destination recognises what an earlier attempt of the same job did (docs/publishing.md, "Nothing
published twice"), so nothing is lost and nothing is done twice.
"""

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Case, DateTimeField, F, OuterRef, Subquery, Value, When
from django.urls import reverse
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.destinations import (
    Destination,
    Document,
    InProgress,
    JobContext,
    Outcome,
    PublishError,
    destination_for,
    subject,
)
from apps.core.mail import tell_account_admins
from apps.core.outbox import lease_end, leased, retry_delay
from apps.publishing.models import UNFINISHED, JobAction, JobState, PublicationJob
from apps.publishing.workers import worker_identity

logger = logging.getLogger(__name__)

# Jobs claimed and recorded together: what one crash can leave uncertain, and how long a batch's
# first outcome waits for its record (and its post's `post.published`) at most, BATCH jobs.
BATCH = 20


@dataclass
class Result:
    """What came of one attempt of a job, before it is recorded."""

    job: PublicationJob
    outcome: Outcome | None = None
    error: str = ""
    permanent: bool = False
    retry_after: float | None = None
    progress: InProgress | None = None
    duration_ms: int = 0


def claim(channel_id: int, *, limit: int = BATCH) -> list[PublicationJob]:
    """Take the channel's oldest unfinished jobs, up to `limit`, as far as they are due and no
    worker holds them: the later jobs of the channel wait behind the first that is not, so a
    channel's jobs run one at a time, in order. The rows are locked while they are looked at, so of
    two workers that read the same jobs one takes them."""
    now = timezone.now()
    with transaction.atomic():
        head = PublicationJob.objects.select_for_update().filter(channel_id=channel_id, state__in=UNFINISHED)
        taken = []
        for job in head.order_by("id")[:limit]:
            if job.next_attempt_at > now or leased(job.locked_until, now):
                break
            taken.append(job)
        if not taken:
            return []
        # A job starts no new operation after PUBLISH_TIMEOUT and each operation times out after
        # it; the run starts no job whose deadline would pass the lease (startable).
        lease = lease_end(now, timeout=settings.PUBLISH_TIMEOUT, margin=10)
        dated = now.replace(microsecond=0)
        holder = worker_identity()
        PublicationJob.objects.filter(pk__in=[job.pk for job in taken]).update(
            state=JobState.RUNNING,
            attempts=F("attempts") + 1,
            locked_until=lease,
            # A first publication is dated when it is first claimed; every later attempt writes the same date.
            published_at=Case(
                When(action=JobAction.PUBLISH, published_at=None, then=Value(dated)),
                default=F("published_at"),
                output_field=DateTimeField(),
            ),
            locked_by=holder,
            updated_at=now,
        )
    for job in taken:
        job.state, job.attempts, job.locked_until, job.locked_by = JobState.RUNNING, job.attempts + 1, lease, holder
        if job.published_at is None and job.action == JobAction.PUBLISH:
            job.published_at = dated
    return taken


def startable(job: PublicationJob) -> bool:
    """Whether the job may start now: its attempt ends within its lease (it starts no operation
    after PUBLISH_TIMEOUT, each times out after PUBLISH_TIMEOUT), so its outcome and those of the
    batch before it are recorded while the leases still hold. The lease's margin leaves a batch a
    few seconds to start its jobs in; the rest wait for the next batch."""
    margin = timedelta(seconds=settings.PUBLISH_TIMEOUT * 2 + 5)
    return timezone.now() + margin < job.locked_until


def load_destination(channel_id: int) -> Destination:
    channel = Channel.objects.only("platform").get(pk=channel_id)
    return destination_for(
        channel_id=channel_id, platform=channel.platform, platform_name=channel.get_platform_display()
    )


def last_successes(jobs: list[PublicationJob]) -> dict[int, tuple[str, datetime | None]]:
    """For each job, where its post's file is after the post's last successful job on the channel,
    and the date it was published with: one query for a batch. A batch holds one job per post,
    so what it reads stays true until the batch is recorded."""
    succeeded = PublicationJob.objects.filter(
        post_id=OuterRef("post_id"), channel_id=OuterRef("channel_id"), state=JobState.SUCCEEDED
    ).order_by("-id")
    rows = (
        PublicationJob.objects.filter(pk__in=[job.pk for job in jobs])
        .annotate(
            previous_path=Subquery(succeeded.values("path")[:1]),
            previous_date=Subquery(succeeded.exclude(published_at=None).values("published_at")[:1]),
        )
        .values_list("pk", "previous_path", "previous_date")
    )
    return {pk: (path or "", date) for pk, path, date in rows}


def _wanted(job: PublicationJob, last: tuple[str, datetime | None]) -> tuple[int, str, datetime | None]:
    """What the job's document is asked for with: its post, its action, its publication date (the
    job's, else the post's last successful job's)."""
    return job.post_id, job.action, job.published_at or last[1]


# How old a document read for a batch may be when its job starts: a job's document is read again,
# with those of the jobs after it, once the batch has run this long since they were read (a slow
# remote). An edit made later than its job's start is not in it, as when each job read its own.
DOCUMENTS_FRESH = 1.0


class Documents:
    """The documents of a batch's jobs (None: the post is gone), read together: those of the jobs
    not started yet again once they are DOCUMENTS_FRESH seconds old."""

    def __init__(self, jobs: list[PublicationJob], last: dict[int, tuple[str, datetime | None]]) -> None:
        self.jobs, self.last = jobs, last
        self.read: dict[int, Document | None] = {}
        self.read_at = 0.0

    def of(self, index: int) -> Document | None:
        job = self.jobs[index]
        if job.pk not in self.read or time.monotonic() - self.read_at > DOCUMENTS_FRESH:
            rest = self.jobs[index:]
            found = subject().documents(wanted=[_wanted(later, self.last[later.pk]) for later in rest])
            self.read = dict(zip([later.pk for later in rest], found, strict=True))
            self.read_at = time.monotonic()
        return self.read[job.pk]


UNREAD = object()  # attempt()'s document is read when it is called


def _carry_out(
    job: PublicationJob, destination: Destination, last: tuple[str, datetime | None], document: Document | None
) -> Outcome:
    previous_path, _ = last
    context = JobContext(
        job_id=job.pk,
        post_id=job.post_id,
        action=job.action,
        title=job.title,
        previous_path=previous_path,
        deadline=time.monotonic() + settings.PUBLISH_TIMEOUT,
        attempt=job.attempts,
    )
    if job.action == JobAction.UNPUBLISH:
        return destination.unpublish(context, document)
    if document is None:
        raise PublishError("The post was deleted before it could be published.", permanent=True)
    return destination.publish(context, document)


class Run:
    """One run of a channel: its destination, loaded by the first job that needs it."""

    def __init__(self, channel_id: int) -> None:
        self.channel_id = channel_id
        self._destination: Destination | None = None

    def destination(self) -> Destination:
        if self._destination is None:
            self._destination = load_destination(self.channel_id)
        return self._destination

    def attempt(self, job: PublicationJob, last: tuple[str, datetime | None] | None = None, document=UNREAD) -> Result:
        """Carry out a claimed job (with its `last_successes` and its document where they were read
        for its batch); what came of it, not yet recorded."""
        started = time.monotonic()
        result = Result(job=job)
        last = last or last_successes([job])[job.pk]
        try:
            if document is UNREAD:
                document = Documents([job], {job.pk: last}).of(0)
            result.outcome = _carry_out(job, self.destination(), last, document)
        except InProgress as exc:
            result.progress = exc
        except PublishError as exc:
            result.error, result.permanent, result.retry_after = exc.message, exc.permanent, exc.retry_after
        except Exception as exc:  # a destination's bug must not leave the job running forever
            logger.exception("publication job=%s failed unexpectedly", job.pk)
            result.error = f"Unexpected error ({type(exc).__name__}); the details are in the worker's log."
        result.duration_ms = int((time.monotonic() - started) * 1000)
        return result


def _outcome_values(job: PublicationJob, result: Result, now: datetime) -> None:
    """Set the recorded job's fields from what came of its attempt."""
    job.locked_until = None
    if result.progress is not None:
        # The destination has more to do: the job stays the head of its channel's queue, due
        # again after the pause it asked for, and this attempt does not count.
        job.state, job.last_error = JobState.QUEUED, result.progress.message
        job.attempts = max(job.attempts - 1, 0)
        job.next_attempt_at = now + timedelta(seconds=result.progress.retry_after)
    elif result.outcome is not None:
        job.state, job.finished_at, job.last_error = JobState.SUCCEEDED, now, ""
        job.reference, job.path, job.url = result.outcome.reference, result.outcome.path, result.outcome.url
    elif result.permanent:
        job.state, job.finished_at, job.last_error = JobState.FAILED, now, result.error
    elif (delay := retry_delay(job.attempts, settings.PUBLISH_RETRY_DELAYS, at_least=result.retry_after)) is None:
        # The destination says what went wrong; the pipeline says what comes of it.
        job.state, job.finished_at = JobState.FAILED, now
        attempts = f"{job.attempts} attempt{'s' if job.attempts > 1 else ''}"
        job.last_error = f"{result.error} Gave up after {attempts}."
    else:
        # The schedule's delay, or longer where the destination asked for a longer pause.
        job.state = JobState.QUEUED
        job.next_attempt_at = now + timedelta(seconds=delay)
        job.last_error = f"{result.error} It will be tried again at {job.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC."


RECORDED_FIELDS = [
    "state",
    "locked_until",
    "last_error",
    "attempts",
    "next_attempt_at",
    "finished_at",
    "reference",
    "path",
    "url",
    "updated_at",
]


def _write(jobs: list[PublicationJob]) -> None:
    """Save the jobs' recorded fields in one UPDATE: a value all share is written as such, the
    others (a commit, a path) row by row. Django's bulk_update builds a CASE of every field for
    every row, which cost more CPU than the rest of the record."""
    if not jobs:
        return
    values = {}
    for name in RECORDED_FIELDS:
        distinct = {getattr(job, name) for job in jobs}
        if len(distinct) == 1:
            values[name] = distinct.pop()
        else:
            rows = (When(pk=job.pk, then=Value(getattr(job, name))) for job in jobs)
            values[name] = Case(*rows, output_field=PublicationJob._meta.get_field(name))
    PublicationJob.objects.filter(pk__in=[job.pk for job in jobs]).update(**values)


@transaction.atomic
def record(results: list[Result], *, unstarted: list[PublicationJob] = ()) -> list[PublicationJob]:
    """Record a batch's outcomes in one transaction, and give back the jobs it claimed and did not
    start (queued again, their attempt not counted). Returns the jobs as recorded, without those
    whose lease ran out first (another worker has taken them over: their outcome is not ours to
    write)."""
    claimed = {result.job.pk: result.job for result in results} | {job.pk: job for job in unstarted}
    # The lease is the lock: only its holder writes the outcome.
    held = {
        job.pk: job
        for job in PublicationJob.objects.select_for_update().filter(pk__in=claimed).order_by("id")
        if job.locked_until == claimed[job.pk].locked_until
    }
    now = timezone.now()
    recorded, released = [], []
    for result in results:
        current = held.get(result.job.pk)
        if current is None:
            logger.warning("publication job=%s outlived its lease; its outcome is not recorded", result.job.pk)
            continue
        _outcome_values(current, result, now)
        recorded.append(current)
    for job in unstarted:
        if (current := held.get(job.pk)) is not None:
            current.state, current.locked_until, current.attempts = JobState.QUEUED, None, max(current.attempts - 1, 0)
            released.append(current)
    for job in recorded + released:
        job.updated_at = now
    _write(recorded + released)
    succeeded = [job for job in recorded if job.state == JobState.SUCCEEDED]
    if succeeded:
        subject().confirmed(jobs=succeeded)
    for job in recorded:
        if job.state == JobState.FAILED:
            subject().failed(job=job)
            transaction.on_commit(partial(_tell_admins_failed, job.pk))
    return recorded


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


def log_recorded(results: list[Result], recorded: list[PublicationJob]) -> None:
    states = {job.pk: job.state for job in recorded}
    for result in results:
        job = result.job
        logger.info(
            "publication job=%s channel=%s post=%s action=%s attempt=%d state=%s duration_ms=%d%s",
            job.pk,
            job.channel_id,
            job.post_id,
            job.action,
            job.attempts,
            states.get(job.pk, "lease-lost"),
            result.duration_ms,
            f" error={result.error!r}" if result.error else "",
        )


def run_batch(run: Run, *, deadline: float) -> int:
    """Claim a batch of the run's channel, carry its jobs out and record them; how many ran. The
    batch ends early before a second job of a post already in it (that job reads what the first
    recorded: where its file is now, the date it was published with), after a job that did not
    succeed (one to retry, or with more to do, holds the later jobs back), at the run's deadline,
    or where a job could not end within its lease."""
    jobs = claim(run.channel_id)
    last = last_successes(jobs) if jobs else {}
    read = Documents(jobs, last)
    results: list[Result] = []
    posts: set[int] = set()
    for index, job in enumerate(jobs):
        # The first job always starts, as a job claimed alone would: a run that started none would
        # leave its channel to the sweeper.
        if job.post_id in posts or (results and (time.monotonic() > deadline or not startable(job))):
            break
        results.append(run.attempt(job, last[job.pk], read.of(index)))
        posts.add(job.post_id)
        if results[-1].outcome is None:
            break  # one to retry holds the later jobs back (and a failure's record comes first)
    unstarted = jobs[len(results) :]
    recorded = record(results, unstarted=unstarted) if jobs else []
    log_recorded(results, recorded)
    return len(results)
