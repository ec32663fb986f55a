"""A real Celery worker killed with SIGKILL in the middle of its batches, whose outcomes it records
while it sends: nothing is lost, what it had recorded is not sent again, what it sent and had not
recorded is sent again (at least once, as the spec allows), and no delivery counts more than one
attempt for it."""

from collections import Counter

import pytest
from django.db import transaction

from apps.webhooks.models import Delivery, DeliveryStatus, EventInput
from apps.webhooks.services import deliveries_sweep, events_emit
from tests.conftest import requires_broker, wait_until
from tests.factories import AccountFactory, WebhookEndpointFactory

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]

EVENTS = 200
# A batch starts no attempt after WEBHOOK_TIMEOUT: short, so leases (twice it and 5 s) run out soon.
TIMEOUT = 1


def test_a_worker_killed_mid_batch_loses_nothing_and_sends_again_only_what_it_had_not_recorded(
    receiver, private_targets, start_worker
):
    account = AccountFactory()
    endpoint = WebhookEndpointFactory(account=account, url=receiver.url)
    receiver.default = (200, 0.01)
    worker = start_worker(WEBHOOK_TIMEOUT=TIMEOUT)
    with transaction.atomic():
        events_emit(kind="post.published", items=[EventInput(account=account, data={"post": {"id": 1}})] * EVENTS)
    deliveries = Delivery.objects.filter(endpoint=endpoint)

    wait_until(lambda: deliveries.filter(status=DeliveryStatus.SUCCEEDED).count() >= 20, timeout=30, step=0.05)
    worker.kill()
    recorded = {str(pk) for pk in deliveries.filter(attempts__gt=0).values_list("pk", flat=True)}
    sent = {request.headers["X-Service-Delivery"] for request in receiver.requests}
    in_flight = {str(pk) for pk in deliveries.filter(locked_until__isnull=False).values_list("pk", flat=True)}
    assert len(recorded) < EVENTS, "the deliveries ended before the worker was killed"
    assert in_flight, f"no batch was in flight when the worker was killed:\n{worker.log_tail()}"
    assert sent - recorded, "the kill found no attempt sent and not recorded yet"

    start_worker(WEBHOOK_TIMEOUT=TIMEOUT)
    # The dead worker's leases run out; the sweeper (beat's job) hands its deliveries over again.
    wait_until(
        lambda: deliveries.filter(status=DeliveryStatus.SUCCEEDED).count() == EVENTS,
        timeout=60,
        step=0.5,
        action=deliveries_sweep,
    )
    received = Counter(request.headers["X-Service-Delivery"] for request in receiver.requests)
    twice = {delivery_id for delivery_id, count in received.items() if count > 1}
    assert set(received) == {str(pk) for pk in deliveries.values_list("pk", flat=True)}
    assert max(received.values()) <= 2
    # Sent again: only what the dead worker had sent and not recorded, none of what it recorded.
    assert twice <= (sent - recorded) and not (twice & recorded)
    assert twice <= in_flight
    # Its unrecorded attempts count for nothing: every delivery has one attempt, and its record.
    assert set(deliveries.values_list("attempts", flat=True)) == {1}
    assert all(delivery.attempt_log.count() == 1 for delivery in deliveries)
