"""The calendar feed page in a real browser (Chromium through Playwright), at a phone's width and a
desktop's: a member creates their feed, copies the address the page shows once, a calendar app reads
it; the page shows it no more; revoked, the address answers 404."""

from datetime import timedelta

import pytest
from django.utils import timezone
from icalendar import Calendar

from tests.conftest import admin_session, needs_chromium
from tests.factories import ChannelFactory, PostFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]


@pytest.mark.parametrize("width", [375, 1400])
def test_a_member_creates_reads_and_revokes_their_feed(live_server, browser, settings, width):
    from playwright import sync_api

    settings.SITE_URL = live_server.url
    member = UserFactory(role="editor")
    post = PostFactory(
        channel=ChannelFactory(account=member.account, title="Blog"),
        title="Opening hours",
        publication_status="scheduled",
        scheduled_at=timezone.now() + timedelta(days=1),
    )
    context = browser.new_context(viewport={"width": width, "height": 800})
    session = admin_session(member)
    context.add_cookies([{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    problems = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.goto(f"{live_server.url}/admin/calendar-feed/")

    page.get_by_role("button", name="Create my calendar feed").click()

    field = page.get_by_label("Feed address:")
    sync_api.expect(field).to_be_visible()
    address = field.input_value()
    assert address.startswith(f"{live_server.url}/calendar/") and address.endswith(".ics")
    box = field.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width  # readable without scrolling sideways
    answer = page.request.get(address)
    assert answer.status == 200
    [event] = Calendar.from_ical(answer.body()).walk("VEVENT")
    assert str(event["SUMMARY"]) == f"{post.title} (Blog)"

    page.goto(f"{live_server.url}/admin/calendar-feed/")
    sync_api.expect(page.get_by_label("Feed address:")).to_have_count(0)
    page.get_by_role("button", name="Revoke the feed").click()

    sync_api.expect(page.get_by_text("Your calendar feed is revoked")).to_be_visible()
    assert page.request.get(address).status == 404
    assert problems == []
    context.close()
