import hashlib
import hmac
import json
import time
from datetime import timedelta

import pytest
from dateutil.parser import isoparse
from django.utils import timezone

from apps.webhooks.models import Attempt, Delivery, DeliveryStatus, WebhookEndpoint
from apps.webhooks.services import delivery_attempt

pytestmark = pytest.mark.django_db


def verify(secret: str, headers: dict, body: bytes) -> bool:
    """An independent receiver-side check, written from the spec's Signature section."""
    timestamp = headers["X-Service-Timestamp"]
    expected = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers["X-Service-Signature"]) and abs(time.time() - int(timestamp)) < 300


def due_now(delivery: Delivery) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


def test_delivery_is_signed_and_shaped_as_the_spec_says(endpoint, emit, receiver, account):
    event = emit(data={"post": {"id": 7, "title": "Hello"}}, post_id=7)
    delivery = event.deliveries.get()
    attempt = delivery_attempt(delivery_id=str(delivery.id))
    [request] = receiver.wait_for(1)
    assert verify(endpoint.secret, request.headers, request.body)
    assert request.headers["X-Service-Signature"] == request.headers["X-Service-Signature"].lower()
    assert request.headers["X-Service-Event"] == "post.published"
    assert request.headers["X-Service-Delivery"] == str(delivery.id)
    assert request.headers["Content-Type"] == "application/json"
    assert "ContentPublishingService" in request.headers["User-Agent"]
    body = json.loads(request.body)
    assert set(body) == {"event", "timestamp", "account", "data"}
    assert body["event"] == "post.published"
    assert body["account"] == {"id": account.id, "name": "Hooked Inc"}
    assert body["data"] == {"post": {"id": 7, "title": "Hello"}}
    assert abs(isoparse(body["timestamp"]) - event.created_at) < timedelta(seconds=1)
    assert attempt.succeeded and attempt.number == 1 and attempt.trigger == "automatic"
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 1


def test_a_wrong_secret_does_not_verify(endpoint, emit, receiver):
    delivery_attempt(delivery_id=str(emit().deliveries.get().id))
    [request] = receiver.wait_for(1)
    assert not verify("whsec_wrong", request.headers, request.body)


def test_retries_keep_delivery_id_and_body_and_fail_after_five_attempts(endpoint, emit, receiver, settings):
    settings.WEBHOOK_RETRY_DELAYS = [60, 300, 1800, 7200]
    # The default threshold: the breaker opens at the fifth failure, which is this delivery's last.
    settings.WEBHOOK_BREAKER_THRESHOLD = 5
    receiver.default = (500, 0)
    delivery = emit().deliveries.get()
    before = timezone.now()
    delivery_attempt(delivery_id=str(delivery.id))
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
    # The next attempt is due after the schedule's first delay, and not before.
    assert timedelta(seconds=59) < delivery.next_attempt_at - before < timedelta(seconds=62)
    assert delivery_attempt(delivery_id=str(delivery.id)) is None
    expected_delays = [300, 1800, 7200]
    for delay in expected_delays:
        due_now(delivery)
        now = timezone.now()
        delivery_attempt(delivery_id=str(delivery.id))
        delivery.refresh_from_db()
        assert timedelta(seconds=delay - 1) < delivery.next_attempt_at - now < timedelta(seconds=delay + 2)
    due_now(delivery)
    delivery_attempt(delivery_id=str(delivery.id))
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.attempts == 5 and delivery.next_attempt_at is None
    assert delivery.last_status_code == 500
    requests = receiver.wait_for(5)
    assert len({r.headers["X-Service-Delivery"] for r in requests}) == 1
    assert len({r.body for r in requests}) == 1
    assert all(verify(endpoint.secret, r.headers, r.body) for r in requests)
    assert list(delivery.attempt_log.values_list("number", flat=True)) == [1, 2, 3, 4, 5]
    # A failed delivery is never attempted automatically again.
    due_now(delivery)
    assert delivery_attempt(delivery_id=str(delivery.id)) is None


def test_success_after_a_failure_finishes_the_delivery(endpoint, emit, receiver):
    receiver.script = [(503, 0)]
    delivery = emit().deliveries.get()
    delivery_attempt(delivery_id=str(delivery.id))
    due_now(delivery)
    delivery_attempt(delivery_id=str(delivery.id))
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED and delivery.attempts == 2
    assert [a.response_status for a in delivery.attempt_log.all()] == [503, 200]


def test_timeout_counts_as_a_failed_attempt(endpoint, emit, receiver, settings):
    settings.WEBHOOK_TIMEOUT = 1
    receiver.script = [(200, 2.5)]
    delivery = emit().deliveries.get()
    attempt = delivery_attempt(delivery_id=str(delivery.id))
    assert attempt.response_status is None
    assert "timed out" in attempt.error
    assert attempt.duration_ms < 2000
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1


def test_refused_connection_is_recorded_as_an_error(account, emit, private_targets):
    from tests.conftest import free_port
    from tests.factories import WebhookEndpointFactory

    WebhookEndpointFactory(account=account, url=f"http://127.0.0.1:{free_port()}/nothing")
    attempt = delivery_attempt(delivery_id=str(emit().deliveries.get().id))
    assert attempt.response_status is None
    assert attempt.error.startswith("connection failed")


def test_redirect_is_not_followed_and_is_a_failure(endpoint, emit, receiver):
    receiver.default = (302, 0)
    attempt = delivery_attempt(delivery_id=str(emit().deliveries.get().id))
    assert attempt.response_status == 302 and not attempt.succeeded
    assert len(receiver.wait_for(1)) == 1


def test_410_gone_disables_the_endpoint(endpoint, emit, receiver):
    receiver.default = (410, 0)
    delivery = emit().deliveries.get()
    delivery_attempt(delivery_id=str(delivery.id))
    endpoint.refresh_from_db()
    delivery.refresh_from_db()
    assert not endpoint.enabled
    assert "410" in endpoint.disabled_reason
    assert delivery.status == DeliveryStatus.FAILED


def test_attempt_records_request_and_response(endpoint, emit, receiver):
    delivery = emit().deliveries.get()
    attempt = delivery_attempt(delivery_id=str(delivery.id))
    assert attempt.request_headers["X-Service-Delivery"] == str(delivery.id)
    assert attempt.request_body == delivery.event.body
    assert attempt.response_body == '{"ok": true}'
    assert attempt.response_headers["Content-Type"] == "application/json"
    assert attempt.duration_ms >= 0


def test_a_held_delivery_is_not_sent_by_a_second_worker(endpoint, emit, receiver):
    delivery = emit().deliveries.get()
    Delivery.objects.filter(pk=delivery.pk).update(locked_until=timezone.now() + timedelta(minutes=1))
    assert delivery_attempt(delivery_id=str(delivery.id)) is None
    assert not Attempt.objects.exists()


def test_secret_rotation_signs_with_the_new_secret(endpoint, emit, receiver):
    from apps.webhooks.services import endpoint_rotate_secret

    old = endpoint.secret
    new = endpoint_rotate_secret(endpoint=endpoint)
    assert new != old and new.startswith("whsec_")
    delivery_attempt(delivery_id=str(emit().deliveries.get().id))
    [request] = receiver.wait_for(1)
    assert verify(new, request.headers, request.body)
    assert not verify(old, request.headers, request.body)
    assert WebhookEndpoint.objects.get().secret == new
