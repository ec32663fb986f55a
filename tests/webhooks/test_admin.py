import html
import json
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.webhooks import services
from apps.webhooks.models import Attempt, Delivery, DeliveryStatus, Event, WebhookEndpoint
from apps.webhooks.services import delivery_attempt, event_emit
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory, OperatorFactory, UserFactory, WebhookEndpointFactory

pytestmark = pytest.mark.django_db

ENDPOINTS = "/admin/webhooks/webhookendpoint/"
DELIVERIES = "/admin/webhooks/delivery/"


@pytest.fixture
def settings_client(account):
    """An admin of the account, in its Settings area."""
    return admin_session(AdminUserFactory(account=account))


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
        "add_webhook",
        "--account",
        str(account.pk),
        "--url",
        "http://127.0.0.1:9/x",
        "--events",
        "post.published,post.unpublished",
        "--json",
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    endpoint = WebhookEndpoint.objects.get(pk=printed["id"])
    assert printed["secret"] == endpoint.secret
    assert endpoint.events == ["post.published", "post.unpublished"]
    with pytest.raises(CommandError, match="Unknown events"):
        call_command("add_webhook", account=account.pk, url="http://127.0.0.1:9/x", events="nope")


# --- The Settings / Webhooks pages --------------------------------------------------------------


def delivery_of(endpoint, status, *, ago: timedelta, code: int | None = None) -> Delivery:
    created = timezone.now() - ago
    event = Event.objects.create(account=endpoint.account, kind="post.published", body="{}", created_at=created)
    return Delivery.objects.create(
        event=event, endpoint=endpoint, status=status, last_status_code=code, created_at=created
    )


