import json
import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.posts.content_plan import content_plan_run
from apps.posts.models import ApiPublication, Post
from apps.webhooks.models import Delivery, Event
from tests.conftest import requires_postgres
from tests.factories import (
    AccountFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
    WebhookEndpointFactory,
)

pytestmark = pytest.mark.django_db


def scheduled(channel, minutes: int = -1, **kwargs) -> Post:
    return PostFactory(
        channel=channel,
        publication_status="scheduled",
        scheduled_at=timezone.now() + timedelta(minutes=minutes),
        **kwargs,
    )


def events_of(kind: str) -> list[dict]:
    return [json.loads(e.body) for e in Event.objects.filter(kind=kind).order_by("post_id")]


def test_due_api_post_becomes_publishing_pending_with_record_and_one_event():
    account = AccountFactory(name="Plan Co")
    channel = ChannelFactory(account=account, platform="api")
    WebhookEndpointFactory(account=account)
    tag = TagFactory(account=account, name="news")
    post = scheduled(channel, tags=[tag])
    MediaFactory(post=post)
    result = content_plan_run()
    post.refresh_from_db()
    assert (result.publishing_pending, result.published) == (1, 0)
    assert post.publication_status == "publishing_pending" and post.published_at is None
    assert ApiPublication.objects.filter(post=post, confirmed_at__isnull=True).exists()
    [body] = events_of("post.publishing_pending")
    assert body["account"] == {"id": account.id, "name": "Plan Co"}
    data = body["data"]["post"]
    assert data["id"] == post.id and data["publication_status"] == "publishing_pending"
    assert data["tags"] == [{"id": tag.id, "name": "news"}] and len(data["media"]) == 1
    assert data["channel"]["posts_count"] == 1 and data["channel"]["platform"] == "api"
    assert Delivery.objects.filter(event__post_id=post.id).count() == 1


def test_due_blog_posts_are_published_with_one_event_each():
    channel = ChannelFactory(platform="blog")
    posts = [scheduled(channel) for _ in range(3)]
    before = timezone.now()
    result = content_plan_run()
    assert (result.publishing_pending, result.published, result.handed_over) == (0, 3, 0)
    for post in posts:
        post.refresh_from_db()
        assert post.publication_status == "published" and post.published_at >= before
    assert [e["data"]["post"]["id"] for e in events_of("post.published")] == sorted(p.id for p in posts)
    assert not ApiPublication.objects.exists()


def test_future_and_other_posts_stay():
    channel = ChannelFactory(platform="api")
    future = scheduled(channel, minutes=5)
    draft = PostFactory(channel=channel, scheduled_at=timezone.now() - timedelta(days=1))
    assert content_plan_run().moved == 0
    future.refresh_from_db()
    draft.refresh_from_db()
    assert future.publication_status == "scheduled" and draft.publication_status == "draft"
    assert not Event.objects.exists()


def test_a_second_run_moves_nothing_and_sends_nothing():
    scheduled(ChannelFactory(platform="blog"))
    assert content_plan_run().moved == 1
    assert content_plan_run().moved == 0
    assert Event.objects.count() == 1


def test_a_post_back_in_the_workflow_reuses_its_record_reset():
    publication = ApiPublicationFactory(
        post__publication_status="scheduled", post__scheduled_at=timezone.now() - timedelta(minutes=1)
    )
    publication.confirmed_at, publication.external_id = timezone.now(), "old-id"
    publication.save()
    content_plan_run()
    publication.refresh_from_db()
    assert publication.confirmed_at is None and publication.external_id is None
    assert ApiPublication.objects.count() == 1


def test_many_due_posts_move_in_batches_with_bounded_queries():
    channel = ChannelFactory(platform="blog")
    WebhookEndpointFactory(account=channel.account)
    for _ in range(25):
        scheduled(channel)
    with CaptureQueriesContext(connection) as small:
        content_plan_run(batch_size=5)
    assert Post.objects.filter(publication_status="published").count() == 25
    assert Delivery.objects.count() == 25
    for _ in range(50):
        scheduled(channel)
    with CaptureQueriesContext(connection) as large:
        content_plan_run(batch_size=5)
    # Twice the posts in twice the batches: the same queries per batch, not per post.
    per_batch_small = len(small.captured_queries) / 6
    per_batch_large = len(large.captured_queries) / 11
    assert per_batch_small == pytest.approx(per_batch_large, abs=1)
    assert per_batch_large < 20


def test_run_content_plan_command_reports_what_moved():
    scheduled(ChannelFactory(platform="api"))
    scheduled(ChannelFactory(platform="blog"))
    out = StringIO()
    call_command("run_content_plan", stdout=out)
    assert "Moved 2 post(s): 1 to publishing_pending, 1 to published." in out.getvalue()


def test_the_beat_schedule_has_the_content_plan_the_sweeper_and_pruning(settings):
    from config.celery import app

    schedule = app.conf.beat_schedule
    tasks = {entry["task"] for entry in schedule.values()}
    assert {"posts.content_plan", "webhooks.sweep", "webhooks.prune_history"} <= tasks
    assert schedule["posts.content_plan"]["schedule"] == float(settings.CONTENT_PLAN_INTERVAL)
    assert schedule["webhooks.sweep"]["schedule"] == float(settings.WEBHOOK_SWEEP_INTERVAL)
    app.loader.import_default_modules()  # what a worker does at start: find every app's tasks
    assert tasks <= set(app.tasks)


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_runs_move_each_post_once_and_send_one_event_per_post():
    channel = ChannelFactory(platform="api")
    WebhookEndpointFactory(account=channel.account)
    posts = [scheduled(channel) for _ in range(60)]
    barrier = threading.Barrier(2)
    results = []

    def run():
        try:
            barrier.wait()
            results.append(content_plan_run(batch_size=7))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r.moved for r in results) == 60
    assert Event.objects.count() == 60
    assert sorted(Event.objects.values_list("post_id", flat=True)) == sorted(p.id for p in posts)
    assert Delivery.objects.count() == 60
    assert ApiPublication.objects.count() == 60
    with transaction.atomic():
        assert not Post.objects.filter(publication_status="scheduled").exists()


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_post_an_editor_holds_is_passed_over_without_waiting_and_moved_by_the_next_run():
    channel = ChannelFactory(platform="blog")
    held, *others = [scheduled(channel) for _ in range(5)]
    locked, release = threading.Event(), threading.Event()

    def editor():
        try:
            with transaction.atomic():
                Post.objects.select_for_update().get(pk=held.pk)
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        assert locked.wait(10)
        # Batches of two: the held post is the first the scan meets, and the batches after it go on.
        result = content_plan_run(batch_size=2)
    finally:
        release.set()
        thread.join()
    assert result.published == 4
    assert set(Post.objects.filter(publication_status="published").values_list("pk", flat=True)) == {
        post.pk for post in others
    }
    assert Post.objects.get(pk=held.pk).publication_status == "scheduled"
    assert content_plan_run().published == 1
