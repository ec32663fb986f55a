"""The content plan's crash bound: a run killed with SIGKILL in the middle of a batch (its
transaction open, some of the batch's posts already moved and their events written in it) leaves
the batches it committed as they are and loses the one it was in whole; the next run moves the
rest. Every due post is moved once, with one event and one delivery, and each post of a destination
channel gets one publish job."""

import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.posts.content_plan import content_plan_run
from apps.posts.models import ApiPublication, Post
from apps.publishing.models import PublicationJob
from apps.webhooks.models import Delivery, Event
from tests.conftest import database_url, requires_postgres, wait_until
from tests.factories import AccountFactory, ChannelFactory, PostFactory, WebhookEndpointFactory

BATCH = 4
RUN = (
    "import django; django.setup(); from apps.posts.content_plan import content_plan_run; "
    f"content_plan_run(batch_size={BATCH})"
)


def _due(channel, at, n: int) -> list[Post]:
    return [PostFactory(channel=channel, publication_status="scheduled", scheduled_at=at) for _ in range(n)]


def _start_run() -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "config.settings"}
    return subprocess.Popen(
        [sys.executable, "-c", RUN],
        env=env,
        cwd=settings.BASE_DIR,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _waiting_backends() -> list[int]:
    """The other sessions of the test database waiting for a lock (the run, stopped in its batch)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND wait_event_type = 'Lock'"
        )
        return [pid for (pid,) in cursor.fetchall()]


def _backend_gone(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0] == 0


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_killed_in_the_middle_of_a_batch_loses_nothing_and_moves_nothing_twice():
    account = AccountFactory()
    WebhookEndpointFactory(account=account)
    blog, held = ChannelFactory(account=account, platform="blog"), ChannelFactory(account=account, platform="blog")
    feed, docs = ChannelFactory(account=account, platform="api"), ChannelFactory(account=account, platform="git")
    early, late = timezone.now() - timedelta(minutes=10), timezone.now() - timedelta(minutes=5)
    # Four full batches first; then a batch whose api and git posts come before the held blog's.
    committed = [*_due(blog, early, 8), *_due(feed, early, 4), *_due(docs, early, 4)]
    in_flight = [*_due(feed, late, 1), *_due(docs, late, 1), *_due(held, late, 2)]
    rest = [*_due(held, late, 2), *_due(feed, late, 2)]
    # Another session holds the held blog's channel row: the run's batch stops inside its
    # transaction at the statement that moves that blog's posts (their trigger locks the channel),
    # after it has moved the batch's api post.
    with psycopg.connect(database_url(), autocommit=False) as holder:
        holder.execute("SELECT id FROM channels_channel WHERE id = %s FOR UPDATE", [held.pk])
        run = _start_run()
        try:
            wait_until(lambda: len(_waiting_backends()) == 1, timeout=60)
        finally:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=10)
        # The server notices a dead client only when it next talks to it: it is told to stop, as
        # it would find out on its own once the lock came.
        [backend] = _waiting_backends()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
        wait_until(lambda: _backend_gone(backend), timeout=30)
        holder.rollback()

    # What the killed run committed is there, and nothing of the batch it was in.
    assert (
        Post.objects.filter(pk__in=[p.pk for p in committed if p.channel_id != docs.pk])
        .exclude(publication_status="scheduled")
        .count()
        == 12
    )
    assert Post.objects.filter(pk__in=[p.pk for p in in_flight + rest], publication_status="scheduled").count() == 8
    assert set(Event.objects.values_list("post_id", flat=True)) == {p.pk for p in committed if p.channel_id != docs.pk}
    assert set(PublicationJob.objects.values_list("post_id", flat=True)) == {
        p.pk for p in committed if p.channel_id == docs.pk
    }

    content_plan_run(batch_size=BATCH)

    due = committed + in_flight + rest
    states = dict(Post.objects.filter(pk__in=[p.pk for p in due]).values_list("pk", "publication_status"))
    expected = {blog.pk: "published", held.pk: "published", feed.pk: "publishing_pending", docs.pk: "scheduled"}
    assert states == {p.pk: expected[p.channel_id] for p in due}
    evented = [p.pk for p in due if p.channel_id != docs.pk]
    assert Counter(Event.objects.values_list("post_id", flat=True)) == Counter(evented)
    assert Counter(Delivery.objects.values_list("event__post_id", flat=True)) == Counter(evented)
    assert Counter(PublicationJob.objects.values_list("post_id", flat=True)) == Counter(
        p.pk for p in due if p.channel_id == docs.pk
    )
    assert Counter(ApiPublication.objects.values_list("post_id", flat=True)) == Counter(
        p.pk for p in due if p.channel_id == feed.pk
    )
