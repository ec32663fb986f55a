"""The calendar's reads and its one change: an account's stories, and its posts that belong to no
story, placed on a day and a time of a range; the undated drafts beside it (the tray); and a card
moved to another day or time.

Where an item stands: a published one on the day it was published (a story on its first
destination's day), a scheduled one on its scheduled time (a commitment: the content plan publishes
it then), a draft story on its `planned_for` (a plan, which publishes nothing). A draft story with
neither is undated: it waits in the tray. A range of any size is read in a fixed number of queries
(the stories, their destinations in with_destinations' queries, the lone posts and their jobs).

Times are stored in UTC; the days and times of day are the viewer's (`zone`), so a card moved to
another day keeps the time of day its viewer sees, across a change of daylight saving time too.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.channels.models import Channel, Team, through_destination
from apps.core.errors import Forbidden, NotFound
from apps.core.validation import field_error
from apps.posts.models import Post, PublicationStatus
from apps.posts.writing import Writer, post_write
from apps.publishing.selectors import latest_publications
from apps.stories.models import DestinationState, StoryPost, StoryState, StoryStatus
from apps.stories.selectors import stories_of_account
from apps.stories.services import story_update
from apps.stories.states import destination_state, story_state

PLANNED, SCHEDULED, PUBLISHED, UNDATED = "planned", "scheduled", "published", "undated"
TIMING_LABELS = {PLANNED: "Planned", SCHEDULED: "Scheduled", PUBLISHED: "Published", UNDATED: "Undated"}
STORY, POST = "story", "post"
# What the state filter offers: a story's states and a lone post's (a destination's), once each.
STATES: dict[str, str] = dict(StoryState.choices) | dict(DestinationState.choices)
# Where a draft dropped from the tray lands on its day, in the viewer's zone.
TRAY_TIME = time(9, 0)
TRAY_SIZE = 50
ITEM_NOT_FOUND = "Nothing of this account's calendar has this id."
NO_PLANNING = "Moving a story's plan needs the permission articles.write."
NO_SCHEDULING = "Moving a scheduled time needs the permission articles.publish."
_P = PublicationStatus


@dataclass(frozen=True)
class Marker:
    """One destination of an item: its channel and what the item is there."""

    channel: str
    platform: str
    state: str


@dataclass(frozen=True)
class CalendarItem:
    kind: str  # STORY or POST (a post that belongs to no story)
    id: int
    title: str
    at: datetime | None  # UTC; None in the tray
    timing: str  # PLANNED, SCHEDULED, PUBLISHED or UNDATED
    state: str  # a story's StoryState, a lone post's DestinationState
    markers: tuple[Marker, ...]
    # The permission its move needs (articles.write for a plan, articles.publish for a scheduled
    # time), or "" when it stays where it is (published, or on its way).
    move_needs: str
    channel_ids: frozenset[int]

    @property
    def key(self) -> str:
        return f"{self.kind}-{self.id}"


@dataclass(frozen=True)
class Filters:
    channel_id: int | None = None
    team_id: int | None = None
    state: str | None = None


def check_filters(*, account_id: int, channel: str = "", team: str = "", state: str = "") -> Filters:
    """The filters from a page's address, checked: a channel or team of the account, a known state."""
    found = Filters(
        channel_id=_id_of("channel", channel, Channel.objects.filter(account_id=account_id)),
        team_id=_id_of("team", team, Team.objects.filter(account_id=account_id)),
        state=state or None,
    )
    if state and state not in STATES:
        raise field_error("state", "invalid_choice", f"{state!r} is not a state; choose one of {', '.join(STATES)}.")
    return found


def _id_of(name: str, text: str, choices: QuerySet) -> int | None:
    if not text:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise field_error(name, "invalid", f"The {name} is chosen by its id, a number: {text[:40]!r} is not one.")
    if not choices.filter(pk=int(text)).exists():
        raise field_error(name, "not_found", f"No {name} {text} in this account.")
    return int(text)


# --- where the account's day boundaries fall ----------------------------------------------------


def day_start(day: date, zone: tzinfo) -> datetime:
    """The first instant of `day` in `zone`, in UTC."""
    return datetime.combine(day, time.min, tzinfo=zone).astimezone(UTC)


def local_time_on(day: date, clock: time, zone: tzinfo) -> datetime:
    """`clock` on `day` as a viewer in `zone` reads it, in UTC (a time skipped by a change of
    daylight saving time is read with the offset before it, as the clock would have shown it)."""
    return datetime.combine(day, clock.replace(tzinfo=None), tzinfo=zone).astimezone(UTC)


def moved_to(item: CalendarItem, day: date, zone: tzinfo, hour: int | None = None) -> datetime:
    """The item's time on another day: its time of day in `zone` kept (and its hour changed to
    `hour` where given); a tray draft lands at TRAY_TIME."""
    clock = item.at.astimezone(zone).time() if item.at is not None else TRAY_TIME
    if hour is not None:
        clock = clock.replace(hour=hour)
    return local_time_on(day, clock, zone)


