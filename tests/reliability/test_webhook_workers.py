"""Deliveries through real Celery workers when a worker dies mid-delivery or a receiver is too slow."""

import pytest
from django.conf import settings

from apps.webhooks.models import Attempt, Delivery, DeliveryStatus
from apps.webhooks.services import deliveries_sweep
from tests.conftest import requires_broker, wait_until

pytestmark = [pytest.mark.reliability, requires_broker, pytest.mark.django_db(transaction=True)]


def only_endpoint(workflow, name="first"):
    for other in set(workflow.endpoints) - {name}:
        workflow.endpoints[other].delete()
    return workflow.endpoints[name]


def test_delivery_of_a_killed_worker_completes_later(workflow, receiver, start_worker, monkeypatch):
    only_endpoint(workflow)
    receiver.script = [(200, 4.0)]  # the first attempt hangs while the worker is killed
    first = start_worker(WEBHOOK_TIMEOUT=2)
    assert workflow.publish(workflow.pending()).status_code == 200
    delivery = Delivery.objects.get()
    wait_until(lambda: receiver.in_flight > 0, timeout=20, step=0.05)
    first.kill()
    start_worker(WEBHOOK_TIMEOUT=2)
    # The sweeper (beat's job, run here) hands the delivery over again once its lease has run out.
    monkeypatch.setattr(settings, "WEBHOOK_REQUEUE_AFTER", 1)
    monkeypatch.setattr(settings, "WEBHOOK_TIMEOUT", 2)
    wait_until(
        lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.SUCCEEDED,
        timeout=40,
        step=0.5,
        action=deliveries_sweep,
    )
    assert {r.headers["X-Service-Delivery"] for r in receiver.requests} == {str(delivery.id)}


def test_a_receiver_slower_than_the_timeout_counts_as_a_failed_attempt_and_is_retried(workflow, receiver, start_worker):
    only_endpoint(workflow)
    receiver.script = [(200, 3.0)]  # answers 200, but only after the 1-second timeout
    start_worker(WEBHOOK_TIMEOUT=1, WEBHOOK_RETRY_DELAYS="1,1,1,1")
    assert workflow.publish(workflow.pending()).status_code == 200
    delivery = Delivery.objects.get()
    wait_until(
        lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.SUCCEEDED,
        timeout=30,
        step=0.5,
        action=deliveries_sweep,  # retries are due in the database; beat's sweeper hands them over
    )
    first, second = Attempt.objects.filter(delivery=delivery).order_by("number")
    assert first.response_status is None
    assert "timed out" in first.error.lower()
    assert first.duration_ms < 2500  # given up at the timeout, not when the receiver finally answered
    assert second.response_status == 200
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    # Both attempts reached the receiver, as one delivery.
    assert [r.headers["X-Service-Delivery"] for r in receiver.wait_for(2)] == [str(delivery.id)] * 2
