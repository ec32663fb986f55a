"""The publishing pipeline with a fake destination (registered for the test as the git kind): what
a job's outcome does to its post, retries, the order of a channel's jobs, leases, the sweeper,
the content plan and the editor's changes. The git destination itself has tests of its own."""

import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core import destinations
from apps.core.destinations import DestinationKind, Document, JobContext, Outcome, PublishError
from apps.posts.content_plan import content_plan_run
from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create, post_delete, post_update_content
from apps.publishing import services
from apps.publishing.git.destination import KIND as GIT_KIND
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.services import channel_run, job_retry_now, jobs_sweep
from tests.conftest import requires_postgres, run_together
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ChannelFactory,
    PostFactory,
    PublicationJobFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

DELAYS = [60, 300, 1800, 7200]
TRANSIENT = PublishError("The repository did not answer in time.")
PERMANENT = PublishError("The repository refused the credentials.", permanent=True)


@dataclass(frozen=True)
class Call:
    job_id: int
    action: str
    document: Document | None


class FakeDestination:
    """Records every call and does what the test scripts, call after call: succeed (None), raise a
    PublishError or another exception, or run a function of the job and then do what it returns.
    Once the script is used up it does `default`."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.script: list = []
        self.default = None
        self._lock = threading.Lock()

    def _do(self, job: JobContext, document: Document | None) -> Outcome:
        with self._lock:
            self.calls.append(Call(job.job_id, job.action, document))
            step = self.script.pop(0) if self.script else self.default
        if callable(step):
            step = step(job)
        if isinstance(step, BaseException):
            raise step
        return Outcome(reference=f"ref-{job.job_id}", path=f"posts/{document.slug}.md" if document else "")

    def publish(self, job: JobContext, document: Document) -> Outcome:
        return self._do(job, document)

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        return self._do(job, document)

    def check(self) -> str:
        return "fake"

    def job_ids(self) -> list[int]:
        return [call.job_id for call in self.calls]


@pytest.fixture
def destination(monkeypatch) -> FakeDestination:
    """The fake, registered as the git kind for this test; the registry (with the real git kind
    registered at start-up) comes back afterwards."""
    fake = FakeDestination()
    monkeypatch.setattr(destinations, "_kinds", dict(destinations._kinds))
    destinations.register(DestinationKind(platform="git", load=lambda channel_id: fake, missing="No fake."))
    return fake


@pytest.fixture(autouse=True)
def handed_over(monkeypatch) -> list[list[int]]:
    """The channels handed to the broker, call by call (the tests run channels themselves)."""
    calls: list[list[int]] = []
    monkeypatch.setattr(services, "enqueue_channels", lambda channel_ids: calls.append(list(channel_ids)))
    return calls


@pytest.fixture(autouse=True)
def _mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.PUBLISH_RETRY_DELAYS = DELAYS


def git_channel(**kwargs):
    return ChannelFactory(platform="git", **kwargs)


def scheduled(channel, minutes: int = -1, **kwargs) -> Post:
    return PostFactory(
        channel=channel,
        publication_status="scheduled",
        scheduled_at=timezone.now() + timedelta(minutes=minutes),
        **kwargs,
    )


def published(channel, **kwargs) -> Post:
    return PostFactory(
        channel=channel, publication_status="published", published_at=timezone.now() - timedelta(days=1), **kwargs
    )


def job_of(post: Post, action: str = JobAction.PUBLISH) -> PublicationJob:
    return PublicationJob.objects.get(post_id=post.pk, action=action)


def time_comes(job: PublicationJob) -> None:
    """The job's retry is due: its next attempt time moves into the past (as the clock would)."""
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))


def status_of(post: Post) -> str:
    post.refresh_from_db()
    return post.publication_status


# --- 1. confirmation ---------------------------------------------------------------------------


