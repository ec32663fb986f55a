"""Many events emitted at once (the content plan's batches) are written exactly like a single one;
on PostgreSQL they take the COPY path (outbox.COPY_MIN_ROWS rows and more)."""

import json

import pytest
from django.db import transaction

from apps.webhooks import outbox
from apps.webhooks.models import Delivery, DeliveryStatus, Event, EventInput
from apps.webhooks.services import events_emit
from tests.factories import AccountFactory, WebhookEndpointFactory

pytestmark = pytest.mark.django_db

FIELDS = ("status", "attempts", "last_error", "last_status_code", "locked_until", "delivered_at")


def emit(account, n: int) -> list[Event]:
    data = [{"post": {"id": i, "title": "Grüße \u2028"}} for i in range(n)]
    items = [EventInput(account=account, data=item, post_id=item["post"]["id"]) for item in data]
    with transaction.atomic():
        return events_emit(kind="post.published", items=items)


def test_a_batch_of_events_is_written_like_a_single_event():
    account = AccountFactory(name="Bulk Inc")
    first, second = WebhookEndpointFactory(account=account), WebhookEndpointFactory(account=account)
    WebhookEndpointFactory(account=account, enabled=False)
    WebhookEndpointFactory(account=account, events=["post.unpublished"])
    [single] = emit(account, 1)
    many = emit(account, outbox.COPY_MIN_ROWS + 5)
    assert len({event.pk for event in many}) == len(many) and all(event.pk for event in many)
    stored = {event.pk: event for event in Event.objects.filter(pk__in=[e.pk for e in many])}
    for event in many:
        assert stored[event.pk].body == event.body and stored[event.pk].post_id == event.post_id
        assert json.loads(event.body)["data"]["post"]["id"] == event.post_id
    assert json.loads(many[3].body)["data"]["post"]["title"] == "Grüße \u2028"
    reference = Delivery.objects.filter(event=single).order_by("endpoint_id")
    assert [d.endpoint_id for d in reference] == [first.pk, second.pk]
    for event in many:
        deliveries = list(Delivery.objects.filter(event=event).order_by("endpoint_id"))
        assert [d.endpoint_id for d in deliveries] == [first.pk, second.pk]
        for delivery, like in zip(deliveries, reference, strict=True):
            assert [getattr(delivery, f) for f in FIELDS] == [getattr(like, f) for f in FIELDS]
            assert delivery.status == DeliveryStatus.PENDING
            assert delivery.next_attempt_at and delivery.enqueued_at and delivery.created_at and delivery.updated_at


def test_event_ids_keep_increasing_after_a_batch():
    account = AccountFactory()
    WebhookEndpointFactory(account=account)
    many = emit(account, outbox.COPY_MIN_ROWS)
    [after] = emit(account, 1)
    assert after.pk > max(event.pk for event in many)


def test_a_few_events_emitted_together_are_written_like_a_single_event():
    account = AccountFactory()
    WebhookEndpointFactory(account=account)
    [single] = emit(account, 1)
    few = emit(account, 3)
    assert [event.pk for event in few] == sorted(event.pk for event in few) and few[0].pk > single.pk
    for event in few:
        stored = Event.objects.get(pk=event.pk)
        assert (stored.body, stored.post_id, stored.created_at) == (event.body, event.post_id, event.created_at)
        [delivery] = Delivery.objects.filter(event=event)
        like = Delivery.objects.get(event=single)
        assert [getattr(delivery, f) for f in FIELDS] == [getattr(like, f) for f in FIELDS]
    assert json.loads(Event.objects.get(pk=few[2].pk).body)["data"]["post"]["title"] == "Grüße \u2028"
