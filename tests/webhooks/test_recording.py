"""A batch's outcomes written on a recorder thread while its next attempts are sent: the first
outcomes are in the database before the last request goes out, in order, one recording at a time,
and the breaker still counts the failures in a row across recordings."""

import pytest
from django.db import transaction

from apps.core.threads import WorkerThreads
from apps.webhooks import sending, transport
from apps.webhooks.models import Delivery, DeliveryStatus, EventInput, WebhookEndpoint
from apps.webhooks.services import deliveries_attempt, events_emit

# The recorder thread has a connection of its own: the test's rows must be committed for it.
pytestmark = pytest.mark.django_db(transaction=True)

BATCH = 30


@pytest.fixture
def batch(account, endpoint) -> list[str]:
    with transaction.atomic():
        events_emit(kind="post.published", items=[EventInput(account=account, data={"post": {"id": 1}})] * BATCH)
    return [str(pk) for pk in Delivery.objects.order_by("created_at", "event_id").values_list("pk", flat=True)]


@pytest.fixture
def recorded_at_each_send(monkeypatch) -> list[int]:
    """How many deliveries the database holds as attempted when each request goes out."""
    seen = []
    send = transport.send

    def counting(**request):
        seen.append(Delivery.objects.filter(attempts__gt=0).count())
        return send(**request)

    monkeypatch.setattr(transport, "send", counting)
    return seen


@pytest.fixture
def recorder():
    threads = WorkerThreads(2, "test-recorder")
    yield threads
    threads.shutdown()


def test_with_a_recorder_a_batch_writes_its_first_outcomes_while_it_sends_the_rest(
    batch, receiver, recorded_at_each_send, recorder
):
    receiver.default = (200, 0.02)
    attempts = deliveries_attempt(delivery_ids=batch, recorder=recorder)
    assert len(attempts) == BATCH
    assert [str(attempt.delivery.pk) for attempt in attempts] == batch
    assert Delivery.objects.filter(status=DeliveryStatus.SUCCEEDED, attempts=1, locked_until=None).count() == BATCH
    assert recorded_at_each_send[: sending.RECORDING_AT_LEAST + 1] == [0] * (sending.RECORDING_AT_LEAST + 1)
    assert 0 < recorded_at_each_send[-1] < BATCH
    # In order: a delivery's outcome is never written by a recording before an earlier one's.
    recorded = Delivery.objects.order_by("delivered_at", "event_id").values_list("pk", flat=True)
    assert [str(pk) for pk in recorded] == batch


def test_without_a_recorder_a_batch_writes_its_outcomes_once_its_attempts_are_done(
    batch, receiver, recorded_at_each_send
):
    assert len(deliveries_attempt(delivery_ids=batch)) == BATCH
    assert recorded_at_each_send == [0] * BATCH
    assert Delivery.objects.filter(status=DeliveryStatus.SUCCEEDED).count() == BATCH


def test_failures_in_a_row_over_several_recordings_open_the_breaker_at_its_threshold(
    batch, endpoint, receiver, recorder, recorded_at_each_send, settings, monkeypatch
):
    monkeypatch.setattr(sending, "RECORDING_AT_LEAST", 2)
    settings.WEBHOOK_BREAKER_THRESHOLD = 4
    receiver.default = (500, 0.02)
    attempts = deliveries_attempt(delivery_ids=batch, recorder=recorder)
    assert len(attempts) == 4
    assert recorded_at_each_send[-1] > 0  # the four were written in more than one recording
    endpoint = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert endpoint.consecutive_failures == 4 and endpoint.held_back
    # The others, not attempted, keep their attempts and no longer hold a lease.
    untouched = Delivery.objects.filter(pk__in=batch[4:])
    assert list(untouched.values_list("attempts", "locked_until", "status").distinct()) == [(0, None, "pending")]
