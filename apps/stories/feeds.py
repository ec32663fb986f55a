"""The iCalendar feed of an account's schedule (RFC 5545, written by the icalendar package), which a
calendar app reads at a user's secret address (apps/stories/feed_services.py).

Each story and each post of no story is one VEVENT whose UID never changes (`story-<id>@<host>`,
`post-<id>@<host>`), so an app updates an event in place when it moves. A story is at its scheduled
time (CONFIRMED), at the time it was published, or, while a draft, at its planned time (TENTATIVE,
and the summary says "Planned"); a post at its scheduled or published time. Drafts without a time
are not on a calendar.

Only a window around today (PAST back, AHEAD ahead, at most MOST events of each kind) is sent, read
in a fixed number of queries: a feed's size and its queries stay the same however long the account
has been writing.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Case, DateTimeField, F, Min, Q, When
from django.db.models.functions import Coalesce
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from icalendar import Calendar, Event, vDuration

from apps.posts.models import Post, PublicationStatus, shown_at
from apps.posts.selectors import page_url
from apps.publishing.selectors import latest_publications
from apps.stories.models import CalendarFeed, DestinationState, Story, StoryState, StoryStatus
from apps.stories.selectors import stories_of_account, with_destinations
from apps.stories.states import destination_state

PAST = timedelta(days=60)
AHEAD = timedelta(days=365)
# A bound on each kind of event, beyond the window's: an account that plans thousands of items a
# month still gets a feed that a calendar app can read (the nearest ones first).
MOST = 2000
PRODID = "-//Content Publishing Service//Schedule//EN"
REFRESH = timedelta(hours=1)


@dataclass(frozen=True)
class Entry:
    """One event of the feed."""

    uid: str
    at: datetime
    summary: str
    description: str
    url: str | None
    tentative: bool
    modified: datetime


def calendar_feed_of(*, user) -> CalendarFeed | None:
    return CalendarFeed.objects.filter(user=user).first()


def calendar_bytes(*, user, now: datetime | None = None) -> bytes:
    """The feed of the user's account: its stories and posts in the window around `now`."""
    now = now or timezone.now()
    window = (now - PAST, now + AHEAD)
    account = user.account
    entries = [*_story_entries(account.pk, window, now), *_post_entries(account.pk, window, now)]
    entries.sort(key=lambda entry: (entry.at, entry.uid))
    calendar = Calendar.new(
        prodid=PRODID,
        uid=f"calendar-{user.pk}@{_host()}",
        name=f"{account.name}: schedule",
        description=f"The stories and posts of {account.name}, scheduled, planned and published.",
        refresh_interval=REFRESH,
        subcomponents=[_event(entry) for entry in entries],
    )
    # RFC 7986 has REFRESH-INTERVAL name its value type; Outlook reads X-PUBLISHED-TTL instead.
    calendar["REFRESH-INTERVAL"].params["VALUE"] = "DURATION"
    calendar.add("X-PUBLISHED-TTL", vDuration(REFRESH))
    return calendar.to_ical()


def _event(entry: Entry) -> Event:
    return Event.new(
        uid=entry.uid,
        start=entry.at.astimezone(UTC),
        summary=entry.summary,
        description=entry.description,
        url=entry.url,
        status="TENTATIVE" if entry.tentative else "CONFIRMED",
        # Both the revision's time, so that the same data gives the same feed.
        stamp=entry.modified.astimezone(UTC),
        last_modified=entry.modified.astimezone(UTC),
    )


def _host() -> str:
    return urlsplit(settings.SITE_URL).hostname or "localhost"


def _settings_page(model, pk: int) -> str | None:
    """The Settings area's page of the row, or None where the Settings area has none for its model."""
    try:
        path = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    except NoReverseMatch:
        return None
    return f"{settings.SITE_URL}{path}"


