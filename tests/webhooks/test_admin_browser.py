"""The Settings / Webhooks admin driven in headless Chromium (Debian's chromium package)."""

import pytest

from apps.users.models import User
from apps.webhooks import services
from apps.webhooks.models import Attempt, Delivery, WebhookEndpoint
from apps.webhooks.services import delivery_attempt
from tests.conftest import needs_chromium
from tests.factories import AccountFactory, AdminUserFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]


@pytest.fixture
def page(browser):
    return browser.new_page()


@pytest.fixture
def attempts_at_once(monkeypatch):
    """The live server's hand-over runs the attempt at once, as a worker would."""
    monkeypatch.setattr(
        services, "enqueue", lambda ids, manual=False: [delivery_attempt(delivery_id=i, manual=manual) for i in ids]
    )


def sign_in(page, live_server, email: str, password: str) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def test_admin_creates_endpoint_sends_test_event_and_shows_it_in_history(
    page, live_server, receiver, private_targets, attempts_at_once
):
    account = AccountFactory(name="Browser Co")
    User.objects.create_superuser("root@example.com", "pw-123456")
    sign_in(page, live_server, "root@example.com", "pw-123456")

    page.goto(f"{live_server.url}/admin/webhooks/webhookendpoint/add/")
    page.select_option("#id_account", str(account.pk))
    page.fill("#id_url", receiver.url)
    page.check("input[name=events][value='post.published']")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == ["post.published"]

    page.check(f"input[name=_selected_action][value='{endpoint.pk}']")
    page.select_option("select[name=action]", "send_test_event")
    page.click("button[name=index]")
    page.wait_for_selector(".messagelist")
    [request] = receiver.wait_for(1)
    assert request.headers["X-Service-Event"] == "webhook.test"

    page.goto(f"{live_server.url}/admin/webhooks/delivery/")
    delivery = Delivery.objects.get()
    row = page.locator("#result_list tbody tr").first
    assert str(delivery.pk) in row.inner_text()
    assert "Succeeded" in row.inner_text()
    row.locator("a").first.click()
    page.wait_for_selector(".inline-group")
    attempts = page.locator(".inline-group").inner_text()
    assert "Automatic" in attempts and "200" in attempts


def test_account_admin_sends_a_test_event_and_retries_it_from_the_endpoint_and_delivery_pages(
    page, live_server, receiver, private_targets, attempts_at_once
):
    account = AccountFactory(name="Settings Co")
    admin = AdminUserFactory(account=account, email="admin@settings.example")
    admin.set_password("pw-123456")
    admin.save()
    # The pages run no inline script: a script the policy blocked would be reported here.
    console = []
    page.on("console", lambda message: console.append(message.text))
    sign_in(page, live_server, "admin@settings.example", "pw-123456")

    page.goto(f"{live_server.url}/admin/webhooks/webhookendpoint/add/")
    assert page.locator("#id_account").count() == 0  # their own account, filled in
    page.fill("#id_url", receiver.url)
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.account == account

    page.click(f"#result_list a[href$='/webhookendpoint/{endpoint.pk}/change/']")
    page.click("button:has-text('Send test event')")
    page.wait_for_selector(".messagelist :text('Test event queued')")
    [request] = receiver.wait_for(1)
    assert request.headers["X-Service-Event"] == "webhook.test"
    recent = page.locator(".webhook-recent-deliveries tbody tr")
    assert recent.count() == 1
    assert "webhook.test" in recent.inner_text() and "Succeeded" in recent.inner_text()

    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.click("button[data-copy-target=webhook-secret]")
    page.wait_for_selector("button[data-copy-target=webhook-secret]:text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == endpoint.secret

    page.goto(f"{live_server.url}/admin/webhooks/webhookendpoint/")
    row = page.locator("#result_list tbody tr").first.inner_text()
    assert "Enabled" in row and "Succeeded · HTTP 200" in row and "100% (1 of 1)" in row

    page.goto(f"{live_server.url}/admin/webhooks/webhookendpoint/{endpoint.pk}/change/")
    page.click(".webhook-recent-deliveries a")
    page.wait_for_selector(".inline-group")
    body = page.locator(".field-event_body pre")
    assert '\n  "event": "webhook.test",\n' in body.inner_text()
    assert body.evaluate("pre => getComputedStyle(pre).whiteSpace") == "pre-wrap"

    page.click("button:has-text('Retry now')")
    page.wait_for_selector(".messagelist :text('Retrying now')")
    requests = receiver.wait_for(2)
    delivery = Delivery.objects.get()
    assert [r.headers["X-Service-Delivery"] for r in requests] == [str(delivery.pk)] * 2
    assert Attempt.objects.filter(delivery=delivery).count() == 2
    attempts = page.locator(".inline-group tr.has_original")
    assert attempts.count() == 2
    assert "Automatic" in attempts.nth(0).inner_text() and "Manual" in attempts.nth(1).inner_text()
    assert not [text for text in console if "Content Security Policy" in text]
