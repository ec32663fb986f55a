import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.webhooks import services
from apps.webhooks.models import Attempt, Delivery, DeliveryStatus, Event, WebhookEndpoint
from apps.webhooks.services import delivery_attempt
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Admin actions hand deliveries over after commit; run those hand-overs for real."""

    def run(fn):
        with django_capture_on_commit_callbacks(execute=True):
            return fn()

    return run


@pytest.fixture
def attempts_inline(monkeypatch):
    """Runs each handed-over delivery in this process, as a worker would."""
    monkeypatch.setattr(
        services,
        "enqueue",
        lambda ids, manual=False: [delivery_attempt(delivery_id=i, manual=manual) for i in ids],
    )


def failed_delivery(emit, receiver) -> Delivery:
    receiver.default = (500, 0)
    delivery = emit().deliveries.get()
    Delivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.FAILED, attempts=5, next_attempt_at=None)
    return delivery


def test_admin_creates_an_endpoint_with_a_generated_secret(admin_client, account, private_targets):
    response = admin_client.post(
        "/admin/webhooks/webhookendpoint/add/",
        {"account": account.pk, "url": "http://127.0.0.1:9/hook", "events": ["post.published"], "enabled": "on"},
        follow=True,
    )
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == ["post.published"] and endpoint.secret.startswith("whsec_")
    page = admin_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert endpoint.secret in page


def test_admin_refuses_a_private_url(admin_client, account):
    response = admin_client.post(
        "/admin/webhooks/webhookendpoint/add/", {"account": account.pk, "url": "http://10.0.0.1/x", "enabled": "on"}
    )
    assert "private, loopback" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_retry_now_action_keeps_the_delivery_id_and_records_a_manual_attempt(
    admin_client, endpoint, emit, receiver, run_on_commit, attempts_inline
):
    delivery = failed_delivery(emit, receiver)
    receiver.default = (200, 0)
    run_on_commit(
        lambda: admin_client.post(
            "/admin/webhooks/delivery/", {"action": "retry_now", "_selected_action": [str(delivery.pk)]}
        )
    )
    [request] = receiver.wait_for(1)
    assert request.headers["X-Service-Delivery"] == str(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED
    attempt = Attempt.objects.get(delivery=delivery)
    assert attempt.trigger == "manual"


def test_a_failing_manual_retry_leaves_a_failed_delivery_failed(endpoint, emit, receiver, attempts_inline):
    delivery = failed_delivery(emit, receiver)
    delivery_attempt(delivery_id=str(delivery.pk), manual=True)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 5


def test_resend_failed_since_a_date(admin_client, endpoint, emit, receiver, run_on_commit, attempts_inline):
    old = failed_delivery(emit, receiver)
    Delivery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    recent = failed_delivery(emit, receiver)
    receiver.default = (200, 0)
    form_page = admin_client.post(
        "/admin/webhooks/webhookendpoint/", {"action": "resend_failed", "_selected_action": [endpoint.pk]}
    )
    assert b"Re-send failed deliveries" in form_page.content
    since = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    run_on_commit(
        lambda: admin_client.post(
            "/admin/webhooks/webhookendpoint/",
            {"action": "resend_failed", "_selected_action": [endpoint.pk], "apply": "1", "since": since},
        )
    )
    assert [r.headers["X-Service-Delivery"] for r in receiver.wait_for(1)] == [str(recent.pk)]
    assert Delivery.objects.get(pk=old.pk).status == DeliveryStatus.FAILED
    assert Delivery.objects.get(pk=recent.pk).status == DeliveryStatus.SUCCEEDED


def test_send_test_event_goes_only_to_that_endpoint(admin_client, endpoint, receiver, run_on_commit, attempts_inline):
    from tests.factories import WebhookEndpointFactory

    WebhookEndpointFactory(account=endpoint.account, url=receiver.url)
    run_on_commit(
        lambda: admin_client.post(
            "/admin/webhooks/webhookendpoint/", {"action": "send_test_event", "_selected_action": [endpoint.pk]}
        )
    )
    [request] = receiver.wait_for(1)
    assert request.headers["X-Service-Event"] == "webhook.test"
    assert json.loads(request.body)["data"]["endpoint"]["id"] == endpoint.pk
    assert Event.objects.get().deliveries.get().endpoint_id == endpoint.pk


def test_rotate_secret_action(admin_client, endpoint):
    old = endpoint.secret
    admin_client.post(
        "/admin/webhooks/webhookendpoint/", {"action": "rotate_secret", "_selected_action": [endpoint.pk]}
    )
    endpoint.refresh_from_db()
    assert endpoint.secret != old


def test_delivery_history_filters_search_and_shows_attempts(admin_client, endpoint, emit, receiver):
    delivery = emit(post_id=4242).deliveries.get()
    other = emit(kind="post.unpublished", post_id=1).deliveries.get()
    delivery_attempt(delivery_id=str(delivery.pk))
    listing = admin_client.get("/admin/webhooks/delivery/?q=4242").content.decode()
    assert str(delivery.pk) in listing and str(other.pk) not in listing
    by_id = admin_client.get(f"/admin/webhooks/delivery/?q={other.pk}").content.decode()
    assert str(other.pk) in by_id and str(delivery.pk) not in by_id
    by_status = admin_client.get("/admin/webhooks/delivery/?status__exact=succeeded").content.decode()
    assert str(delivery.pk) in by_status and str(other.pk) not in by_status
    by_event = admin_client.get("/admin/webhooks/delivery/?event__kind__exact=post.unpublished").content.decode()
    assert str(other.pk) in by_event and str(delivery.pk) not in by_event
    detail = admin_client.get(f"/admin/webhooks/delivery/{delivery.pk}/change/").content.decode()
    assert "automatic" in detail.lower() and "X-Service-Signature" in detail


def test_add_webhook_command_prints_id_and_secret(private_targets):
    account = AccountFactory()
    out = StringIO()
    call_command(
        "add_webhook", "--account", str(account.pk), "--url", "http://127.0.0.1:9/x",
        "--events", "post.published,post.unpublished", "--json", stdout=out,
    )  # fmt: skip
    printed = json.loads(out.getvalue())
    endpoint = WebhookEndpoint.objects.get(pk=printed["id"])
    assert printed["secret"] == endpoint.secret
    assert endpoint.events == ["post.published", "post.unpublished"]
    with pytest.raises(CommandError, match="Unknown events"):
        call_command("add_webhook", account=account.pk, url="http://127.0.0.1:9/x", events="nope")