def test_a_post_becomes_published_only_when_its_destination_confirms_dated_by_its_job_and_announced_once(
    destination, emitted
):
    channel = git_channel()
    post = post_create(channel=channel, title="Hello", body="Hi.")
    post_publish_now(post_id=post.pk)
    job = job_of(post)
    assert status_of(post) == "draft" and job.state == "queued"

    destination.script = [TRANSIENT]
    assert channel_run(channel.pk) == 1
    job.refresh_from_db()
    assert status_of(post) == "draft" and job.state == "queued" and job.attempts == 1
    assert emitted("post.published") == []

    time_comes(job)
    assert channel_run(channel.pk) == 1
    job.refresh_from_db()
    post.refresh_from_db()
    assert job.state == "succeeded" and job.reference == f"ref-{job.pk}" and job.last_error == ""
    assert post.publication_status == "published" and post.published_at == job.published_at
    # Both attempts wrote the same date: the one the post now has.
    assert [call.document.published_at for call in destination.calls] == [job.published_at] * 2

    # Later runs and a content plan run publish nothing again.
    assert channel_run(channel.pk) == 0
    content_plan_run()
    [event] = emitted("post.published")
    assert event["data"]["post"]["id"] == post.pk
    assert event["data"]["post"]["publication_status"] == "published"
    assert PublicationJob.objects.filter(post_id=post.pk).count() == 1


def test_publish_now_twice_before_the_job_runs_writes_one_job():
    channel = git_channel()
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    post_publish_now(post_id=post.pk)
    assert PublicationJob.objects.filter(post_id=post.pk).count() == 1


# --- 2. retries and failure for good --------------------------------------------------------------


def test_transient_failures_are_retried_on_the_schedule_then_the_job_fails_after_five_attempts(
    destination, settings, emitted, django_capture_on_commit_callbacks
):
    settings.PUBLISH_RETRY_DELAYS = [60, 300, 1800, 7200]
    channel = git_channel()
    AdminUserFactory(account=channel.account)
    post = PostFactory(channel=channel, title="Retried")
    post_publish_now(post_id=post.pk)
    job = job_of(post)
    destination.default = TRANSIENT
    for attempt, delay in enumerate(settings.PUBLISH_RETRY_DELAYS, start=1):
        before = timezone.now()
        channel_run(channel.pk)
        after = timezone.now()
        job.refresh_from_db()
        # What went wrong, then what comes of it.
        retry = f"It will be tried again at {job.next_attempt_at:%Y-%m-%d %H:%M:%S} UTC."
        assert (job.state, job.attempts, job.last_error) == ("queued", attempt, f"{TRANSIENT.message} {retry}")
        assert before + timedelta(seconds=delay) <= job.next_attempt_at <= after + timedelta(seconds=delay)
        assert channel_run(channel.pk) == 0  # not before its time
        time_comes(job)
    with django_capture_on_commit_callbacks(execute=True):
        channel_run(channel.pk)
    job.refresh_from_db()
    gave_up = f"{TRANSIENT.message} Gave up after 5 attempts."
    assert (job.state, job.attempts, job.last_error) == ("failed", 5, gave_up)
    assert job.finished_at is not None and job.locked_until is None
    assert len(destination.calls) == 5
    assert status_of(post) == "draft"
    [event] = emitted("post.failed")
    assert event["data"]["post"]["id"] == post.pk and event["data"]["post_id"] == post.pk
    assert event["data"]["publication"]["last_error"] == gave_up
    assert event["data"]["publication"]["state"] == "failed" and event["data"]["publication"]["attempts"] == 5
    assert len(mail.outbox) == 1


def test_an_unexpected_exception_is_retried_and_its_message_stays_in_the_log(destination, caplog):
    channel = git_channel()
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    destination.script = [RuntimeError("token ghp_s3cret leaked")]
    channel_run(channel.pk)
    job = job_of(post)
    assert (job.state, job.attempts) == ("queued", 1)
    assert job.last_error.startswith("Unexpected error (RuntimeError)") and "s3cret" not in job.last_error
    assert "ghp_s3cret leaked" in caplog.text  # for the operator, with its traceback
    time_comes(job)
    channel_run(channel.pk)
    assert job_of(post).state == "succeeded" and status_of(post) == "published"


