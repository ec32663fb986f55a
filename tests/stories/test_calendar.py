"""The calendar in the Settings area: a month or a week of the account's stories and lone posts in
the viewer's time zone, planned and scheduled told apart, the tray of undated drafts, filters, and
moves that keep a card's time of day (across a change of daylight saving time too), refused where
a rule says so; nothing of another account; a fixed number of queries however many items."""

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.posts.models import Post
from apps.posts.writing import Writer
from apps.stories.models import Story
from apps.stories.services import ChannelChoice, story_create
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    ChannelFactory,
    GitDestinationFactory,
    OperatorFactory,
    PostFactory,
    TeamFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

EDITOR = Writer(may_publish=True)
CALENDAR, MOVE, DAY = "/admin/calendar/", "/admin/calendar/move/", "/admin/calendar/day/"
JSON = {"HTTP_ACCEPT": "application/json"}


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def editor():
    return UserFactory(timezone="Europe/Berlin")


@pytest.fixture
def blog(editor):
    return ChannelFactory(account=editor.account, title="Blog")


@pytest.fixture
def client(editor):
    return admin_session(editor)


def story(channel, title, **fields) -> Story:
    return story_create(
        account_id=channel.account_id, writer=EDITOR, title=title, channels=[ChannelChoice(channel.pk)], **fields
    )


def scheduled(channel, title, at) -> Story:
    return story(channel, title, publication_status="scheduled", scheduled_at=at)


def cards(response) -> dict[str, str]:
    """Each card's item key and the text of its head (time and timing)."""
    html = response.content.decode()
    found = re.findall(r'data-item="([^"]+)".*?<p class="cal-card-head">(.*?)</p>', html, re.S)
    return {key: re.sub(r"<[^>]+>", "", head).strip() for key, head in found}


def day_of(response, key: str) -> str:
    html = response.content.decode()
    return re.search(rf'data-item="{key}" data-date="([^"]*)"', html)[1]


def test_the_month_shows_stories_and_lone_posts_in_the_viewers_zone_planned_and_scheduled_apart(client, blog):
    plan = story(blog, "A plan", planned_for=utc(2027, 1, 14, 8, 30))
    commitment = scheduled(blog, "A commitment", utc(2027, 1, 20, 23, 15))
    published = PostFactory(channel=blog, title="Out", publication_status="published", published_at=utc(2027, 1, 5, 7))
    undated = story(blog, "Some day")

    response = client.get(CALENDAR, {"date": "2027-01-10"})

    assert response.status_code == 200
    shown = cards(response)
    assert shown[f"story-{plan.pk}"] == "09:30 Planned"
    # 23:15 UTC is the next day in Berlin.
    assert shown[f"story-{commitment.pk}"] == "00:15 Scheduled"
    assert day_of(response, f"story-{commitment.pk}") == "2027-01-21"
    assert shown[f"post-{published.pk}"] == "08:00 Published"
    assert shown[f"story-{undated.pk}"] == "Undated"
    html = response.content.decode()
    assert 'class="cal-card cal-planned"' in html and 'class="cal-card cal-scheduled"' in html
    assert "Europe/Berlin" in html
    # A marker per destination, with its state.
    assert 'class="cal-marker cal-state-scheduled" title="Blog (blog): scheduled"' in html
    # The story's posts are the story's: not cards of their own.
    assert not any(key.startswith("post-") and key != f"post-{published.pk}" for key in shown)


def test_the_week_places_each_card_in_its_hour_of_the_viewers_zone(client, blog, editor):
    editor.timezone = "America/New_York"
    editor.save()
    plan = story(blog, "Morning plan", planned_for=utc(2027, 1, 13, 15, 45))

    response = client.get(CALENDAR, {"view": "week", "date": "2027-01-13"})

    html = response.content.decode()
    assert "America/New_York" in html
    slot = re.search(r'data-date="2027-01-13" data-hour="10">.*?</ol>', html, re.S)[0]
    assert f'data-item="story-{plan.pk}"' in slot
    assert cards(response)[f"story-{plan.pk}"] == "10:45 Planned"