def _utc(at: datetime) -> str:
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _description(lead: str, destinations: list[tuple[str, str, str | None]], url: str | None) -> str:
    """The lead line, a line per destination (channel, state, address once published), the page."""
    lines = [lead]
    lines += [f"- {channel}: {state}" + (f", {address}" if address else "") for channel, state, address in destinations]
    if url:
        lines.append(f"Settings area: {url}")
    return "\n".join(lines)


# --- stories -----------------------------------------------------------------------------------


def _story_time():
    """When a story is on the calendar: its scheduled time, the first time one of its posts went out
    (or, while none has, its scheduled time, else its last change: when it was asked to), or its
    planned time while it is a draft."""
    published = Coalesce(Min("links__post__published_at"), "scheduled_at", "updated_at")
    return Case(
        When(publication_status=StoryStatus.PUBLISHED, then=published),
        When(publication_status=StoryStatus.SCHEDULED, then=F("scheduled_at")),
        default=F("planned_for"),
        output_field=DateTimeField(),
    )


def _story_entries(account_id: int, window: tuple[datetime, datetime], now: datetime) -> list[Entry]:
    stories = list(
        stories_of_account(account_id)
        .annotate(at=_story_time())
        .filter(at__range=window)
        .defer("body", "media")
        .order_by("at", "id")[:MOST]
    )
    return [_story_entry(story) for story in with_destinations(stories, now=now)]


def _story_entry(story: Story) -> Entry:
    tentative = story.publication_status == StoryStatus.DRAFT
    channels = ", ".join(destination.channel.title for destination in story.destinations)
    title = f"{story.title} ({channels})" if channels else story.title
    state = StoryState(story.state).label
    lead = (
        f"Planned for {_utc(story.at)}: a plan, nothing is published then unless the story is scheduled."
        if tentative
        else f"{state}."
    )
    destinations = [
        (destination.channel.title, DestinationState(destination.state).label, destination.url)
        for destination in story.destinations
    ]
    url = _settings_page(Story, story.pk)
    return Entry(
        uid=f"story-{story.pk}@{_host()}",
        at=story.at,
        summary=f"Planned: {title}" if tentative else title,
        description=_description(lead, destinations, url),
        url=url,
        tentative=tentative,
        modified=story.updated_at,
    )


# --- posts of no story -------------------------------------------------------------------------

_P = PublicationStatus


def _post_entries(account_id: int, window: tuple[datetime, datetime], now: datetime) -> list[Entry]:
    # Each status by the column of its time, as the posts' indexes have them (the content plan's
    # status and time; the public site's time shown), rather than by one computed time.
    waiting = Q(publication_status__in=[_P.SCHEDULED, _P.PUBLISHING_PENDING], scheduled_at__range=window)
    posts = list(
        Post.objects.of_account(account_id)
        .alias(shown=shown_at())
        .filter(waiting | Q(publication_status=_P.PUBLISHED, shown__range=window), story_link__isnull=True)
        .annotate(at=Case(When(publication_status=_P.PUBLISHED, then=F("shown")), default=F("scheduled_at")))
        .select_related("channel")
        .defer("body")
        .order_by("at", "id")[:MOST]
    )
    destined = [post.pk for post in posts if post.channel.publishes_through_destination]
    publications = latest_publications(destined) if destined else {}
    return [_post_entry(post, publications.get(post.pk), now) for post in posts]


def _post_entry(post: Post, publication, now: datetime) -> Entry:
    state = destination_state(
        status=post.publication_status, scheduled_at=post.scheduled_at, publication=publication, now=now
    )
    url = _settings_page(Post, post.pk)
    label = DestinationState(state).label
    destinations = [(post.channel.title, label, page_url(post, publication))]
    return Entry(
        uid=f"post-{post.pk}@{_host()}",
        at=post.at,
        summary=f"{post.title} ({post.channel.title})",
        description=_description(f"{label}.", destinations, url),
        url=url,
        tentative=False,
        modified=post.updated_at,
    )
