"""A story's state, read from its posts: what each post is on its destination (destination_state),
and what that makes of the story (story_state). Pure functions of what the selectors read, so the
API, the Settings area, the calendar and the story.* events say the same."""

from collections.abc import Iterable
from datetime import datetime

from apps.posts.models import PublicationStatus
from apps.publishing.models import JobAction, JobState
from apps.publishing.services import CANCELED_PREFIX
from apps.stories.models import DestinationState, StoryState

_P = PublicationStatus
_D = DestinationState


def destination_state(*, status: str, scheduled_at: datetime | None, publication, now: datetime) -> str:
    """One post on its destination, from its status, its planned time and its latest publication
    job (a `Publication` row, or None).

    A job that failed for good (not one an editor's change canceled) is `failed` until the post is
    published or given a new time; a job queued (waiting for a retry too) or running is `publishing`,
    as is a post of an `api` channel awaiting confirmation, or a scheduled post whose time has come
    (the content plan moves it at its next run)."""
    if status == _P.PUBLISHED:
        return _D.PUBLISHED
    if status == _P.PUBLISHING_PENDING:
        return _D.PUBLISHING
    if status == _P.SCHEDULED and scheduled_at is not None and scheduled_at > now:
        return _D.SCHEDULED
    if publication is not None and publication.action == JobAction.PUBLISH:
        if publication.state in (JobState.QUEUED, JobState.RUNNING):
            return _D.PUBLISHING
        if publication.state == JobState.FAILED and not (publication.last_error or "").startswith(CANCELED_PREFIX):
            return _D.FAILED
    if status == _P.SCHEDULED:
        return _D.PUBLISHING
    return _D.DRAFT


def story_state(states: Iterable[str]) -> str:
    """The story's state from its destinations' states:

    - `publishing` while any destination is on its way;
    - then, where one failed for good: `partially_published` when another is published, else `failed`;
    - `published` when one is published and the rest are too, or were never asked (drafts);
    - `scheduled` when one waits for its time; `draft` otherwise (a story with no channel too).
    """
    states = set(states)
    if _D.PUBLISHING in states:
        return StoryState.PUBLISHING
    if _D.FAILED in states:
        return StoryState.PARTIALLY_PUBLISHED if _D.PUBLISHED in states else StoryState.FAILED
    if _D.SCHEDULED in states:
        return StoryState.SCHEDULED
    if _D.PUBLISHED in states:
        return StoryState.PUBLISHED
    return StoryState.DRAFT


# The states a story.* event announces.
ANNOUNCED = frozenset({StoryState.PUBLISHED, StoryState.PARTIALLY_PUBLISHED})
