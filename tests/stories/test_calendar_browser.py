"""The calendar's script in a real browser (Chromium through Playwright): a card dragged to another
day keeps its time of day in the viewer's zone (not the browser's), to another hour in the week; a
tray draft dragged onto a day is planned for 09:00 there; the arrow keys and Enter move a card; the
"Move to" form lists what the chosen day has; the page reads at 375 and 1400 pixels."""

from datetime import UTC, datetime

import pytest

from apps.posts.writing import Writer
from apps.stories.models import Story
from apps.stories.services import ChannelChoice, story_create
from tests.conftest import admin_session, needs_chromium
from tests.factories import ChannelFactory, PostFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]

EDITOR = Writer(may_publish=True)


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def signed_in(live_server, browser):
    """A page of a browser in Tokyo signed in as an editor whose zone is New York, and that editor;
    problems collects the page's script errors."""
    user = UserFactory(timezone="America/New_York")
    context = browser.new_context(timezone_id="Asia/Tokyo", viewport={"width": 1400, "height": 900})
    session = admin_session(user)
    context.add_cookies([{"name": "sessionid", "value": session.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.problems = []
    page.on("console", lambda message: message.type == "error" and page.problems.append(message.text))
    page.on("pageerror", lambda error: page.problems.append(str(error)))
    yield page, user
    context.close()


def story(user, title, **fields) -> Story:
    channel = ChannelFactory(account=user.account, title=f"{title} blog")
    return story_create(
        account_id=user.account_id, writer=EDITOR, title=title, channels=[ChannelChoice(channel.pk)], **fields
    )


def card(page, item: Story):
    return page.locator(f'.cal-card[data-item="story-{item.pk}"]')


def test_a_card_dragged_to_another_day_keeps_its_time_of_day_in_the_viewers_zone(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    plan = story(user, "Launch", planned_for=utc(2027, 1, 14, 15, 45))  # 10:45 in New York, 00:45 in Tokyo
    page.goto(f"{live_server.url}/admin/calendar/?date=2027-01-10")
    sync_api.expect(page.locator(".cal-zone")).to_contain_text("America/New_York")
    sync_api.expect(card(page, plan).locator(".cal-time")).to_have_text("10:45")

    card(page, plan).drag_to(page.locator('.cal-day[data-date="2027-01-20"]'))

    moved = page.locator('.cal-day[data-date="2027-01-20"]').locator(f'[data-item="story-{plan.pk}"]')
    sync_api.expect(moved).to_have_count(1)
    sync_api.expect(page.locator(".cal-status")).to_contain_text("moved to Wed 20 Jan 2027 10:45 (America/New_York)")
    sync_api.expect(moved.locator(".cal-time")).to_have_text("10:45")
    assert Story.objects.get(pk=plan.pk).planned_for == utc(2027, 1, 20, 15, 45)
    page.reload()
    sync_api.expect(moved.locator(".cal-time")).to_have_text("10:45")
    assert page.problems == []


def test_in_the_week_a_card_dragged_to_another_hour_moves_there(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    commitment = story(user, "Webinar", publication_status="scheduled", scheduled_at=utc(2027, 1, 13, 15, 45))
    # Tall enough for the morning's card and the afternoon's slot at once (a drag needs both in view).
    page.set_viewport_size({"width": 1400, "height": 1400})
    page.goto(f"{live_server.url}/admin/calendar/?view=week&date=2027-01-13")

    slot = page.locator('.cal-slot[data-date="2027-01-15"][data-hour="16"]')
    card(page, commitment).drag_to(slot)

    sync_api.expect(slot.locator(f'[data-item="story-{commitment.pk}"] .cal-time')).to_have_text("16:45")
    assert Story.objects.get(pk=commitment.pk).scheduled_at == utc(2027, 1, 15, 21, 45)
    assert page.problems == []


def test_a_tray_draft_dragged_onto_a_day_is_planned_for_nine_there(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    draft = story(user, "Someday")
    page.goto(f"{live_server.url}/admin/calendar/?date=2027-01-10")
    sync_api.expect(page.locator(".cal-tray").locator(f'[data-item="story-{draft.pk}"]')).to_have_count(1)

    card(page, draft).drag_to(page.locator('.cal-day[data-date="2027-01-22"]'))

    placed = page.locator('.cal-day[data-date="2027-01-22"]').locator(f'[data-item="story-{draft.pk}"]')
    sync_api.expect(placed.locator(".cal-timing")).to_have_text("Planned")
    sync_api.expect(placed.locator(".cal-time")).to_have_text("09:00")
    sync_api.expect(page.locator(".cal-tray").locator(f'[data-item="story-{draft.pk}"]')).to_have_count(0)
    assert Story.objects.get(pk=draft.pk).planned_for == utc(2027, 1, 22, 14)
    assert page.problems == []


def test_the_arrow_keys_and_enter_move_a_focused_card(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    plan = story(user, "Keyboard", planned_for=utc(2027, 1, 14, 15, 45))
    story(user, "Already there", planned_for=utc(2027, 1, 23, 13))
    page.goto(f"{live_server.url}/admin/calendar/?date=2027-01-10")

    card(page, plan).focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")  # a week on, in the month
    sync_api.expect(page.locator(".cal-status")).to_contain_text("Move to 2027-01-23 10:45 (America/New_York)?")
    sync_api.expect(page.locator(".cal-status")).to_contain_text("That day has: 08:00 Already there")
    page.keyboard.press("Enter")

    sync_api.expect(
        page.locator('.cal-day[data-date="2027-01-23"]').locator(f'[data-item="story-{plan.pk}"]')
    ).to_have_count(1)
    assert Story.objects.get(pk=plan.pk).planned_for == utc(2027, 1, 23, 15, 45)
    sync_api.expect(card(page, plan)).to_be_focused()
    assert page.problems == []


def test_the_move_form_lists_what_the_chosen_day_already_has(live_server, signed_in):
    from playwright import sync_api

    page, user = signed_in
    plan = story(user, "Chosen", planned_for=utc(2027, 1, 14, 15, 45))
    story(user, "Busy day", planned_for=utc(2027, 1, 28, 14, 30))
    page.goto(f"{live_server.url}/admin/calendar/?date=2027-01-10")

    card(page, plan).locator("summary").click()
    card(page, plan).locator("input[name=to]").fill("2027-01-28T11:00")

    sync_api.expect(card(page, plan).locator(".cal-day-list")).to_contain_text("09:30 planned: Busy day")
    card(page, plan).locator("button[type=submit]").click()
    sync_api.expect(page.locator(".messagelist")).to_contain_text("moved to Thu 28 Jan 2027 11:00 (America/New_York)")
    assert Story.objects.get(pk=plan.pk).planned_for == utc(2027, 1, 28, 16)
    assert page.problems == []


@pytest.mark.parametrize("width", [375, 1400])
@pytest.mark.parametrize("view", ["month", "week"])
def test_the_page_reads_at_a_phones_and_a_desktops_width(live_server, signed_in, width, view):
    page, user = signed_in
    items = [
        story(user, f"Story with a rather long title number {n}", planned_for=utc(2027, 1, 13, 14 + n))
        for n in range(3)
    ]
    post = PostFactory(
        channel=ChannelFactory(account=user.account), publication_status="scheduled", scheduled_at=utc(2027, 1, 13, 20)
    )
    story(user, "In the tray")
    page.set_viewport_size({"width": width, "height": 900})

    page.goto(f"{live_server.url}/admin/calendar/?view={view}&date=2027-01-13", wait_until="networkidle")

    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    shown = [card(page, item) for item in items] + [page.locator(f'[data-item="post-{post.pk}"]')]
    for each in shown:
        each.scroll_into_view_if_needed()
        box = each.bounding_box()
        assert box is not None and box["width"] > 40, f"a card is squeezed at {width} px"
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
    assert page.problems == []
