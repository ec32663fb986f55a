"""A member's calendar feed of the account's schedule: read by the icalendar package as a calendar app
reads it, at a secret address that only its digest is kept of; each story and post an event with a
stable UID at its time in UTC, planned stories tentative and scheduled ones confirmed, another
account's items absent; revoked, replaced or its owner no longer allowed, the address answers 404;
the same number of queries however many items the window holds."""

import hashlib
import logging
from datetime import UTC, timedelta
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from icalendar import Calendar

from apps.core.errors import DomainError, Forbidden, NotFound
from apps.posts.writing import Writer
from apps.stories.feed_services import (
    calendar_feed_create,
    calendar_feed_read,
    calendar_feed_replace,
    calendar_feed_revoke,
)
from apps.stories.models import CalendarFeed
from apps.stories.services import ChannelChoice, story_create
from tests.factories import (
    AccountFactory,
    ChannelFactory,
    GitDestinationFactory,
    OperatorFactory,
    PostFactory,
    PublicationJobFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

EDITOR = Writer(may_publish=True)


@pytest.fixture
def account():
    return AccountFactory(name="Harbour News")


@pytest.fixture
def member(account):
    return UserFactory(account=account, role="editor")


@pytest.fixture
def blog(account):
    return ChannelFactory(account=account, platform="blog", title="Blog")


@pytest.fixture
def api(account):
    return ChannelFactory(account=account, platform="api", title="App")


def feed_address(raw: str) -> str:
    return reverse("calendar-feed", args=[raw])


def read(raw: str):
    return Client().get(feed_address(raw))


def events_of(response) -> dict[str, object]:
    """The feed's events by UID, as a calendar app reads them."""
    assert response.status_code == 200
    calendar = Calendar.from_ical(response.content)
    return {str(event["UID"]): event for event in calendar.walk("VEVENT")}


def uid(kind: str, pk: int) -> str:
    """An event's UID: the item's kind and id on the service's host."""
    return f"{kind}-{pk}@{urlsplit(settings.SITE_URL).hostname}"


def test_the_feed_has_each_story_and_post_at_its_time_in_utc_with_a_stable_uid(account, member, blog, api):
    soon = (timezone.now() + timedelta(days=3)).replace(microsecond=0)
    scheduled = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Launch",
        publication_status="scheduled",
        scheduled_at=soon,
        channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk)],
    )
    post = PostFactory(channel=blog, title="Opening hours", publication_status="scheduled", scheduled_at=soon)
    _, raw = calendar_feed_create(user=member)

    response = read(raw)

    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    calendar = Calendar.from_ical(response.content)
    assert str(calendar["X-WR-CALNAME"]) == "Harbour News: schedule"
    assert calendar.refresh_interval == timedelta(hours=1)
    events = events_of(response)
    assert set(events) == {uid("story", scheduled.pk), uid("post", post.pk)}
    story_event = events[uid("story", scheduled.pk)]
    assert story_event.decoded("DTSTART") == soon
    assert story_event.decoded("DTSTART").utcoffset() == timedelta(0)
    assert story_event["DTSTART"].to_ical().endswith(b"Z")
    assert str(story_event["SUMMARY"]) == "Launch (Blog, App)"
    assert str(story_event["STATUS"]) == "CONFIRMED"
    description = str(story_event["DESCRIPTION"])
    assert "- Blog: Scheduled" in description
    assert "- App: Scheduled" in description
    post_event = events[uid("post", post.pk)]
    assert str(post_event["SUMMARY"]) == "Opening hours (Blog)"
    assert post_event.decoded("DTSTART") == soon
    page = f"{settings.SITE_URL}{reverse('admin:posts_post_change', args=[post.pk])}"
    assert str(post_event["URL"]) == page
    assert f"Settings area: {page}" in str(post_event["DESCRIPTION"])
    # Read again, the same events keep their UIDs (an app updates them in place).
    assert set(events_of(read(raw))) == set(events)


