"""A story's outcome told to the outside: `story.published` when every destination it was sent to
has it, `story.partially_published` when some have it and at least one failed for good. Read from
the posts' states whenever they move on (apps/posts/outcomes.py), in the transaction of the move,
and once at the end of a story's own change."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from apps.core.lookups import AnyOf
from apps.stories.events import StoryEvent
from apps.stories.models import Story, StoryPost, StoryState
from apps.stories.selectors import with_destinations
from apps.stories.serializers import story_webhook_data
from apps.stories.states import ANNOUNCED
from apps.webhooks.services import event_emit

# The stories whose own change is being written in this context: their posts' moves are the
# story's to read once it is done, not half-way (a story published to a blog and a repository is
# not "published" when the blog has it and the repository's job is not written yet).
_writing: ContextVar[frozenset[int]] = ContextVar("stories_writing", default=frozenset())
EVENTS = {StoryState.PUBLISHED: StoryEvent.PUBLISHED, StoryState.PARTIALLY_PUBLISHED: StoryEvent.PARTIALLY_PUBLISHED}


def stories_refresh(*, post_ids: Sequence[int]) -> None:
    """Posts' publications moved on: announce the stories they belong to that are now published,
    or partially published."""
    # A content plan batch moves a thousand posts: their ids as one array (AnyOf), not a parameter each.
    story_ids = set(StoryPost.objects.filter(AnyOf("post_id", post_ids)).values_list("story_id", flat=True))
    story_ids -= _writing.get()
    if story_ids:
        announce(sorted(story_ids))


def announce(story_ids: list[int]) -> None:
    """Announce each story's state where it is one to announce and was not announced yet."""
    # Locked in id order: two workers finishing two channels' jobs of one story at once take turns,
    # and the second reads what the first committed (each statement sees the latest commits).
    stories = list(Story.objects.select_for_update().filter(pk__in=story_ids).select_related("account").order_by("id"))
    for story in with_destinations(stories):
        if story.state == story.announced or (story.state not in ANNOUNCED and not story.announced):
            continue
        if story.state in ANNOUNCED:
            event_emit(account=story.account, kind=EVENTS[story.state], data={"story": story_webhook_data(story)})
            story.announced = story.state
        else:
            # It left what was announced (a retry under way, a post taken down): its next outcome
            # is announced again.
            story.announced = ""
        Story.objects.filter(pk=story.pk).update(announced=story.announced)


@contextmanager
def writing_story(story_id: int) -> Iterator[None]:
    """Around a story's own change: its posts' moves are read once, at the end."""
    token = _writing.set(_writing.get() | {story_id})
    try:
        yield
    finally:
        _writing.reset(token)
    announce([story_id])