# --- the items of a range ------------------------------------------------------------------------
#
# Read lean, as values (no model instance per post): a month holds thousands of items. What each
# destination is there comes from the rules every reader of stories shares (apps/stories/states.py).


def calendar_items(
    *, account_id: int, start: datetime, end: datetime, filters: Filters = Filters(), now: datetime | None = None
) -> list[CalendarItem]:
    """The account's stories and lone posts whose place falls in [start, end), by time."""
    now = now or timezone.now()
    stories = _stories_in(account_id, start, end, filters)
    items = [item for item in _story_items(stories, now) if item.at is not None and start <= item.at < end]
    items += _post_items(_posts_in(account_id, start, end, filters), now)
    return sorted((item for item in items if _kept(item, filters)), key=lambda item: (item.at, item.kind, item.id))


def undated_drafts(*, account_id: int, filters: Filters = Filters(), limit: int = TRAY_SIZE) -> list[CalendarItem]:
    """The account's newest draft stories with neither a scheduled time nor a plan (the tray)."""
    stories = _filtered_stories(account_id, filters).filter(
        publication_status=StoryStatus.DRAFT, scheduled_at__isnull=True, planned_for__isnull=True
    )
    newest = stories.order_by("-id").values_list(*_STORY_FIELDS)[:limit]
    return [item for item in _story_items(list(newest), timezone.now()) if _kept(item, filters)]


def calendar_item(*, account_id: int, key: str) -> CalendarItem:
    """One item by its key ("story-12", "post-34"); another account's is not found."""
    kind, _, number = key.partition("-")
    if kind not in (STORY, POST) or not number.isascii() or not number.isdigit() or len(number) > 18:
        raise field_error("item", "invalid", f"{key[:40]!r} names no story or post (story-<id> or post-<id>).")
    if kind == STORY:
        rows = stories_of_account(account_id).filter(pk=int(number)).values_list(*_STORY_FIELDS)
        found = _story_items(list(rows), timezone.now())
    else:
        found = _post_items(_lone_posts(account_id).filter(pk=int(number)), timezone.now())
    if not found:
        raise NotFound(ITEM_NOT_FOUND)
    return found[0]


def _kept(item: CalendarItem, filters: Filters) -> bool:
    return filters.state is None or item.state == filters.state


def _filtered_stories(account_id: int, filters: Filters) -> QuerySet:
    stories = stories_of_account(account_id)
    if filters.channel_id is not None:
        stories = stories.filter(
            pk__in=StoryPost.objects.filter(post__channel_id=filters.channel_id).values("story_id")
        )
    if filters.team_id is not None:
        stories = stories.filter(
            pk__in=StoryPost.objects.filter(post__channel__team_id=filters.team_id).values("story_id")
        )
    return stories


_STORY_FIELDS = ("id", "title", "publication_status", "scheduled_at", "planned_for", "updated_at")


def _stories_in(account_id: int, start: datetime, end: datetime, filters: Filters) -> list[tuple]:
    """The stories that may stand in the range (each one's place is then read from its destinations)."""
    published_in = StoryPost.objects.filter(post__published_at__gte=start, post__published_at__lt=end)
    published = Q(pk__in=published_in.values("story_id")) | Q(updated_at__gte=start, updated_at__lt=end)
    may_stand = (
        Q(publication_status=StoryStatus.SCHEDULED, scheduled_at__gte=start, scheduled_at__lt=end)
        | Q(publication_status=StoryStatus.DRAFT, planned_for__gte=start, planned_for__lt=end)
        | (Q(publication_status=StoryStatus.PUBLISHED) & published)
    )
    return list(_filtered_stories(account_id, filters).filter(may_stand).values_list(*_STORY_FIELDS))


@dataclass(frozen=True)
class _Destination:
    channel_id: int
    marker: Marker
    published_at: datetime | None


# A post as the calendar reads it: the same columns for a story's posts and lone ones.
_POST_COLUMNS = (
    "publication_status",
    "scheduled_at",
    "published_at",
    "channel_id",
    "channel__title",
    "channel__platform",
)


def _states(rows: list[tuple], now: datetime) -> list[str]:
    """What each post (id first, then _POST_COLUMNS) is on its destination."""
    destined = [row[0] for row in rows if through_destination(row[6])]
    publications = latest_publications(destined) if destined else {}
    return [
        destination_state(status=row[1], scheduled_at=row[2], publication=publications.get(row[0]), now=now)
        for row in rows
    ]