def test_a_planned_story_is_tentative_and_says_so_and_a_scheduled_one_is_confirmed(account, member, blog):
    planned_for = (timezone.now() + timedelta(days=10)).replace(microsecond=0)
    planned = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Autumn issue",
        planned_for=planned_for,
        channels=[ChannelChoice(blog.pk)],
    )
    undated = story_create(account_id=account.pk, writer=EDITOR, title="Someday", channels=[ChannelChoice(blog.pk)])
    _, raw = calendar_feed_create(user=member)

    events = events_of(read(raw))

    assert uid("story", undated.pk) not in events
    event = events[uid("story", planned.pk)]
    assert str(event["STATUS"]) == "TENTATIVE"
    assert str(event["SUMMARY"]) == "Planned: Autumn issue (Blog)"
    assert event.decoded("DTSTART") == planned_for
    assert "a plan, nothing is published then" in str(event["DESCRIPTION"])


def test_published_items_are_on_it_at_their_time_and_the_window_bounds_it(account, member, blog):
    now = timezone.now()
    published = story_create(
        account_id=account.pk,
        writer=EDITOR,
        title="Out now",
        publication_status="published",
        channels=[ChannelChoice(blog.pk)],
    )
    recent = PostFactory(channel=blog, publication_status="published", published_at=now - timedelta(days=5))
    # Out of the window (60 days back, 365 ahead), or without a time:
    PostFactory(channel=blog, publication_status="published", published_at=now - timedelta(days=90))
    PostFactory(channel=blog, publication_status="scheduled", scheduled_at=now + timedelta(days=400))
    PostFactory(channel=blog, publication_status="draft")
    story_create(account_id=account.pk, writer=EDITOR, title="Far off", planned_for=now + timedelta(days=400))
    _, raw = calendar_feed_create(user=member)

    events = events_of(read(raw))

    assert set(events) == {uid("story", published.pk), uid("post", recent.pk)}
    story_post = published.links.get().post
    event = events[uid("story", published.pk)]
    assert event.decoded("DTSTART") == story_post.published_at.astimezone(UTC).replace(microsecond=0)
    assert str(event["STATUS"]) == "CONFIRMED"
    assert "- Blog: Published, http" in str(event["DESCRIPTION"])


def test_a_destination_that_failed_for_good_says_so(account, member):
    git = GitDestinationFactory(channel__account=account, channel__title="Docs").channel
    post = PostFactory(channel=git, publication_status="scheduled", scheduled_at=timezone.now() - timedelta(hours=1))
    PublicationJobFactory(channel=git, post_id=post.pk, state="failed", last_error="push refused")
    _, raw = calendar_feed_create(user=member)

    event = events_of(read(raw))[uid("post", post.pk)]

    assert "- Docs: Failed" in str(event["DESCRIPTION"])


def test_another_accounts_stories_and_posts_are_not_in_the_feed(account, member, blog):
    soon = timezone.now() + timedelta(days=2)
    other = AccountFactory()
    their_channel = ChannelFactory(account=other)
    theirs = story_create(
        account_id=other.pk,
        writer=EDITOR,
        title="Theirs",
        publication_status="scheduled",
        scheduled_at=soon,
        channels=[ChannelChoice(their_channel.pk)],
    )
    their_post = PostFactory(channel=their_channel, publication_status="scheduled", scheduled_at=soon)
    ours = PostFactory(channel=blog, publication_status="scheduled", scheduled_at=soon)
    _, raw = calendar_feed_create(user=member)
    _, their_raw = calendar_feed_create(user=UserFactory(account=other))

    assert set(events_of(read(raw))) == {uid("post", ours.pk)}
    assert set(events_of(read(their_raw))) == {uid("story", theirs.pk), uid("post", their_post.pk)}


def test_the_feed_is_private_not_indexed_and_its_secret_stays_out_of_the_request_log(member, caplog):
    _, raw = calendar_feed_create(user=member)

    with caplog.at_level(logging.INFO, logger="cps.request"):
        response = read(raw)

    assert "private" in response["Cache-Control"]
    assert "noindex" in response["X-Robots-Tag"]
    assert raw not in caplog.text
    assert "/calendar/[token].ics" in caplog.text
    assert Client().post(feed_address(raw)).status_code == 405


