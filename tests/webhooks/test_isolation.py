"""No bad endpoint slows down another's deliveries: real Celery workers on Redis, real receivers
on 127.0.0.1."""

import time

import pytest
from django.db import transaction

from apps.webhooks.models import Delivery, DeliveryStatus, EventInput, WebhookEndpoint
from apps.webhooks.services import deliveries_sweep, event_emit, events_emit
from tests.conftest import requires_broker, wait_until
from tests.factories import AccountFactory, WebhookEndpointFactory
from tests.receiver import Receiver

pytestmark = [requires_broker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def hanging():
    """A receiver that reads each request and answers only after a minute."""
    server = Receiver()
    server.default = (200, 60.0)
    server.start()
    yield server
    server.stop()


def endpoint_for(url: str) -> WebhookEndpoint:
    return WebhookEndpointFactory(account=AccountFactory(), url=url)


def backlog(endpoint: WebhookEndpoint, n: int) -> None:
    with transaction.atomic():
        items = [EventInput(account=endpoint.account, data={"n": i}) for i in range(n)]
        events_emit(kind="post.published", items=items)


def test_a_healthy_endpoint_gets_its_deliveries_promptly_while_another_accounts_endpoint_hangs(
    receiver, hanging, private_targets, start_worker, settings
):
    stuck = endpoint_for(hanging.url)
    healthy = endpoint_for(receiver.url)
    worker = start_worker(WEBHOOK_TIMEOUT=5)
    backlog(stuck, 300)
    committed = {}
    for n in range(12):
        time.sleep(0.25)
        with transaction.atomic():
            event = event_emit(account=healthy.account, kind="post.published", data={"n": n})
        committed[str(event.deliveries.get().pk)] = time.time()
    requests = receiver.wait_for(12, timeout=30)
    late = {
        r.headers["X-Service-Delivery"]: round(r.at - committed[r.headers["X-Service-Delivery"]], 2) for r in requests
    }
    assert max(late.values()) < 2.0, (late, worker.log_tail())
    # The hanging endpoint never had more than its cap of batches (one attempt each) in flight.
    assert hanging.in_flight <= settings.WEBHOOK_ENDPOINT_CONCURRENCY


def test_a_failing_endpoint_is_held_back_then_probed_and_its_backlog_delivered_once_it_recovers(
    receiver, private_targets, start_worker, settings
):
    settings.WEBHOOK_BREAKER_THRESHOLD = 3
    settings.WEBHOOK_RETRY_DELAYS = [1, 1, 1, 1]
    settings.WEBHOOK_BREAKER_PROBE_DELAYS = [2]
    start_worker(WEBHOOK_BREAKER_THRESHOLD=3, WEBHOOK_RETRY_DELAYS="1,1,1,1", WEBHOOK_BREAKER_PROBE_DELAYS="2")
    receiver.default = (500, 0)
    endpoint = endpoint_for(receiver.url)
    backlog(endpoint, 10)
    wait_until(lambda: WebhookEndpoint.objects.get(pk=endpoint.pk).held_back, timeout=20)
    time.sleep(0.5)
    assert len(receiver.requests) == 3  # the rest held, not sent
    receiver.default = (200, 0)
    deliveries = Delivery.objects.filter(endpoint=endpoint)
    wait_until(
        lambda: deliveries.filter(status=DeliveryStatus.SUCCEEDED).count() == 10,
        timeout=40,
        step=0.5,
        action=deliveries_sweep,  # beat's job: the probe, once the back-off has passed
    )
    assert {r.headers["X-Service-Delivery"] for r in receiver.requests} == {str(d.pk) for d in deliveries}
    # The three that opened it failed once (and the probe maybe more); the seven held were never
    # attempted while held: their one attempt is the one that succeeded.
    attempts = sorted(deliveries.values_list("attempts", flat=True))
    assert attempts[:7] == [1] * 7 and all(n >= 2 for n in attempts[7:])
    # The probe was the oldest, and the backlog followed it in order.
    firsts = list(dict.fromkeys(r.headers["X-Service-Delivery"] for r in receiver.requests[3:]))
    assert firsts == [str(pk) for pk in deliveries.order_by("created_at", "event_id").values_list("pk", flat=True)]
    assert not WebhookEndpoint.objects.get(pk=endpoint.pk).held_back
