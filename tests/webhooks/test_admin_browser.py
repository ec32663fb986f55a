"""The Settings / Webhooks admin driven in headless Chromium (Debian's chromium package)."""

import shutil

import pytest

from apps.users.models import User
from apps.webhooks import services
from apps.webhooks.models import Delivery, WebhookEndpoint
from apps.webhooks.services import delivery_attempt
from tests.factories import AccountFactory

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (.ci/run installs it)"),
]


@pytest.fixture
def page(monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
    # between browser steps are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield browser.new_page()
        browser.close()


def test_admin_creates_endpoint_sends_test_event_and_shows_it_in_history(
    page, live_server, receiver, private_targets, monkeypatch
):
    # The live server's hand-over runs the attempt at once, as a worker would.
    monkeypatch.setattr(
        services, "enqueue", lambda ids, manual=False: [delivery_attempt(delivery_id=i, manual=manual) for i in ids]
    )
    account = AccountFactory(name="Browser Co")
    User.objects.create_superuser("root@example.com", "pw-123456")

    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "root@example.com")
    page.fill("#id_password", "pw-123456")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")

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
