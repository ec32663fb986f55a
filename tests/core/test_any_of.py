"""AnyOf, the content plan's filter on a batch's ids: the same rows as `__in`, through relations too."""

import pytest

from apps.core.lookups import AnyOf
from apps.posts.models import Post, Tag
from tests.factories import PostFactory, TagFactory

pytestmark = pytest.mark.django_db


def test_any_of_picks_exactly_the_posts_named():
    posts = PostFactory.create_batch(4)
    named = [posts[0].pk, posts[2].pk]
    assert sorted(Post.objects.filter(AnyOf("id", named)).values_list("pk", flat=True)) == named


def test_any_of_no_ids_picks_nothing():
    PostFactory()
    assert not Post.objects.filter(AnyOf("id", [])).exists()


def test_any_of_follows_a_relation_as_in_does():
    tag, other = TagFactory(), TagFactory()
    post = PostFactory(tags=[tag])
    PostFactory(tags=[other])
    assert list(Tag.objects.filter(AnyOf("posts__id", [post.pk]))) == list(Tag.objects.filter(posts__in=[post.pk]))


@pytest.fixture
def deliveries(monkeypatch):
    """Three webhook deliveries (ids are UUIDs), written by the outbox; the broker is not reached."""
    from django.db import transaction

    from apps.webhooks import services
    from apps.webhooks.models import Delivery
    from tests.factories import AccountFactory, WebhookEndpointFactory

    monkeypatch.setattr(services, "enqueue", lambda ids, **_: None)
    account = AccountFactory()
    WebhookEndpointFactory(account=account, url="https://hooks.example.com/in")
    with transaction.atomic():
        for n in range(3):
            services.event_emit(account=account, kind="post.published", data={"n": n})
    return list(Delivery.objects.order_by("created_at", "event_id"))


def test_any_of_takes_uuids_as_strings_or_as_uuids(deliveries):
    from apps.webhooks.models import Delivery

    named = [str(deliveries[0].pk), deliveries[2].pk]
    found = set(Delivery.objects.filter(AnyOf("id", named)).values_list("pk", flat=True))
    assert found == {deliveries[0].pk, deliveries[2].pk}


def test_any_of_follows_a_foreign_key_to_uuids(deliveries):
    from apps.webhooks.models import Delivery

    events = Delivery.objects.filter(AnyOf("id", [deliveries[1].pk])).values_list("event_id", flat=True)
    assert list(events) == [deliveries[1].event_id]
    from apps.webhooks.models import Event

    assert list(Event.objects.filter(AnyOf("deliveries__id", [deliveries[1].pk])).values_list("pk", flat=True)) == [
        deliveries[1].event_id
    ]


def test_any_of_no_uuids_picks_nothing(deliveries):
    from apps.webhooks.models import Delivery

    assert not Delivery.objects.filter(AnyOf("id", []), id__isnull=False).exists()
