"""Deliveries through a real Celery worker on the Redis broker to a real receiver on 127.0.0.1."""

import json
import time

import pytest
from django.db import transaction

from apps.webhooks.models import Delivery, DeliveryStatus
from apps.webhooks.services import deliveries_sweep, event_emit
from tests.conftest import requires_broker
from tests.factories import AccountFactory, WebhookEndpointFactory
from tests.webhooks.test_delivery import verify

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]


def wait_until(condition, timeout: float = 30.0, step: float = 0.2, action=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if action:
            action()
        if condition():
            return
        time.sleep(step)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def hooked(receiver, private_targets):
    account = AccountFactory()
    return account, WebhookEndpointFactory(account=account, url=receiver.url)


def emit(account, kind="post.published"):
    with transaction.atomic():
        return event_emit(account=account, kind=kind, data={"post": {"id": 1}}, post_id=1)


def test_worker_delivers_a_committed_event(hooked, receiver, start_worker):
    account, endpoint = hooked
    start_worker()
    event = emit(account)
    [request] = receiver.wait_for(1)
    assert verify(endpoint.secret, request.headers, request.body)
    assert json.loads(request.body)["event"] == "post.published"
    delivery = event.deliveries.get()
    wait_until(lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.SUCCEEDED)


def test_worker_retries_on_the_configured_schedule_until_failed(hooked, receiver, start_worker):
    account, _ = hooked
    receiver.default = (500, 0)
    start_worker(WEBHOOK_RETRY_DELAYS="1,1,1,1")
    delivery = emit(account).deliveries.get()
    # Retries are due in the database; the sweeper (beat's job) hands them to the worker.
    wait_until(
        lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.FAILED,
        timeout=40,
        step=0.5,
        action=deliveries_sweep,
    )
    requests = receiver.wait_for(5)
    assert len(requests) == 5
    assert {r.headers["X-Service-Delivery"] for r in requests} == {str(delivery.id)}


def test_event_committed_while_the_broker_is_down_is_delivered_once_it_is_back(
    hooked, receiver, private_redis, use_broker, start_worker
):
    account, _ = hooked
    use_broker(private_redis.url)
    private_redis.stop()
    delivery = emit(account).deliveries.get()  # commit succeeds; the hand-over fails quietly
    assert Delivery.objects.get(pk=delivery.pk).enqueued_at is None
    private_redis.start()
    start_worker(private_redis.url)
    assert deliveries_sweep() == 1
    [request] = receiver.wait_for(1)
    assert request.headers["X-Service-Delivery"] == str(delivery.id)
    wait_until(lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.SUCCEEDED)
    time.sleep(1)
    assert len(receiver.requests) == 1


@pytest.mark.reliability
def test_delivery_of_a_killed_worker_completes_later(hooked, receiver, start_worker):
    account, _ = hooked
    receiver.script = [(200, 4.0)]  # the first attempt hangs while the worker is killed
    first = start_worker(WEBHOOK_TIMEOUT=2)
    delivery = emit(account).deliveries.get()
    wait_until(lambda: receiver.in_flight > 0, timeout=20, step=0.05)
    first.kill()
    start_worker(WEBHOOK_TIMEOUT=2, WEBHOOK_REQUEUE_AFTER=1)
    with pytest.MonkeyPatch.context() as patch:
        from django.conf import settings

        patch.setattr(settings, "WEBHOOK_REQUEUE_AFTER", 1)
        patch.setattr(settings, "WEBHOOK_TIMEOUT", 2)
        wait_until(
            lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.SUCCEEDED,
            timeout=40,
            step=0.5,
            action=deliveries_sweep,
        )
    ids = {r.headers["X-Service-Delivery"] for r in receiver.requests}
    assert ids == {str(delivery.id)}
