"""Deliveries through a real Celery worker on the Redis broker to a real receiver on 127.0.0.1."""

import json
import time

import pytest
from django.db import transaction

from apps.webhooks.models import Delivery, DeliveryStatus
from apps.webhooks.services import deliveries_sweep, event_emit
from tests.conftest import requires_broker, wait_until
from tests.factories import AccountFactory, WebhookEndpointFactory
from tests.webhooks.test_delivery import verify

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]


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


def test_worker_retries_on_the_configured_schedule_until_failed(hooked, receiver, start_worker, settings):
    account, _ = hooked
    receiver.default = (500, 0)
    # The breaker stays closed (the failures are this delivery's, not an outage's).
    settings.WEBHOOK_BREAKER_THRESHOLD = 10
    start_worker(WEBHOOK_RETRY_DELAYS="1,1,1,1", WEBHOOK_BREAKER_THRESHOLD=10)
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


def test_an_outage_burns_no_delivery_all_arrive_after_it_in_order_with_their_ids(hooked, receiver, start_worker):
    account, _ = hooked
    receiver.default = (503, 0)  # down for 10 seconds
    start_worker(WEBHOOK_RETRY_DELAYS="1,1,1,1")
    ids = []
    outage_ends = time.monotonic() + 10
    while len(ids) < 8:  # an event every 1.25 seconds of the outage; beat's sweeper every quarter second
        ids.append(str(emit(account).deliveries.get().pk))
        deadline = time.monotonic() + 1.25
        while time.monotonic() < deadline:
            deliveries_sweep()
            time.sleep(0.25)
    time.sleep(max(0.0, outage_ends - time.monotonic()))
    receiver.default = (200, 0)
    recovered_at = time.time()
    wait_until(
        lambda: Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.SUCCEEDED).count() == 8,
        timeout=30,
        step=0.5,
        action=deliveries_sweep,
    )
    assert len(receiver.requests) > 8  # the outage was seen: attempts and probes were refused
    after = [r.headers["X-Service-Delivery"] for r in receiver.requests if r.at >= recovered_at]
    # Each arrives with the id it was made with, the first arrivals in the order they were made.
    assert list(dict.fromkeys(after)) == ids
    assert not Delivery.objects.filter(status=DeliveryStatus.FAILED).exists()