def test_a_permanent_error_fails_the_job_at_once_and_emails_the_accounts_active_admins_with_the_post_and_error(
    destination, emitted, django_capture_on_commit_callbacks
):
    account = AccountFactory()
    admin = AdminUserFactory(account=account, email="admin@example.com")
    AdminUserFactory(account=account, email="gone@example.com", status="inactive")
    UserFactory(account=account, email="editor@example.com")
    AdminUserFactory(email="other-account@example.com")
    channel = git_channel(account=account, title="Site")
    post = PostFactory(channel=channel, title="Launch day")
    post_publish_now(post_id=post.pk)
    destination.default = PERMANENT
    with django_capture_on_commit_callbacks(execute=True):
        channel_run(channel.pk)
    job = job_of(post)
    assert (job.state, job.attempts, job.last_error) == ("failed", 1, PERMANENT.message)
    assert status_of(post) == "draft"
    [event] = emitted("post.failed")
    assert event["data"]["publication"]["last_error"] == PERMANENT.message
    assert event["data"]["post"]["id"] == post.pk
    [message] = mail.outbox
    assert message.to == [admin.email]
    assert "Launch day" in message.subject and "Launch day" in message.body
    assert PERMANENT.message in message.body
    assert f"/publishing/publicationjob/{job.pk}/" in message.body


def test_a_deleted_posts_unpublish_that_fails_for_good_reports_a_null_post_with_its_id_and_title(
    destination, emitted, django_capture_on_commit_callbacks
):
    account = AccountFactory()
    AdminUserFactory(account=account)
    channel = git_channel(account=account)
    post = published(channel, title="Old news")
    post_id = post.pk
    post_delete(post_id=post_id)
    destination.default = PERMANENT
    with django_capture_on_commit_callbacks(execute=True):
        channel_run(channel.pk)
    job = PublicationJob.objects.get(post_id=post_id)
    assert (job.action, job.state) == ("unpublish", "failed")
    assert destination.calls == [Call(job.pk, "unpublish", None)]
    [event] = emitted("post.failed")
    assert event["data"]["post"] is None and event["data"]["post_id"] == post_id
    assert event["data"]["publication"]["last_error"] == PERMANENT.message
    [message] = mail.outbox
    assert "Old news" in message.body and PERMANENT.message in message.body


def test_a_canceled_job_sends_no_email_and_no_failure_event(emitted, django_capture_on_commit_callbacks):
    account = AccountFactory()
    AdminUserFactory(account=account)
    post = scheduled(git_channel(account=account))
    content_plan_run()
    with django_capture_on_commit_callbacks(execute=True):
        post_set_status(post_id=post.pk, status="draft")
    assert job_of(post).state == "failed"
    assert mail.outbox == [] and emitted("post.failed") == []


# --- 3. one at a time per channel, in order ------------------------------------------------------


def test_a_channels_second_job_waits_behind_the_first_waiting_for_its_retry_while_another_channel_runs(
    destination,
):
    first_channel, other_channel = git_channel(), git_channel()
    first, second = PostFactory(channel=first_channel), PostFactory(channel=first_channel)
    other = PostFactory(channel=other_channel)
    for post in (first, second, other):
        post_publish_now(post_id=post.pk)
    first_job, second_job, other_job = job_of(first), job_of(second), job_of(other)
    destination.script = [TRANSIENT]

    assert channel_run(first_channel.pk) == 1  # the first fails; the second waits behind it
    assert job_of(second).state == "queued" and job_of(second).attempts == 0
    assert channel_run(other_channel.pk) == 1
    assert job_of(other).state == "succeeded"
    assert channel_run(first_channel.pk) == 0

    time_comes(first_job)
    assert channel_run(first_channel.pk) == 2
    assert destination.job_ids() == [first_job.pk, other_job.pk, first_job.pk, second_job.pk]
    assert status_of(first) == status_of(second) == status_of(other) == "published"


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_three_workers_running_the_same_channel_at_once_never_run_a_job_twice(destination):
    channel = git_channel()
    jobs = [PublicationJobFactory(channel=channel) for _ in range(20)]

    def slowly(job):
        time.sleep(0.005)  # widens the window between a claim and its outcome
        return None  # success

    destination.default = slowly

    def drain():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and PublicationJob.objects.filter(state__in=["queued", "running"]).exists():
            channel_run(channel.pk)
        return True

    assert run_together([drain, drain, drain]) == [True, True, True]
    assert Counter(destination.job_ids()) == Counter({job.pk: 1 for job in jobs})
    # ...and in the order they were written.
    assert destination.job_ids() == [job.pk for job in jobs]
    assert set(PublicationJob.objects.values_list("state", "attempts")) == {("succeeded", 1)}