def test_another_accounts_items_are_never_shown_nor_moved(client, blog):
    elsewhere = ChannelFactory(account=AccountFactory())
    theirs = story(elsewhere, "Theirs", planned_for=utc(2027, 1, 14, 9))
    their_post = PostFactory(channel=elsewhere, publication_status="scheduled", scheduled_at=utc(2027, 1, 15, 9))
    their_draft = story(elsewhere, "Their draft")

    response = client.get(CALENDAR, {"date": "2027-01-10"})
    shown = cards(response)
    assert not {f"story-{theirs.pk}", f"post-{their_post.pk}", f"story-{their_draft.pk}"} & set(shown)
    assert "Theirs" not in client.get(DAY, {"date": "2027-01-14"}).content.decode()

    moved = client.post(MOVE, {"item": f"story-{theirs.pk}", "date": "2027-01-16"}, **JSON)
    assert moved.status_code == 404
    assert Story.objects.get(pk=theirs.pk).planned_for == utc(2027, 1, 14, 9)
    # Their channel is no filter here either.
    assert client.get(CALENDAR, {"channel": elsewhere.pk}).status_code == 400


def test_filters_by_channel_team_and_state(client, blog, editor):
    other_team = TeamFactory(account=editor.account, name="Docs")
    docs = ChannelFactory(account=editor.account, team=other_team, title="Docs")
    on_blog = story(blog, "On the blog", planned_for=utc(2027, 1, 14, 9))
    on_docs = scheduled(docs, "In the docs", utc(2027, 1, 15, 9))
    lone = PostFactory(channel=docs, publication_status="scheduled", scheduled_at=utc(2027, 1, 16, 9))

    def keys(**query):
        return set(cards(client.get(CALENDAR, {"date": "2027-01-10", **query})))

    assert keys(channel=blog.pk) >= {f"story-{on_blog.pk}"}
    assert not keys(channel=blog.pk) & {f"story-{on_docs.pk}", f"post-{lone.pk}"}
    assert {f"story-{on_docs.pk}", f"post-{lone.pk}"} <= keys(team=other_team.pk)
    assert f"story-{on_blog.pk}" not in keys(team=other_team.pk)
    assert keys(state="scheduled") >= {f"story-{on_docs.pk}", f"post-{lone.pk}"}
    assert f"story-{on_blog.pk}" not in keys(state="scheduled")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"channel": "abc"}, "The channel is chosen by its id, a number: &#x27;abc&#x27; is not one."),
        ({"channel": "999999"}, "No channel 999999 in this account."),
        ({"team": "1\x00"}, "The team is chosen by its id, a number"),
        ({"state": "lost"}, "&#x27;lost&#x27; is not a state; choose one of draft"),
        ({"date": "2027-13-01"}, "&#x27;2027-13-01&#x27; is not a date: write it as YYYY-MM-DD."),
        ({"view": "year"}, "&#x27;year&#x27; is not a view of the calendar: choose month or week."),
    ],
)
def test_a_bad_filter_is_a_clear_message_never_a_500(client, blog, query, message):
    response = client.get(CALENDAR, query)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_a_planned_card_moved_to_another_day_keeps_its_time_of_day_across_the_change_to_summer_time(client, blog):
    # 10:30 in Berlin on Friday 26 March 2027 is 09:30 UTC; on Tuesday 30 March (summer time) 08:30 UTC.
    plan = story(blog, "Spring", planned_for=utc(2027, 3, 26, 9, 30))

    response = client.post(MOVE, {"item": f"story-{plan.pk}", "date": "2027-03-30"}, **JSON)

    assert response.status_code == 200, response.content
    assert Story.objects.get(pk=plan.pk).planned_for == utc(2027, 3, 30, 8, 30)
    answer = response.json()
    assert (answer["date"], answer["time"], answer["timing"]) == ("2027-03-30", "10:30", "planned")
    assert "Europe/Berlin" in answer["message"]


def test_a_scheduled_story_moves_its_posts_and_keeps_its_time_of_day_across_the_change_to_winter_time(client, blog):
    # 18:00 in Berlin on Friday 29 October 2027 is 16:00 UTC; on Monday 1 November (winter time) 17:00 UTC.
    commitment = scheduled(blog, "Autumn", utc(2027, 10, 29, 16))

    response = client.post(MOVE, {"item": f"story-{commitment.pk}", "date": "2027-11-01"}, **JSON)

    assert response.status_code == 200, response.content
    assert Story.objects.get(pk=commitment.pk).scheduled_at == utc(2027, 11, 1, 17)
    assert Post.objects.get(story_link__story=commitment).scheduled_at == utc(2027, 11, 1, 17)


