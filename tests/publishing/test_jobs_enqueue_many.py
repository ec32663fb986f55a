"""Many jobs written at once (jobs_enqueue_many, the content plan's batches): the same jobs
jobs_enqueue writes, in one statement on PostgreSQL, with its rules: a post whose job of the same
action is queued gets no second one (its scheduled time moves to the queued job), one job per post
and action, in the order given, and the channels handed to the broker after commit."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.publishing import services
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.services import MANY_MIN_JOBS, JobInput, jobs_enqueue, jobs_enqueue_many
from tests.conftest import requires_postgres
from tests.factories import ChannelFactory, PostFactory, PublicationJobFactory

pytestmark = pytest.mark.django_db

# What a job says, without what the database numbers or the clock sets.
SAID = ("channel_id", "post_id", "title", "action", "state", "scheduled_for", "attempts", "locked_until", "locked_by")
SAID += ("last_error", "reference", "path", "url", "published_at", "finished_at")


class RolledBack(Exception):
    pass


@pytest.fixture
def handed_over(monkeypatch) -> list[list[int]]:
    calls: list[list[int]] = []
    monkeypatch.setattr(services, "enqueue_channels", lambda channel_ids: calls.append(list(channel_ids)))
    return calls


@pytest.fixture
def batch() -> tuple[list[JobInput], PublicationJob]:
    """MANY_MIN_JOBS + 2 publish jobs' inputs over two channels, scheduled, one with a title
    beyond the job's 300 characters (a newsletter's subject may be); and a queued publish job of
    the first post."""
    git, linkedin = ChannelFactory(platform="git"), ChannelFactory(platform="linkedin")
    at = timezone.now().replace(microsecond=0) - timedelta(minutes=5)
    items = []
    for number in range(MANY_MIN_JOBS + 2):
        channel = (git, linkedin)[number % 2]
        post = PostFactory(channel=channel, title=f"Post {number}")
        items.append(
            JobInput(
                channel_id=channel.pk,
                post_id=post.pk,
                title=post.title + ("x" * 400 if number == 7 else ""),
                action=JobAction.PUBLISH,
                scheduled_for=at + timedelta(seconds=number),
            )
        )
    queued = PublicationJobFactory(channel=git, post_id=items[0].post_id, title=items[0].title)
    return items, queued


def written(enqueue, items) -> tuple[int, list[tuple], list[tuple]]:
    """What `enqueue` writes for `items`, rolled back after: (how many jobs it says it wrote, the
    jobs in the order of their ids, each job as it is then)."""
    try:
        with transaction.atomic():
            count = enqueue(items=items)
            count = count if isinstance(count, int) else len(count)
            jobs = PublicationJob.objects.order_by("id")
            new = list(jobs.filter(created_at__gte=timezone.now() - timedelta(minutes=1)).values_list(*SAID))
            every = list(jobs.values_list(*SAID))
            raise RolledBack
    except RolledBack:
        return count, new, every


def test_many_jobs_are_the_jobs_jobs_enqueue_writes_one_by_one(batch, handed_over):
    items, _ = batch
    many = written(jobs_enqueue_many, items)
    assert many == written(jobs_enqueue, items)
    count, new, every = many
    # The first post's queued job serves its scheduled time: no second job, not counted.
    assert count == len(items) - 1 == len(new) - 1  # the queued job, made by the fixture, is new too
    assert [job[1] for job in every] == [item.post_id for item in items]
    assert every[0][5] == items[0].scheduled_for
    assert {len(job[2]) for job in every} == {len("Post 100"), len("Post 10"), len("Post 1"), 300}


def test_many_jobs_hand_their_channels_to_the_broker_after_commit(
    batch, handed_over, django_capture_on_commit_callbacks
):
    items, _ = batch
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert jobs_enqueue_many(items=items) == len(items) - 1
        assert handed_over == []
    assert handed_over == [sorted({item.channel_id for item in items})]


def test_the_same_post_twice_gets_one_job():
    channel = ChannelFactory(platform="git")
    posts = PostFactory.create_batch(MANY_MIN_JOBS, channel=channel)
    items = [JobInput(channel_id=channel.pk, post_id=p.pk, title=p.title, action=JobAction.PUBLISH) for p in posts]
    with transaction.atomic():
        assert jobs_enqueue_many(items=[*items, items[3]]) == len(items)
    assert PublicationJob.objects.filter(post_id=posts[3].pk).count() == 1


@requires_postgres
def test_many_jobs_are_written_in_one_statement_on_postgresql(batch, handed_over):
    items, _ = batch
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        jobs_enqueue_many(items=items)
    assert len(queries.captured_queries) == 1