# --- 4. leases -------------------------------------------------------------------------------------


def test_a_job_whose_worker_died_is_claimed_again_and_one_with_a_live_lease_is_not(destination, handed_over):
    dead_channel, live_channel = git_channel(), git_channel()
    now = timezone.now()
    dead = PublicationJobFactory(
        channel=dead_channel,
        state="running",
        attempts=1,
        locked_until=now - timedelta(seconds=1),
        published_at=now.replace(microsecond=0) - timedelta(minutes=5),
    )
    live = PublicationJobFactory(
        channel=live_channel, state="running", attempts=1, locked_until=now + timedelta(minutes=1)
    )

    assert jobs_sweep() == 1
    assert handed_over == [[dead_channel.pk]]

    assert channel_run(live_channel.pk) == 0
    assert channel_run(dead_channel.pk) == 1
    dead.refresh_from_db()
    live.refresh_from_db()
    assert (dead.state, dead.attempts, dead.locked_until) == ("succeeded", 2, None)
    # The date the dead worker gave the destination is kept.
    assert destination.calls[0].document.published_at == dead.published_at
    assert (live.state, live.attempts) == ("running", 1)
    assert destination.job_ids() == [dead.pk]


def test_an_outcome_recorded_after_the_lease_was_taken_over_is_dropped_and_the_later_holders_stands(
    destination, emitted
):
    channel = git_channel()
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    job = job_of(post)

    def overtaken(context):
        # This worker stalls past its lease; another worker takes the job over and publishes it.
        PublicationJob.objects.filter(pk=context.job_id).update(locked_until=timezone.now() - timedelta(seconds=1))
        assert channel_run(channel.pk) == 1
        return PERMANENT  # ...then the stalled worker comes back with a failure

    destination.script = [overtaken]
    channel_run(channel.pk)
    job.refresh_from_db()
    assert (job.state, job.attempts, job.last_error) == ("succeeded", 2, "")
    assert status_of(post) == "published"
    assert emitted("post.failed") == [] and len(emitted("post.published")) == 1


# --- 5. the sweeper --------------------------------------------------------------------------------


def test_the_sweeper_hands_over_exactly_the_channels_with_due_jobs_no_worker_holds(handed_over):
    now = timezone.now()
    due, retry_later, held, expired, finished = (git_channel() for _ in range(5))
    PublicationJobFactory(channel=due, next_attempt_at=now - timedelta(seconds=5))
    PublicationJobFactory(channel=retry_later, attempts=1, next_attempt_at=now + timedelta(minutes=1))
    PublicationJobFactory(
        channel=held,
        state="running",
        attempts=1,
        next_attempt_at=now - timedelta(minutes=1),
        locked_until=now + timedelta(minutes=1),
    )
    PublicationJobFactory(
        channel=expired,
        state="running",
        attempts=1,
        next_attempt_at=now - timedelta(minutes=1),
        locked_until=now - timedelta(seconds=1),
    )
    PublicationJobFactory(channel=finished, state="succeeded", next_attempt_at=now - timedelta(minutes=1))
    PublicationJobFactory(channel=finished, state="failed", next_attempt_at=now - timedelta(minutes=1))

    assert jobs_sweep() == 2
    assert handed_over == [sorted([due.pk, expired.pk])]