def test_in_the_week_a_card_moves_to_another_hour_keeping_its_minutes(client, blog):
    commitment = scheduled(blog, "Lunch", utc(2027, 1, 14, 11, 20))  # 12:20 in Berlin

    response = client.post(MOVE, {"item": f"story-{commitment.pk}", "date": "2027-01-15", "hour": "16"}, **JSON)

    assert response.json()["time"] == "16:20"
    assert Story.objects.get(pk=commitment.pk).scheduled_at == utc(2027, 1, 15, 15, 20)


def test_a_tray_draft_dropped_on_a_day_is_planned_for_nine_oclock_there_and_leaves_the_tray(client, blog):
    draft = story(blog, "Some day")

    response = client.post(MOVE, {"item": f"story-{draft.pk}", "date": "2027-07-01"}, **JSON)

    assert response.json()["time"] == "09:00"
    draft.refresh_from_db()
    assert (draft.planned_for, draft.publication_status, draft.scheduled_at) == (utc(2027, 7, 1, 7), "draft", None)
    assert cards(client.get(CALENDAR, {"date": "2027-07-01"}))[f"story-{draft.pk}"] == "09:00 Planned"


def test_a_lone_post_moves_through_the_posts_write(client, blog):
    post = PostFactory(channel=blog, publication_status="scheduled", scheduled_at=utc(2027, 2, 1, 8))

    response = client.post(MOVE, {"item": f"post-{post.pk}", "to": "2027-02-03T14:05"}, **JSON)

    assert response.status_code == 200, response.content
    post.refresh_from_db()
    assert (post.scheduled_at, post.publication_status) == (utc(2027, 2, 3, 13, 5), "scheduled")


def test_the_move_form_without_script_comes_back_to_the_calendar_with_a_message(client, blog):
    plan = story(blog, "By form", planned_for=utc(2027, 1, 14, 9))
    back = "/admin/calendar/?date=2027-01-10"

    response = client.post(MOVE, {"item": f"story-{plan.pk}", "to": "2027-01-20T11:00", "next": back}, follow=True)

    assert response.redirect_chain == [(back, 302)]
    assert "“By form” moved to Wed 20 Jan 2027 11:00 (Europe/Berlin)." in response.content.decode()
    assert Story.objects.get(pk=plan.pk).planned_for == utc(2027, 1, 20, 10)
    refused = client.post(MOVE, {"item": f"story-{plan.pk}", "to": "soon", "next": back}, follow=True)
    assert "Nothing was moved: &#x27;soon&#x27; is not a date and time" in refused.content.decode()


def test_a_scheduled_card_moved_into_the_past_is_refused_with_the_services_message(client, blog):
    commitment = scheduled(blog, "Soon", timezone.now() + timedelta(days=2))
    yesterday = (timezone.now() - timedelta(days=1)).date().isoformat()

    response = client.post(MOVE, {"item": f"story-{commitment.pk}", "date": yesterday}, **JSON)

    assert response.status_code == 400
    assert "is in the past: pick a future time, or publish the story now." in response.json()["error"]
    post = PostFactory(channel=blog, publication_status="scheduled", scheduled_at=timezone.now() + timedelta(days=2))
    response = client.post(MOVE, {"item": f"post-{post.pk}", "date": yesterday}, **JSON)
    assert "is in the past: pick a future time, or publish the post now." in response.json()["error"]


def test_a_published_story_stands_on_the_day_its_first_destination_published_it_and_stays_there(client, blog):
    out = story(blog, "Out now", publication_status="published")
    published_at = Post.objects.get(story_link__story=out).published_at
    local = published_at.astimezone(ZoneInfo("Europe/Berlin"))

    response = client.get(CALENDAR, {"date": local.date().isoformat()})

    assert cards(response)[f"story-{out.pk}"] == f"{local:%H:%M} Published"
    assert day_of(response, f"story-{out.pk}") == local.date().isoformat()
    moved = client.post(MOVE, {"item": f"story-{out.pk}", "date": "2027-01-06"}, **JSON)
    assert (moved.status_code, moved.json()["error"]) == (400, "“Out now” is published: it stays where it is.")