def _story_items(stories: list[tuple], now: datetime) -> list[CalendarItem]:
    """Each story (a row of _STORY_FIELDS) with its destinations: one query, and the jobs' queries."""
    links = StoryPost.objects.filter(story_id__in=[row[0] for row in stories]).order_by("id")
    rows = list(links.values_list("story_id", "post_id", *(f"post__{name}" for name in _POST_COLUMNS)))
    by_story: dict[int, list[_Destination]] = {row[0]: [] for row in stories}
    for (story_id, *post), state in zip(rows, _states([row[1:] for row in rows], now), strict=True):
        marker = Marker(channel=post[5], platform=post[6], state=state)
        by_story[story_id].append(_Destination(channel_id=post[4], marker=marker, published_at=post[3]))
    return [_story_item(row, by_story[row[0]]) for row in stories]


def _story_place(row: tuple, destinations: list[_Destination]) -> tuple[str, datetime | None]:
    _, _, status, scheduled_at, planned_for, updated_at = row
    if status == StoryStatus.SCHEDULED:
        return SCHEDULED, scheduled_at
    if status == StoryStatus.PUBLISHED:
        published = [d.published_at for d in destinations if d.marker.state == DestinationState.PUBLISHED]
        # Asked to publish, and none has it yet: where it was asked.
        return PUBLISHED, min((at for at in published if at is not None), default=updated_at)
    if planned_for is not None:
        return PLANNED, planned_for
    return UNDATED, None


def _story_item(row: tuple, destinations: list[_Destination]) -> CalendarItem:
    timing, at = _story_place(row, destinations)
    state = story_state(d.marker.state for d in destinations)
    if timing in (PLANNED, UNDATED):
        needs = "articles.write"
    elif timing == SCHEDULED and state == StoryState.SCHEDULED:
        needs = "articles.publish"
    else:
        needs = ""
    return CalendarItem(
        kind=STORY,
        id=row[0],
        title=row[1],
        at=at,
        timing=timing,
        state=state,
        markers=tuple(d.marker for d in destinations),
        move_needs=needs,
        channel_ids=frozenset(d.channel_id for d in destinations),
    )


def _lone_posts(account_id: int) -> QuerySet:
    return Post.objects.filter(channel__account_id=account_id, story_link__isnull=True)


def _posts_in(account_id: int, start: datetime, end: datetime, filters: Filters) -> QuerySet:
    posts = _lone_posts(account_id).filter(
        Q(
            publication_status__in=[_P.SCHEDULED, _P.PUBLISHING_PENDING],
            scheduled_at__gte=start,
            scheduled_at__lt=end,
        )
        | Q(publication_status=_P.PUBLISHED, published_at__gte=start, published_at__lt=end)
    )
    if filters.channel_id is not None:
        posts = posts.filter(channel_id=filters.channel_id)
    if filters.team_id is not None:
        posts = posts.filter(channel__team_id=filters.team_id)
    return posts


def _post_items(posts: QuerySet, now: datetime) -> list[CalendarItem]:
    rows = list(posts.values_list("id", *_POST_COLUMNS, "title"))
    items = []
    for (post_id, status, scheduled_at, published_at, channel_id, channel, platform, title), state in zip(
        rows, _states(rows, now), strict=True
    ):
        published = status == _P.PUBLISHED
        items.append(
            CalendarItem(
                kind=POST,
                id=post_id,
                title=title,
                at=published_at if published else scheduled_at,
                timing=PUBLISHED if published else SCHEDULED,
                state=state,
                markers=(Marker(channel=channel, platform=platform, state=state),),
                move_needs="articles.publish" if state == DestinationState.SCHEDULED else "",
                channel_ids=frozenset({channel_id}),
            )
        )
    return items


# --- a move ----------------------------------------------------------------------------------------


@transaction.atomic
def calendar_move(*, account_id: int, key: str, to: datetime, permissions: Iterable[str]) -> CalendarItem:
    """Move the item to `to` (UTC), by the service that owns what moves: a scheduled story's time
    (story_update: a past time is refused there), a story's plan, a lone post's scheduled time
    (post_write). Published items and those on their way stay where they are. Returns the item
    as it now is."""
    item = calendar_item(account_id=account_id, key=key)
    if not item.move_needs:
        raise field_error(
            "item", "not_movable", f"“{item.title}” is {STATES[item.state].lower()}: it stays where it is."
        )
    permissions = set(permissions)
    if item.move_needs not in permissions:
        raise Forbidden(NO_PLANNING if item.move_needs == "articles.write" else NO_SCHEDULING)
    writer = Writer(may_publish="articles.publish" in permissions)
    if item.kind == POST:
        channel_id = next(iter(item.channel_ids))
        post_write(post_id=item.id, channel_id=channel_id, writer=writer, content={}, scheduled_at=to)
    elif item.timing == SCHEDULED:
        story_update(story_id=item.id, account_id=account_id, writer=writer, scheduled_at=to)
    else:
        story_update(story_id=item.id, account_id=account_id, writer=writer, planned_for=to)
    return calendar_item(account_id=account_id, key=key)


def range_of(days: list[date], zone: tzinfo) -> tuple[datetime, datetime]:
    """[start, end) in UTC of consecutive days in `zone`."""
    return day_start(days[0], zone), day_start(days[-1] + timedelta(days=1), zone)
