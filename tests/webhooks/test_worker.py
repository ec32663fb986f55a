"""Deliveries through a real Celery worker on the Redis broker to a real receiver on 127.0.0.1."""

import json

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