def test_published_items_stay_where_they_are(client, blog):
    out = PostFactory(channel=blog, publication_status="published", published_at=utc(2026, 1, 5, 7))

    response = client.post(MOVE, {"item": f"post-{out.pk}", "date": "2027-01-06"}, **JSON)

    assert response.status_code == 400
    assert response.json()["error"] == f"“{out.title}” is published: it stays where it is."


@pytest.mark.parametrize(
    ("permissions", "what", "message"),
    [
        (
            ["articles.read", "articles.write"],
            "scheduled",
            "Moving a scheduled time needs the permission articles.publish.",
        ),
        (
            ["articles.read", "articles.publish"],
            "planned",
            "Moving a story's plan needs the permission articles.write.",
        ),
    ],
)
def test_a_move_needs_the_permission_of_what_moves(blog, editor, permissions, what, message):
    editor.permissions = permissions
    editor.save()
    if what == "scheduled":
        item = scheduled(blog, "Committed", utc(2027, 1, 14, 9))
    else:
        item = story(blog, "Planned", planned_for=utc(2027, 1, 14, 9))

    response = admin_session(editor).post(MOVE, {"item": f"story-{item.pk}", "date": "2027-01-16"}, **JSON)

    assert (response.status_code, response.json()) == (403, {"error": message})
    # The page offers no "Move to" form for it.
    page = admin_session(editor).get(CALENDAR, {"date": "2027-01-10"}).content.decode()
    assert f'data-item="story-{item.pk}"' in page
    assert 'name="item" value="story-' not in page


def test_the_calendar_needs_articles_read_and_an_account(blog, editor):
    editor.permissions = ["articles.write"]
    editor.save()
    assert admin_session(editor).get(CALENDAR).status_code == 403
    operator = admin_session(OperatorFactory())
    response = operator.get(CALENDAR)
    assert response.status_code == 403
    assert "an operator belongs to no account" in response.content.decode()
    assert admin_session(editor).get(MOVE).status_code == 405


def test_the_date_picker_lists_what_the_chosen_day_already_has(client, blog):
    story(blog, "Late", planned_for=utc(2027, 1, 14, 22, 30))  # 23:30 on the 14th in Berlin
    story(blog, "Next day", planned_for=utc(2027, 1, 14, 23, 30))  # 00:30 on the 15th

    answer = client.get(DAY, {"date": "2027-01-14"}).json()

    assert [(item["time"], item["title"]) for item in answer["items"]] == [("23:30", "Late")]
    assert client.get(DAY, {"date": "x"}).status_code == 400


def test_the_index_links_to_the_calendar(client):
    assert 'href="/admin/calendar/">Calendar</a>' in client.get("/admin/").content.decode()


def test_a_month_is_read_in_the_same_number_of_queries_however_many_items_it_holds(client, blog, editor):
    def seed(count: int, offset: int) -> None:
        channel = GitDestinationFactory(channel__account=editor.account).channel
        for n in range(count):
            at = utc(2027, 1, 3 + n % 25, 9) + timedelta(minutes=offset)
            story(blog, f"Plan {offset}-{n}", planned_for=at)
            scheduled(channel, f"Commitment {offset}-{n}", at)
            PostFactory(channel=channel, publication_status="scheduled", scheduled_at=at)
            PostFactory(channel=blog, publication_status="published", published_at=at)
        story(blog, f"Undated {offset}")

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(CALENDAR, {"date": "2027-01-10"})
        assert response.status_code == 200
        return len(captured)

    seed(2, 0)
    few = queries()
    seed(20, 1)
    assert queries() == few
    assert len(cards(client.get(CALENDAR, {"date": "2027-01-10"}))) == 4 * 22 + 2


def test_the_calendar_links_to_the_calendar_feed(client):
    assert 'href="/admin/calendar-feed/">calendar feed</a>' in client.get("/admin/calendar/").content.decode()