def test_the_sweeper_hands_over_nothing_when_nothing_is_due(handed_over):
    PublicationJobFactory(next_attempt_at=timezone.now() + timedelta(minutes=1))
    assert jobs_sweep() == 0
    assert handed_over == []


# --- 6. the content plan ---------------------------------------------------------------------------


def test_a_due_scheduled_git_post_is_handed_over_once_and_published_when_the_destination_confirms(destination, emitted):
    channel = git_channel()
    post = scheduled(channel)
    first = content_plan_run()
    assert first.handed_over == 1 and first.published == 0
    job = job_of(post)
    assert job.scheduled_for == post.scheduled_at and job.state == "queued"
    assert status_of(post) == "scheduled"

    assert content_plan_run().moved == 0
    assert PublicationJob.objects.filter(post_id=post.pk).count() == 1
    assert emitted("post.published") == []

    channel_run(channel.pk)
    job.refresh_from_db()
    post.refresh_from_db()
    assert post.publication_status == "published" and post.published_at == job.published_at
    assert len(emitted("post.published")) == 1


def test_rescheduling_a_post_whose_job_failed_hands_the_new_time_over_again(destination):
    channel = git_channel()
    post = scheduled(channel)
    content_plan_run()
    destination.script = [PERMANENT]
    channel_run(channel.pk)
    assert job_of(post).state == "failed"
    # The failed time is not handed over again by itself...
    assert content_plan_run().moved == 0
    assert status_of(post) == "scheduled"

    later = timezone.now() + timedelta(hours=1)
    post_set_status(post_id=post.pk, status="scheduled", scheduled_at=later)
    assert content_plan_run().moved == 0  # not before the new time
    assert content_plan_run(now=later + timedelta(seconds=1)).handed_over == 1
    new_job = PublicationJob.objects.filter(post_id=post.pk).order_by("id").last()
    assert new_job.scheduled_for == later and new_job.state == "queued"
    channel_run(channel.pk)
    assert status_of(post) == "published"


def test_rescheduling_a_handed_over_post_whose_job_waits_for_its_retry_withdraws_it_until_the_new_time(destination):
    channel = git_channel()
    post = scheduled(channel)
    content_plan_run()
    destination.script = [TRANSIENT]
    channel_run(channel.pk)
    old_job = job_of(post)
    assert old_job.state == "queued"

    later = timezone.now() + timedelta(hours=1)
    post_set_status(post_id=post.pk, status="scheduled", scheduled_at=later)
    old_job.refresh_from_db()
    assert old_job.state == "failed" and old_job.last_error.startswith("Canceled")
    time_comes(old_job)
    # The attempt may have put the post up with its answer lost: an unpublish makes sure it is not.
    assert channel_run(channel.pk) == 1
    assert job_of(post, JobAction.UNPUBLISH).state == "succeeded"
    assert status_of(post) == "scheduled"  # not published an hour early

    assert content_plan_run(now=later + timedelta(seconds=1)).handed_over == 1
    channel_run(channel.pk)
    assert status_of(post) == "published"
    assert [call.action for call in destination.calls] == ["publish", "unpublish", "publish"]


def test_a_due_post_whose_publish_now_job_waits_for_its_retry_gets_no_second_job_nor_counts_as_handed_over(
    destination,
):
    channel = git_channel()
    post = scheduled(channel, minutes=5)
    post_publish_now(post_id=post.pk)
    destination.script = [TRANSIENT]
    channel_run(channel.pk)
    later = timezone.now() + timedelta(minutes=6)
    for _ in range(2):
        assert content_plan_run(now=later).moved == 0
    assert PublicationJob.objects.filter(post_id=post.pk).count() == 1