def test_the_secret_is_stored_only_as_its_digest(member):
    feed, raw = calendar_feed_create(user=member)

    stored = CalendarFeed.objects.filter(pk=feed.pk).values().get()
    assert raw not in [str(value) for value in stored.values()]
    assert stored["token_hash"] == hashlib.sha256(raw.encode()).hexdigest()
    assert len(raw) >= 43  # 256 random bits


def test_an_unknown_secret_answers_404(member):
    calendar_feed_create(user=member)

    assert read("not-a-feed").status_code == 404


def test_a_revoked_feed_answers_404(member):
    _, raw = calendar_feed_create(user=member)
    assert read(raw).status_code == 200

    assert calendar_feed_revoke(user=member) is True

    assert read(raw).status_code == 404
    assert calendar_feed_revoke(user=member) is False


def test_a_replaced_feed_answers_404_at_the_old_address_and_200_at_the_new_one(member):
    _, old = calendar_feed_create(user=member)
    read(old)

    _, new = calendar_feed_replace(user=member)

    assert read(old).status_code == 404
    assert read(new).status_code == 200
    assert CalendarFeed.objects.filter(user=member).count() == 1


def test_a_feed_is_made_once_and_only_an_existing_one_is_replaced(member):
    with pytest.raises(NotFound):
        calendar_feed_replace(user=member)
    calendar_feed_create(user=member)
    with pytest.raises(DomainError, match="already have a calendar feed"):
        calendar_feed_create(user=member)


def test_a_deactivated_member_s_feed_answers_404(member):
    _, raw = calendar_feed_create(user=member)

    member.status = "suspended"
    member.save()

    assert read(raw).status_code == 404


def test_a_member_who_loses_articles_read_has_a_feed_that_answers_404(member):
    _, raw = calendar_feed_create(user=member)

    member.permissions = [p for p in member.permissions if p != "articles.read"]
    member.save()

    assert read(raw).status_code == 404
    with pytest.raises(Forbidden, match=r"articles\.read"):
        calendar_feed_replace(user=member)


def test_an_operator_has_no_feed():
    with pytest.raises(Forbidden, match="operators belong to no account"):
        calendar_feed_create(user=OperatorFactory())


def test_a_read_is_noted_at_most_once_in_a_while(member):
    feed, raw = calendar_feed_create(user=member)

    first = calendar_feed_read(raw=raw).last_read_at
    again = calendar_feed_read(raw=raw).last_read_at

    assert first is not None and again == first
    feed.refresh_from_db()
    assert feed.last_read_at == first


def test_the_feed_reads_the_same_number_of_queries_however_many_items_it_holds(account, member, blog, api):
    # A destination's posts have publication jobs, which the feed reads for their state.
    git = GitDestinationFactory(channel__account=account, channel__title="Docs").channel
    _, raw = calendar_feed_create(user=member)

    def add_items(count: int) -> None:
        for n in range(count):
            at = timezone.now() + timedelta(days=n + 1)
            story_create(
                account_id=account.pk,
                writer=EDITOR,
                title=f"Story {n}",
                publication_status="scheduled",
                scheduled_at=at,
                channels=[ChannelChoice(blog.pk), ChannelChoice(api.pk), ChannelChoice(git.pk)],
            )
            story_create(account_id=account.pk, writer=EDITOR, title=f"Plan {n}", planned_for=at)
            PostFactory(channel=blog, publication_status="scheduled", scheduled_at=at)
            PostFactory(channel=git, publication_status="scheduled", scheduled_at=at)
            PostFactory(channel=api, publication_status="published", published_at=timezone.now() - timedelta(days=n))

    def queries_of_a_read() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            response = read(raw)
        return len(queries), len(events_of(response))

    add_items(1)
    read(raw)  # its last read noted: the reads measured write nothing
    few, few_events = queries_of_a_read()
    add_items(12)
    many, many_events = queries_of_a_read()

    assert (few_events, many_events) == (5, 65)
    assert many == few
