"""Settings / Webhooks at 1400 px in headless Chromium: the delivery list and the endpoint form show
everything whole (no column cut or pushed out of sight, no id broken over lines, the URL field
wide enough for a typical URL, each event's checkbox on one line with its name), and one number of
attempts, the counted ones, on the endpoint's page, the delivery list and the delivery's page."""

import os
from pathlib import Path

import pytest
from django.utils import timezone

from apps.users.models import User
from apps.webhooks.models import Attempt, AttemptTrigger, Delivery, DeliveryStatus, Event
from tests.conftest import needs_chromium
from tests.factories import AccountFactory, WebhookEndpointFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]

WIDTH = 1400
TYPICAL_URL = "https://hooks.partner-company.example.com/webhooks/content-publishing/receive"
LONG_KINDS = ["post.publishing_pending", "subscriber.unsubscribed", "user.role_changed"]

# Where each element sits against the window, and on how many lines its text is.
MEASURE = """(elements) => elements.map((element) => {
    const box = element.getBoundingClientRect();
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    const rects = [];
    while (walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(walker.currentNode);
        rects.push(...[...range.getClientRects()].filter((r) => r.width > 0));
    }
    const tops = new Set(rects.map((r) => Math.round(r.top)));
    return {text: element.innerText.trim(), left: box.left, right: box.right, width: box.width,
            height: box.height, lines: tops.size, hidden: getComputedStyle(element).visibility !== "visible"};
})"""


def screenshot(page, name: str) -> None:
    folder = os.environ.get("WEBHOOK_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{folder}/{name}.png", full_page=True)


@pytest.fixture
def page(browser, live_server):
    User.objects.create_superuser("root@example.com", "pw-123456")
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "root@example.com")
    page.fill("#id_password", "pw-123456")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    return page


def sideways(page) -> int:
    """How many pixels the page is wider than the window (a reader would scroll sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def outside_the_window(measured: list[dict]) -> list[dict]:
    return [m for m in measured if m["hidden"] or m["width"] <= 0 or m["left"] < 0 or m["right"] > WIDTH]


def a_delivery_retried_by_hand(endpoint, kind: str) -> Delivery:
    """A delivery that failed once automatically, then succeeded on a manual retry."""
    event = Event.objects.create(account=endpoint.account, kind=kind, body=f'{{"event": "{kind}"}}')
    delivery = Delivery.objects.create(
        event=event,
        endpoint=endpoint,
        status=DeliveryStatus.SUCCEEDED,
        attempts=1,
        last_status_code=200,
        delivered_at=timezone.now(),
        last_error="",
    )
    tries = ((1, AttemptTrigger.AUTOMATIC, True, 503), (2, AttemptTrigger.MANUAL, False, 200))
    for number, trigger, counted, status in tries:
        Attempt.objects.create(
            delivery=delivery,
            number=number,
            trigger=trigger,
            counted=counted,
            started_at=timezone.now(),
            request_body=event.body,
            response_status=status,
        )
    return delivery


def test_the_delivery_list_shows_every_column_and_cell_whole_at_1400_px(page, live_server):
    """As the operator, whose lists have one column more (the account) than an account's admin's."""
    account = AccountFactory(name="Northwind Publishing International")
    endpoints = [
        WebhookEndpointFactory(account=account, url=f"{TYPICAL_URL}?{n}", description="partner") for n in range(3)
    ]
    for endpoint, kind in zip(endpoints, LONG_KINDS, strict=True):
        a_delivery_retried_by_hand(endpoint, kind)

    page.goto(f"{live_server.url}/admin/webhooks/delivery/")
    screenshot(page, "delivery-list")

    assert sideways(page) <= 0
    results = page.locator("#changelist .results")
    scrolled, shown = results.evaluate("box => [box.scrollWidth, box.clientWidth]")
    assert scrolled <= shown, f"the list scrolls sideways inside its box ({scrolled} > {shown})"
    headers = page.locator("#result_list thead th").evaluate_all(MEASURE)
    assert [h["text"] for h in headers][1:] == [
        "ID",
        "EVENT / ENDPOINT",
        "LAST STATUS",
        "ATTEMPTS COUNTED",
        "CREATED AT",
        "ACCOUNT",
    ]
    assert not outside_the_window(headers), headers
    cells = page.locator("#result_list tbody tr td, #result_list tbody tr th").evaluate_all(MEASURE)
    assert len(cells) == 3 * 7
    assert not outside_the_window(cells), cells
    ids = page.locator("#result_list tbody th").evaluate_all(MEASURE)
    assert {str(d.pk) for d in Delivery.objects.all()} == {i["text"] for i in ids}
    assert all(url in page.locator("#result_list").inner_text() for url in [e.url for e in endpoints])
    assert all(i["lines"] == 1 for i in ids), ids


def test_the_endpoint_form_shows_a_typical_url_whole_and_each_event_on_one_line_at_1400_px(page, live_server):
    AccountFactory(name="Northwind Publishing International")

    page.goto(f"{live_server.url}/admin/webhooks/webhookendpoint/add/")
    page.fill("#id_url", TYPICAL_URL)
    screenshot(page, "endpoint-form")

    assert sideways(page) <= 0
    scrolled, shown = page.locator("#id_url").evaluate("input => [input.scrollWidth, input.clientWidth]")
    assert scrolled <= shown, f"the URL field cuts {TYPICAL_URL} ({scrolled} > {shown})"
    choices = page.locator("#id_events label")
    assert choices.count() >= 12
    for choice in choices.all():
        box, check = choice.bounding_box(), choice.locator("input").bounding_box()
        [measured] = choice.evaluate_all(MEASURE)
        assert measured["lines"] == 1, measured
        # The box sits beside its name, on the name's line, not above or below it.
        middle = check["y"] + check["height"] / 2
        assert check["x"] < box["x"] + 30 and abs(middle - (box["y"] + box["height"] / 2)) < 8
        assert box["x"] + box["width"] <= WIDTH


def test_every_page_says_the_same_number_of_attempts_and_a_manual_retrys_success_is_a_success(page, live_server):
    endpoint = WebhookEndpointFactory(account=AccountFactory(), url=TYPICAL_URL)
    delivery = a_delivery_retried_by_hand(endpoint, "post.published")

    page.goto(f"{live_server.url}/admin/webhooks/webhookendpoint/{endpoint.pk}/change/")
    recent = page.locator(".webhook-recent-deliveries")
    assert recent.locator("thead th").nth(2).inner_text().lower() == "attempts counted"
    assert recent.locator("tbody td").nth(2).inner_text() == "1"

    page.goto(f"{live_server.url}/admin/webhooks/delivery/")
    assert page.locator("#result_list tbody td.field-attempts").inner_text() == "1"

    page.goto(f"{live_server.url}/admin/webhooks/delivery/{delivery.pk}/change/")
    assert page.locator(".field-attempts .readonly").inner_text() == "1"
    screenshot(page, "delivery-page")
    automatic, manual = page.locator(".inline-group tr.has_original").all()
    assert "Failed · HTTP 503" in automatic.inner_text() and "Yes" in automatic.locator("td.field-counts").inner_text()
    assert "Succeeded · HTTP 200" in manual.inner_text()
    assert manual.locator("td.field-counts").inner_text() == "No: a manual retry"
    # No red cross on a success: nothing on the row reads as a failure.
    assert manual.locator("img[src*='icon-no']").count() == 0