def test_the_content_plan_still_publishes_blog_posts_itself_and_hands_api_posts_to_the_external_system(emitted):
    blog, api, git = (
        scheduled(ChannelFactory(platform="blog")),
        scheduled(ChannelFactory(platform="api")),
        scheduled(git_channel()),
    )
    result = content_plan_run()
    assert (result.published, result.publishing_pending, result.handed_over) == (1, 1, 1)
    assert status_of(blog) == "published" and blog.published_at is not None
    assert status_of(api) == "publishing_pending"
    assert status_of(git) == "scheduled"
    assert [PublicationJob.objects.get().post_id] == [git.pk]
    assert [e["data"]["post"]["id"] for e in emitted("post.published")] == [blog.pk]
    assert [e["data"]["post"]["id"] for e in emitted("post.publishing_pending")] == [api.pk]


# --- 7. the editor's changes -----------------------------------------------------------------------


def test_taking_a_handed_over_scheduled_post_back_to_draft_cancels_its_queued_job(destination):
    channel = git_channel()
    post = scheduled(channel)
    content_plan_run()
    post_set_status(post_id=post.pk, status="draft")
    job = job_of(post)
    assert job.state == "failed" and job.last_error.startswith("Canceled") and job.finished_at is not None
    assert status_of(post) == "draft"
    assert channel_run(channel.pk) == 0
    assert destination.calls == []


def test_taking_a_published_post_back_to_draft_says_so_at_once_and_queues_its_unpublish(destination, emitted):
    channel = git_channel()
    post = published(channel)
    post_set_status(post_id=post.pk, status="draft")
    assert status_of(post) == "draft" and post.published_at is None
    [event] = emitted("post.unpublished")
    assert event["data"]["post"]["id"] == post.pk
    job = job_of(post, JobAction.UNPUBLISH)
    assert job.state == "queued"
    channel_run(channel.pk)
    assert [(call.job_id, call.action) for call in destination.calls] == [(job.pk, "unpublish")]
    assert job_of(post, JobAction.UNPUBLISH).state == "succeeded"
    assert len(emitted("post.unpublished")) == 1 and emitted("post.published") == []


def test_a_content_change_of_a_published_git_post_queues_an_update_and_sends_post_updated(destination, emitted):
    channel = git_channel()
    post = published(channel, title="Before")
    post_update_content(post=post, title="After")
    [event] = emitted("post.updated")
    assert event["data"]["post"]["title"] == "After"
    job = job_of(post, JobAction.UPDATE)
    channel_run(channel.pk)
    [call] = destination.calls
    assert (call.job_id, call.action, call.document.title) == (job.pk, "update", "After")
    assert call.document.updated_at is not None
    assert job_of(post, JobAction.UPDATE).state == "succeeded" and status_of(post) == "published"


def test_a_save_that_changes_nothing_changes_nothing_even_with_crlf_line_ends(emitted):
    channel = git_channel()
    post = published(channel, title="Same", body="line one\nline two\n", teaser="Tease", slug="same")
    post.meta_title, post.meta_description = "Meta", "Described"
    post.save()
    updated_at = Post.objects.get(pk=post.pk).updated_at
    _, changed = post_update_content(
        post=post,
        title="Same",
        body="line one\r\nline two\r\n",
        teaser="Tease",
        slug="same",
        meta_title="Meta",
        meta_description="Described",
        tags=[],
        media=[],
    )
    assert changed == []
    post.refresh_from_db()
    assert post.body == "line one\nline two\n" and post.updated_at == updated_at
    assert emitted("post.updated") == [] and not PublicationJob.objects.exists()


# --- 8. channels without a destination ---------------------------------------------------------------


def test_a_git_channel_without_a_repository_fails_its_due_posts_for_good_saying_what_to_set_up(emitted):
    channel = git_channel()  # the real git kind, and no GitDestination
    post = scheduled(channel)
    content_plan_run()
    channel_run(channel.pk)
    job = job_of(post)
    assert (job.state, job.attempts, job.last_error) == ("failed", 1, GIT_KIND.missing)
    assert status_of(post) == "scheduled"
    [event] = emitted("post.failed")
    assert event["data"]["publication"]["last_error"] == GIT_KIND.missing


