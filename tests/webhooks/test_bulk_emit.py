"""Many events emitted at once (the content plan's batches) are written exactly like a single one;
on PostgreSQL they take the COPY path (outbox.COPY_MIN_ROWS rows and more)."""

import json
from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.webhooks import outbox, services
from apps.webhooks.models import Delivery, DeliveryStatus, Event, EventInput
from apps.webhooks.serializers import delivery_body
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


def written(emit_them, account, n: int) -> tuple[list[tuple], list[tuple]]:
    """What `emit_them` writes for n events of the account, rolled back after: (each event as
    (kind, account, post, body's `data`), each delivery as (its event's post, endpoint, status,
    attempts, handed to the broker, ...) in the order of events and endpoints); with each event's
    body checked to be exactly delivery_body's for the time it says."""
    data = [{"post": {"id": i, "title": "Grüße \u2028", "tags": []}} for i in range(n)]
    items = [EventInput(account=account, data=item, post_id=item["post"]["id"]) for item in data]

    class RolledBack(Exception):
        pass

    try:
        with transaction.atomic():
            emit_them(kind="post.published", items=items)
            events = list(Event.objects.filter(account=account).order_by("id"))
            for event, item in zip(events, items, strict=True):
                at = datetime.fromisoformat(json.loads(event.body)["timestamp"])
                assert event.body == delivery_body(event.kind, account, item.data, at)
            deliveries = Delivery.objects.filter(event__account=account).order_by("event_id", "endpoint_id")
            rows = [
                (
                    d.event.post_id,
                    d.endpoint_id,
                    d.enqueued_at is not None,
                    d.next_attempt_at == d.created_at,
                    *[getattr(d, f) for f in FIELDS],
                )
                for d in deliveries.select_related("event")
            ]
            said = [(e.kind, e.account_id, e.post_id, json.loads(e.body)["data"]) for e in events]
            raise RolledBack
    except RolledBack:
        return said, rows


def emit_many(*, kind: str, items: list[EventInput]) -> int:
    """Many events as the content plan emits them: rendered, then written."""
    return services.events_emit_prepared(services.events_prepare_many(kind=kind, items=items))


def test_many_events_written_without_model_instances_are_the_rows_events_emit_writes():
    account = AccountFactory(name="Bulk Inc")
    WebhookEndpointFactory(account=account)
    WebhookEndpointFactory(account=account, enabled=False)
    WebhookEndpointFactory(account=account, events=["post.unpublished"])
    # Held back by its breaker until its probe: its deliveries wait, no task at the broker.
    WebhookEndpointFactory(
        account=account,
        consecutive_failures=settings.WEBHOOK_BREAKER_THRESHOLD,
        next_probe_at=timezone.now() + timedelta(hours=1),
    )
    n = outbox.COPY_MIN_ROWS + 5
    many = written(emit_many, account, n)
    assert many == written(services.events_emit, account, n)
    assert len(many[0]) == n and len(many[1]) == 2 * n
    assert [row[2] for row in many[1]] == [True, False] * n


def test_many_events_hand_their_deliveries_to_the_broker_after_commit(monkeypatch, django_capture_on_commit_callbacks):
    account = AccountFactory()
    WebhookEndpointFactory(account=account)
    handed_over: list[list[str]] = []
    monkeypatch.setattr(services, "enqueue", lambda ids: handed_over.append(list(ids)))
    items = [EventInput(account=account, data={"post": {"id": i}}, post_id=i) for i in range(outbox.COPY_MIN_ROWS)]
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert emit_many(kind="post.published", items=items) == len(items)
        assert handed_over == []
    assert handed_over == [[str(pk) for pk in Delivery.objects.order_by("event_id").values_list("id", flat=True)]]
