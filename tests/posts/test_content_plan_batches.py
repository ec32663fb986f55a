"""A content plan run over many batches: it goes on from where each batch ended, and reads each
channel (with its posts_count) once."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.posts.content_plan import content_plan_run
from apps.posts.models import Post
from apps.webhooks.models import Event
from tests.factories import ChannelFactory, PostFactory, WebhookEndpointFactory

pytestmark = pytest.mark.django_db


def test_posts_due_at_the_same_instant_all_move_across_batches():
    at = timezone.now() - timedelta(minutes=1)
    blog, feed = ChannelFactory(platform="blog"), ChannelFactory(platform="api")
    posts = [PostFactory(channel=c, publication_status="scheduled", scheduled_at=at) for c in [blog, feed] * 4]
    result = content_plan_run(batch_size=3)
    assert (result.published, result.publishing_pending) == (4, 4)
    assert not Post.objects.filter(publication_status="scheduled").exists()
    assert sorted(Event.objects.values_list("post_id", flat=True)) == sorted(p.pk for p in posts)


def test_a_run_reads_each_channel_once_and_reports_its_posts_count():
    channel = ChannelFactory(platform="blog")
    WebhookEndpointFactory(account=channel.account)
    PostFactory.create_batch(2, channel=channel)  # not scheduled, still counted
    due = timezone.now() - timedelta(minutes=1)
    PostFactory.create_batch(6, channel=channel, publication_status="scheduled", scheduled_at=due)
    with CaptureQueriesContext(connection) as queries:
        assert content_plan_run(batch_size=2).moved == 6
    channel_reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and 'FROM "channels_channel"' in q["sql"]
    ]
    assert len(channel_reads) == 1
    # The stored number (issue 19): no read counts posts.
    assert not [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"]]
    counts = {
        json.loads(body)["data"]["post"]["channel"]["posts_count"]
        for body in Event.objects.values_list("body", flat=True)
    }
    assert counts == {8}