def test_a_channel_whose_destination_is_not_installed_fails_its_due_posts_for_good_saying_so(monkeypatch):
    # As on a server without the LinkedIn destination's app.
    monkeypatch.delitem(destinations._kinds, "linkedin")
    channel = ChannelFactory(platform="linkedin")
    post = scheduled(channel)
    assert content_plan_run().handed_over == 1
    channel_run(channel.pk)
    job = job_of(post)
    assert (job.state, job.attempts) == ("failed", 1)
    assert (
        job.last_error == "linkedin channels cannot publish on this server yet: no linkedin destination is installed "
        "(its package is not in INSTALLED_APPS)."
    )


# --- 9. retry now ---------------------------------------------------------------------------------


def test_retry_now_queues_a_failed_job_again_and_the_next_run_carries_it_out(
    destination, handed_over, django_capture_on_commit_callbacks
):
    channel = git_channel()
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    destination.script = [PERMANENT]
    channel_run(channel.pk)
    job = job_of(post)
    assert job.state == "failed"

    handed_over.clear()
    with django_capture_on_commit_callbacks(execute=True):
        job_retry_now(job=job)
    job.refresh_from_db()
    assert (job.state, job.finished_at) == ("queued", None) and job.next_attempt_at <= timezone.now()
    assert handed_over == [[channel.pk]]
    assert channel_run(channel.pk) == 1
    job.refresh_from_db()
    assert (job.state, job.attempts, job.last_error) == ("succeeded", 2, "")
    assert status_of(post) == "published"


def test_retry_now_refuses_a_job_that_succeeded(destination):
    channel = git_channel()
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    job = job_of(post)
    with pytest.raises(PublishError, match="succeeded"):
        job_retry_now(job=job)
    job.refresh_from_db()
    assert job.state == "succeeded" and channel_run(channel.pk) == 0
    assert len(destination.calls) == 1


def test_retry_now_refuses_a_canceled_job_so_a_post_taken_back_to_draft_is_not_published(destination):
    channel = git_channel()
    post = scheduled(channel)
    content_plan_run()
    post_set_status(post_id=post.pk, status="draft")
    job = job_of(post)
    with pytest.raises(PublishError, match="canceled"):
        job_retry_now(job=job)
    assert channel_run(channel.pk) == 0
    assert status_of(post) == "draft" and destination.calls == []


def test_retry_now_refuses_a_failed_job_a_later_job_of_the_post_has_superseded(destination):
    channel = git_channel()
    post = published(channel)
    post_set_status(post_id=post.pk, status="draft")
    destination.script = [PERMANENT]
    channel_run(channel.pk)
    unpublish = job_of(post, JobAction.UNPUBLISH)
    assert unpublish.state == "failed"
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    assert status_of(post) == "published"
    # Retrying the old unpublish would take the post down while it stays `published`.
    with pytest.raises(PublishError, match="later job"):
        job_retry_now(job=unpublish)
    assert channel_run(channel.pk) == 0
    assert [call.action for call in destination.calls] == ["unpublish", "publish"]


def test_setting_a_draft_to_draft_calls_off_its_publish_now():
    channel = ChannelFactory(platform="git")
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    post_set_status(post_id=post.pk, status="draft")
    job = PublicationJob.objects.get(post_id=post.pk)
    assert job.state == "failed" and job.last_error.startswith("Canceled:")


def test_a_due_post_whose_publish_now_waits_is_handed_over_once_with_it():
    channel = ChannelFactory(platform="git")
    post = PostFactory(channel=channel)
    post_publish_now(post_id=post.pk)
    Post.objects.filter(pk=post.pk).update(
        publication_status="scheduled", scheduled_at=timezone.now() - timedelta(minutes=1)
    )
    assert content_plan_run().handed_over == 0
    job = PublicationJob.objects.get(post_id=post.pk)
    assert job.scheduled_for == Post.objects.get(pk=post.pk).scheduled_at
    # The next run sees the scheduled time handed over: it does not pick the post again.
    with CaptureQueriesContext(connection) as queries:
        content_plan_run()
    assert not [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
