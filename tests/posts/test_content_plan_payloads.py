"""A content plan batch on PostgreSQL reads its events' payloads before it writes its posts (the
posts are locked) and renders them while PostgreSQL runs the writes: the events must still be the
posts as the run leaves them, byte for byte, as if read after the writes."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.posts.content_plan import content_plan_run
from apps.posts.models import Post
from apps.posts.serializers import post_webhook_data
from apps.publishing.models import PublicationJob
from apps.webhooks.models import Delivery, Event
from apps.webhooks.serializers import delivery_body
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

pytestmark = [pytest.mark.django_db, requires_postgres]

# Enough of each for the batch's bulk paths: the jobs' one statement (MANY_MIN_JOBS) and the
# events' COPY (COPY_MIN_ROWS).
JOBS, EVENTS = 100, 20


def _due(channel, n: int, **fields) -> list[Post]:
    at = timezone.now() - timedelta(minutes=5)
    return [PostFactory(channel=channel, publication_status="scheduled", scheduled_at=at, **fields) for _ in range(n)]


def test_each_event_of_a_run_is_its_post_as_the_run_left_it_byte_for_byte():
    account = AccountFactory()
    WebhookEndpointFactory(account=account)
    tag = TagFactory(account=account)
    blog = ChannelFactory(account=account, platform="blog")
    api = ChannelFactory(account=account, platform="api", team=None)
    docs = ChannelFactory(account=account, platform="git")
    # A post of an api channel scheduled again after an earlier publication still holds its old
    # external reference and record until the run resets them: the event must not show them.
    published = _due(blog, EVENTS, tags=[tag], meta_title="SEO title")
    handed = _due(api, EVENTS, external_id="old-id", external_url="https://partner.example.com/old")
    for post in handed[:3]:
        ApiPublicationFactory(post=post, external_id="old-id")
    for post in published[:5]:
        MediaFactory(post=post)
    _due(docs, JOBS)

    result = content_plan_run()

    assert (result.published, result.publishing_pending, result.handed_over) == (EVENTS, EVENTS, JOBS)
    events = list(Event.objects.select_related("account").order_by("id"))
    assert sorted(e.post_id for e in events) == sorted(p.pk for p in published + handed)
    for event in events:
        post = Post.objects.get(pk=event.post_id)
        assert event.body == delivery_body(
            event.kind, event.account, {"post": post_webhook_data(post)}, event.created_at
        )
    assert Delivery.objects.count() == 2 * EVENTS
    assert PublicationJob.objects.filter(channel=docs, state="queued").count() == JOBS


@pytest.mark.django_db(transaction=True)
def test_a_run_leaves_the_planner_costs_of_its_connection_as_they_were():
    # Each batch is a transaction of its own, as the beat's task runs it (not a savepoint of a test's).
    with connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        [(before,)] = cursor.fetchall()
    _due(ChannelFactory(platform="blog"), 2)
    content_plan_run()
    with connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        assert cursor.fetchall() == [(before,)]
