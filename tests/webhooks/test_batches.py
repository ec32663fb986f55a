"""Deliveries handed to the broker and attempted in batches."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.webhooks import outbox, services, tasks, transport
from apps.webhooks.models import Attempt, Delivery, DeliveryStatus
from apps.webhooks.services import deliveries_attempt, event_emit

pytestmark = pytest.mark.django_db


@pytest.fixture
def emit_many(account, endpoint):
    """Emit `n` events in one transaction, the hand-over to the broker captured; their delivery ids."""

    def do(n: int) -> list[str]:
        with transaction.atomic():
            events = [event_emit(account=account, kind="post.published", data={"n": i}) for i in range(n)]
        return [str(event.deliveries.get().pk) for event in events]

    return do


@pytest.fixture
def handed_over(monkeypatch):
    """The tasks services.enqueue sends to the broker: (task name, delivery ids)."""
    sent = []
    monkeypatch.setattr(tasks.deliver_webhook, "apply_async", lambda args, kwargs=None, **_: sent.append(("one", args)))
    monkeypatch.setattr(tasks.deliver_webhooks, "apply_async", lambda args, **_: sent.append(("batch", args[0])))
    return sent


def test_outbox_hands_deliveries_over_in_batches_of_the_configured_size(emit_many, handed_over, settings):
    settings.WEBHOOK_BATCH_SIZE = 2
    handed_over.clear()
    ids = emit_many(5)
    services.enqueue(ids)
    assert handed_over == [("batch", ids[0:2]), ("batch", ids[2:4]), ("one", (ids[4],))]


def test_manual_retries_are_handed_over_one_by_one(emit_many, handed_over):
    ids = emit_many(2)
    handed_over.clear()
    services.enqueue(ids, manual=True)
    assert [name for name, _ in handed_over] == ["one", "one"]


# The attempts of COPY_MIN_ROWS deliveries and more are written with COPY, after a statement that
# takes their ids: a fixed number of statements below that size, and another from it on.
@pytest.mark.parametrize(
    "sizes", [(2, outbox.COPY_MIN_ROWS - 1), (outbox.COPY_MIN_ROWS, 2 * outbox.COPY_MIN_ROWS)], ids=["values", "copy"]
)
def test_a_batch_is_claimed_read_and_recorded_in_a_fixed_number_of_queries(emit_many, receiver, sizes):
    few, many = emit_many(sizes[0]), emit_many(sizes[1])
    with CaptureQueriesContext(connection) as small:
        deliveries_attempt(delivery_ids=few)
    with CaptureQueriesContext(connection) as large:
        assert len(deliveries_attempt(delivery_ids=many)) == sizes[1]
    assert len(large) == len(small)
    assert len(receiver.wait_for(sum(sizes))) == sum(sizes)
    assert Delivery.objects.filter(status=DeliveryStatus.SUCCEEDED).count() == sum(sizes)


def test_a_batch_records_each_outcome(emit_many, receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS = [60, 300, 1800, 7200]
    ids = emit_many(4)
    receiver.script = [(200, 0), (500, 0), (202, 0), (410, 0)]
    before = timezone.now()
    attempts = deliveries_attempt(delivery_ids=ids)
    assert [a.response_status for a in attempts] == [200, 500, 202, 410]
    assert all(a.number == 1 and a.pk for a in attempts)
    states = {str(d.pk): d for d in Delivery.objects.all()}
    ok, retry, accepted, gone = (states[pk] for pk in ids)
    assert (ok.status, ok.last_status_code, ok.delivered_at is not None) == (DeliveryStatus.SUCCEEDED, 200, True)
    assert (accepted.status, accepted.last_status_code) == (DeliveryStatus.SUCCEEDED, 202)
    assert retry.status == DeliveryStatus.PENDING and retry.attempts == 1 and retry.last_error == "HTTP 500"
    assert retry.next_attempt_at - before >= timedelta(seconds=60)
    assert gone.status == DeliveryStatus.FAILED
    assert all(d.locked_until is None and d.enqueued_at is None for d in states.values())
    gone.endpoint.refresh_from_db()
    assert not gone.endpoint.enabled


def test_a_batch_skips_deliveries_that_are_held_or_not_due(emit_many, receiver):
    held, future, due = emit_many(3)
    Delivery.objects.filter(pk=held).update(locked_until=timezone.now() + timedelta(minutes=1))
    Delivery.objects.filter(pk=future).update(next_attempt_at=timezone.now() + timedelta(minutes=1))
    attempts = deliveries_attempt(delivery_ids=[held, future, due])
    assert [str(a.delivery_id) for a in attempts] == [due]
    assert [r.headers["X-Service-Delivery"] for r in receiver.wait_for(1)] == [due]


def test_a_batch_starts_no_attempt_after_the_timeout_and_hands_the_rest_back(
    emit_many, receiver, settings, monkeypatch
):
    settings.WEBHOOK_TIMEOUT = 1
    ids = emit_many(4)
    receiver.script = [(200, 0.6), (200, 0.6)]  # each within the timeout; then the batch's time is up
    handed_back = []
    monkeypatch.setattr(services, "enqueue", lambda delivery_ids, manual=False: handed_back.extend(delivery_ids))
    attempts = deliveries_attempt(delivery_ids=ids)
    assert [str(a.delivery_id) for a in attempts] == ids[:2]
    assert handed_back == ids[2:]
    rest = Delivery.objects.filter(pk__in=ids[2:])
    assert all(d.status == DeliveryStatus.PENDING and d.locked_until is None and d.enqueued_at for d in rest)
    assert not Attempt.objects.filter(delivery__in=rest).exists()
    # Handed back, they are free for the next task.
    assert len(deliveries_attempt(delivery_ids=ids[2:])) == 2


def test_an_attempt_that_outlived_its_lease_is_logged_but_leaves_the_delivery_to_its_new_holder(
    emit_many, receiver, monkeypatch
):
    [delivery_id] = emit_many(1)
    taken_over = timezone.now() + timedelta(minutes=5)
    real_send = transport.send

    def send_while_another_worker_takes_over(**kwargs):
        outcome = real_send(**kwargs)
        Delivery.objects.filter(pk=delivery_id).update(locked_until=taken_over)
        return outcome

    monkeypatch.setattr(transport, "send", send_while_another_worker_takes_over)
    [attempt] = deliveries_attempt(delivery_ids=[delivery_id])
    assert attempt.pk and attempt.response_status == 200
    delivery = Delivery.objects.get(pk=delivery_id)
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 0
    assert delivery.locked_until == taken_over


def test_oversized_response_bodies_are_cut_and_the_connection_is_not_reused(endpoint, emit_many, receiver):
    receiver.body = b"x" * (transport.RESPONSE_BODY_LIMIT * 3)
    first, second = deliveries_attempt(delivery_ids=emit_many(2))
    assert len(first.response_body) == transport.RESPONSE_BODY_LIMIT
    assert second.response_status == 200  # a fresh connection, not the rest of the first body


@pytest.mark.parametrize("size", [3, outbox.COPY_MIN_ROWS], ids=["few", "copied"])
def test_a_batchs_attempts_are_stored_as_made_with_their_headers_as_json(emit_many, receiver, size):
    ids = emit_many(size)
    attempts = deliveries_attempt(delivery_ids=ids)
    assert len({a.pk for a in attempts}) == size and all(a.pk for a in attempts)
    for made in attempts:
        stored = Attempt.objects.get(pk=made.pk)
        assert str(stored.delivery_id) == str(made.delivery_id)
        assert stored.request_headers == made.request_headers and stored.response_headers == made.response_headers
        assert stored.request_body == made.request_body and stored.started_at == made.started_at
        assert (stored.number, stored.trigger, stored.counted) == (1, "automatic", True)
    # Stored as JSON objects, not as strings of JSON: their keys can be queried.
    assert Attempt.objects.filter(**{"request_headers__X-Service-Delivery": ids[1]}).get().pk == attempts[1].pk
