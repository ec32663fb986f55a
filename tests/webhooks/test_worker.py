"""Deliveries through a real Celery worker on the Redis broker to a real receiver on 127.0.0.1."""

import json
import time

import pytest
from django.db import transaction

from apps.webhooks.models import Delivery, DeliveryStatus, WebhookEndpoint
from apps.webhooks.services import deliveries_sweep, event_emit
from tests.conftest import free_port, requires_broker, wait_until
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


@pytest.mark.parametrize("dead", ["answers 500", "refuses connections"])
def test_a_lone_delivery_to_an_endpoint_that_always_fails_is_attempted_exactly_five_times_and_failed(
    hooked, receiver, start_worker, dead
):
    account, endpoint = hooked
    receiver.default = (500, 0)
    if dead == "refuses connections":
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(url=f"http://127.0.0.1:{free_port()}/hook")
    # The default breaker (5 failures in a row) and probe delays (60 s first): nothing is put off.
    start_worker(WEBHOOK_RETRY_DELAYS="1,1,1,1")
    delivery = emit(account).deliveries.get()
    # Retries are due in the database; the sweeper (beat's job) hands them to the worker.
    wait_until(
        lambda: Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.FAILED,
        timeout=40,
        step=0.5,
        action=deliveries_sweep,
    )
    delivery.refresh_from_db()
    assert delivery.attempts == 5 and delivery.attempt_log.count() == 5
    if dead == "answers 500":
        assert [r.headers["X-Service-Delivery"] for r in receiver.requests] == [str(delivery.id)] * 5


def test_an_outage_shorter_than_the_first_probe_burns_no_delivery_all_arrive_after_it_with_their_ids(
    hooked, receiver, start_worker
):
    """The issue's case on a shorter clock: 8 deliveries queued within a second as an 8-second outage
    begins, retries 1 s apart (their 4 s would fail a delivery alone), the first probe after 20 s
    (60 s by default, with a 20-second outage: the same outage well within the first probe)."""
    account, _ = hooked
    receiver.default = (503, 0)
    start_worker(WEBHOOK_RETRY_DELAYS="1,1,1,1", WEBHOOK_BREAKER_PROBE_DELAYS="20")
    outage_ends = time.monotonic() + 8
    ids = []
    for _ in range(8):
        ids.append(str(emit(account).deliveries.get().pk))
        time.sleep(0.1)
    while time.monotonic() < outage_ends:  # beat's sweeper, every quarter second
        deliveries_sweep()
        time.sleep(0.25)
    receiver.default = (200, 0)
    recovered_at = time.time()
    assert not Delivery.objects.filter(status=DeliveryStatus.FAILED).exists()
    wait_until(
        lambda: Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.SUCCEEDED).count() == 8,
        timeout=90,
        step=0.5,
        action=deliveries_sweep,
    )
    refused = [r.headers["X-Service-Delivery"] for r in receiver.requests if r.at < recovered_at]
    assert 5 <= len(refused) < 8  # the outage was seen, and the breaker held the rest back
    after = [r.headers["X-Service-Delivery"] for r in receiver.requests if r.at >= recovered_at]
    # Each arrives with the id it was made with, the first arrivals in the order they were made.
    assert list(dict.fromkeys(after)) == ids
    assert not Delivery.objects.filter(status=DeliveryStatus.FAILED).exists()