def list_row(page: str, endpoint) -> dict[str, str]:
    """The text of each column of the endpoint's row in a change list, by field name."""
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        if f'name="_selected_action" value="{endpoint.pk}"' in row:
            cells = re.findall(r'<t[dh] class="field-(\w+)[^"]*">(.*?)</t[dh]>', row, re.S)
            return {name: " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split()) for name, text in cells}
    raise AssertionError(f"no row for endpoint {endpoint.pk}")


def test_endpoint_list_shows_state_last_result_success_rate_and_pending(settings_client, account):
    busy = WebhookEndpointFactory(account=account)
    for _ in range(3):
        delivery_of(busy, DeliveryStatus.SUCCEEDED, code=200, ago=timedelta(hours=2))
    delivery_of(busy, DeliveryStatus.FAILED, code=503, ago=timedelta(minutes=5))
    delivery_of(busy, DeliveryStatus.FAILED, code=500, ago=timedelta(days=3))  # outside the 24 h
    delivery_of(busy, DeliveryStatus.PENDING, ago=timedelta(minutes=10))
    delivery_of(busy, DeliveryStatus.PENDING, ago=timedelta(days=2))
    gone = WebhookEndpointFactory(account=account, enabled=False, disabled_reason="Disabled after 410 Gone")

    page = settings_client.get(ENDPOINTS).content.decode()

    row = list_row(page, busy)
    assert row["state"] == "Enabled"
    assert row["last_result"] == "Failed · HTTP 503 · 5 minutes ago"
    assert row["success_rate"] == "75% (3 of 4)"
    assert row["pending"] == "2"
    row = list_row(page, gone)
    assert row["state"] == "Disabled Disabled after 410 Gone"
    assert row["last_result"] == row["success_rate"] == "—"
    assert row["pending"] == "0"


def test_endpoint_list_says_which_endpoints_are_failing_held_back_or_disabled_and_why(settings_client, account):
    since = timezone.now().replace(year=2026, month=11, day=20, hour=8, minute=30)
    failing = WebhookEndpointFactory(account=account, consecutive_failures=2, failing_since=since)
    held = WebhookEndpointFactory(
        account=account, consecutive_failures=7, failing_since=since, next_probe_at=since.replace(hour=11, second=5)
    )
    disabled = WebhookEndpointFactory(account=account, enabled=False, disabled_reason="every attempt failed since ...")
    healthy = WebhookEndpointFactory(account=account)

    page = settings_client.get(ENDPOINTS).content.decode()

    assert list_row(page, failing)["state"] == "Failing failing since 2026-11-20 08:30 UTC (2 failed attempts in a row)"
    assert list_row(page, held)["state"] == (
        "Held back failing since 2026-11-20 08:30 UTC (7 failed attempts in a row); "
        "its deliveries wait, next probe at 2026-11-20 11:30:05 UTC"
    )
    assert list_row(page, disabled)["state"] == "Disabled every attempt failed since ..."
    assert list_row(page, healthy)["state"] == "Enabled"
    for state, shown in [("failing", failing), ("held", held), ("disabled", disabled), ("enabled", healthy)]:
        listed = settings_client.get(ENDPOINTS, {"state": state}).context["cl"].result_list
        assert list(listed) == [shown], state
    change_page = settings_client.get(f"{ENDPOINTS}{held.pk}/change/").content.decode()
    assert "next probe at 2026-11-20 11:30:05 UTC" in change_page


@pytest.mark.parametrize("who", ["account admin", "operator"])
def test_endpoint_list_costs_as_many_queries_for_10_endpoints_as_for_2(account, who):
    client = admin_session(AdminUserFactory(account=account) if who == "account admin" else OperatorFactory())

    def queries_with(count: int) -> int:
        while WebhookEndpoint.objects.count() < count:
            endpoint = WebhookEndpointFactory(account=account)
            delivery_of(endpoint, DeliveryStatus.SUCCEEDED, code=200, ago=timedelta(hours=1))
            delivery_of(endpoint, DeliveryStatus.PENDING, ago=timedelta(minutes=1))
        with CaptureQueriesContext(connection) as queries:
            page = client.get(ENDPOINTS).content.decode()
        assert page.count('name="_selected_action"') == count
        return len(queries)

    assert queries_with(2) == queries_with(10)


def test_endpoint_page_shows_the_buttons_the_secret_to_copy_and_the_recent_deliveries(settings_client, endpoint, emit):
    deliveries = [emit().deliveries.get() for _ in range(22)]

    page = settings_client.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()

    for action in ("send-test", "rotate-secret"):
        form = re.search(rf'<form method="post" action="{ENDPOINTS}{endpoint.pk}/{action}/">(.*?)</form>', page, re.S)
        assert form and 'name="csrfmiddlewaretoken"' in form[1]
    assert f'<code id="webhook-secret">{endpoint.secret}</code>' in page
    assert 'data-copy-target="webhook-secret"' in page and "webhooks/copy.js" in page
    listed = re.findall(rf'href="{DELIVERIES}([0-9a-f-]+)/change/">post.published</a>', page)
    assert listed == [str(d.pk) for d in reversed(deliveries[2:])]  # the 20 newest, newest first
    assert f"{DELIVERIES}?endpoint__id__exact={endpoint.pk}" in page


def test_send_test_button_queues_a_test_event_for_that_endpoint(settings_client, endpoint):
    WebhookEndpointFactory(account=endpoint.account)
    response = settings_client.post(f"{ENDPOINTS}{endpoint.pk}/send-test/")
    assert response.status_code == 302 and response["Location"] == f"{ENDPOINTS}{endpoint.pk}/change/"
    delivery = Delivery.objects.get()
    assert delivery.endpoint_id == endpoint.pk and delivery.event.kind == "webhook.test"
    page = settings_client.get(response["Location"]).content.decode()
    assert "Test event queued" in page and f"{DELIVERIES}{delivery.pk}/change/" in page


def test_rotate_secret_button(settings_client, endpoint):
    old = endpoint.secret
    response = settings_client.post(f"{ENDPOINTS}{endpoint.pk}/rotate-secret/", follow=True)
    endpoint.refresh_from_db()
    assert endpoint.secret != old
    page = response.content.decode()
    assert "Signing secret rotated" in page and endpoint.secret in page


def test_retry_button_sends_the_delivery_again_with_a_manual_attempt(
    settings_client, endpoint, emit, receiver, run_on_commit, attempts_inline
):
    delivery = failed_delivery(emit, receiver)
    receiver.default = (200, 0)
    response = run_on_commit(lambda: settings_client.post(f"{DELIVERIES}{delivery.pk}/retry/"))
    assert response.status_code == 302 and response["Location"] == f"{DELIVERIES}{delivery.pk}/change/"
    [request] = receiver.wait_for(1)
    assert request.headers["X-Service-Delivery"] == str(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.SUCCEEDED
    assert Attempt.objects.get(delivery=delivery).trigger == "manual"


def test_the_buttons_answer_only_posts(settings_client, endpoint, emit):
    delivery = emit().deliveries.get()
    secret = endpoint.secret
    for url in (
        f"{ENDPOINTS}{endpoint.pk}/send-test/",
        f"{ENDPOINTS}{endpoint.pk}/rotate-secret/",
        f"{DELIVERIES}{delivery.pk}/retry/",
    ):
        assert settings_client.get(url).status_code == 405
    endpoint.refresh_from_db()
    assert endpoint.secret == secret and Delivery.objects.count() == 1


def test_another_accounts_objects_do_not_exist_for_the_buttons(
    settings_client, receiver, private_targets, run_on_commit, attempts_inline
):
    theirs = WebhookEndpointFactory(account=AccountFactory(), url=receiver.url)
    with transaction.atomic():
        their_delivery = event_emit(account=theirs.account, kind="post.published", data={}).deliveries.get()
    secret = theirs.secret
    for url, name, pk in (
        (f"{ENDPOINTS}{theirs.pk}/send-test/", "Webhook endpoint", theirs.pk),
        (f"{ENDPOINTS}{theirs.pk}/rotate-secret/", "Webhook endpoint", theirs.pk),
        (f"{DELIVERIES}{their_delivery.pk}/retry/", "Delivery", their_delivery.pk),
    ):
        response = run_on_commit(lambda url=url: settings_client.post(url))
        assert response.status_code == 302 and response["Location"] == "/admin/"
        page = settings_client.get("/admin/").content.decode()
        assert html.unescape(page).count(f"{name} with ID \u201c{pk}\u201d doesn\u2019t exist") == 1
    theirs.refresh_from_db()
    assert theirs.secret == secret
    assert not Event.objects.filter(kind="webhook.test").exists()
    assert not Attempt.objects.exists() and receiver.requests == []


def test_an_editor_may_not_press_the_buttons(account, endpoint, emit):
    client = admin_session(UserFactory(account=account))
    delivery = emit().deliveries.get()
    assert client.post(f"{ENDPOINTS}{endpoint.pk}/rotate-secret/").status_code == 403
    assert client.post(f"{DELIVERIES}{delivery.pk}/retry/").status_code == 403


def test_delivery_page_shows_body_and_attempts_pretty_printed_and_escaped(settings_client, endpoint, emit, receiver):
    receiver.body = b"<b>not json</b>"
    delivery = emit(data={"post": {"id": 7}}).deliveries.get()
    delivery_attempt(delivery_id=str(delivery.pk))

    page = settings_client.get(f"{DELIVERIES}{delivery.pk}/change/").content.decode()

    shown = html.unescape(page)
    assert '{\n  "event": "post.published",\n' in shown
    assert '\n  "data": {\n    "post": {\n      "id": 7\n    }\n  }\n}' in shown
    assert '\n  "X-Service-Event": "post.published",\n' in shown  # the request's headers
    assert "&lt;b&gt;not json&lt;/b&gt;" in page and "<b>not json</b>" not in page
    assert 'class="webhook-payload"' in page and "webhooks/admin.css" in page
    retry = re.search(rf'<form method="post" action="{DELIVERIES}{delivery.pk}/retry/">(.*?)</form>', page, re.S)
    assert retry and "Retry now" in retry[1]
