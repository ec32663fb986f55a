"""Reads of stories: an account's stories, and each story with its destinations (its posts, each
with its channel, status, latest publication job, address and state) and the state they make."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from apps.core.errors import NotFound
from apps.posts.selectors import page_url
from apps.publishing.selectors import Publication, latest_publications
from apps.stories.models import Story, StoryPost
from apps.stories.states import destination_state, story_state

STORY_NOT_FOUND = "Story not found."


@dataclass(frozen=True)
class StoryDestination:
    """A story's post on one of its channels, as the story shows it."""

    post_id: int
    title: str
    # The post's channel, with its team (the calendar filters by it).
    channel: object
    publication_status: str
    scheduled_at: datetime | None
    published_at: datetime | None
    # Its latest publication job on the channel's destination (None where it has none).
    publication: Publication | None
    # Where readers find it, once published (the posts' `url`).
    url: str | None
    # What it is on its destination (DestinationState).
    state: str
    # The fields this channel shows its own way.
    overrides: dict


def stories_of_account(account_id: int) -> QuerySet:
    return Story.objects.filter(account_id=account_id)


def story_get(*, account_id: int, story_id: int) -> Story:
    """The account's story, with its destinations and state; another account's is not found."""
    story = stories_of_account(account_id).filter(pk=story_id).first()
    if story is None:
        raise NotFound(STORY_NOT_FOUND)
    return with_destinations([story])[0]


def with_destinations(stories: list[Story], *, now: datetime | None = None) -> list[Story]:
    """Each story with `destinations` (StoryDestination, in the order its channels were added) and
    `state` (StoryState), for any number of stories in three queries (and one per destination kind
    that mails its posts)."""
    now = now or timezone.now()
    links = list(
        StoryPost.objects.filter(story__in=[story.pk for story in stories])
        .select_related("post__channel__team")
        .order_by("id")
    )
    destined = [link.post_id for link in links if link.post.channel.publishes_through_destination]
    publications = latest_publications(destined) if destined else {}
    by_story: dict[int, list[StoryDestination]] = {story.pk: [] for story in stories}
    for link in links:
        post, publication = link.post, publications.get(link.post_id)
        by_story[link.story_id].append(
            StoryDestination(
                post_id=post.pk,
                title=post.title,
                channel=post.channel,
                publication_status=post.publication_status,
                scheduled_at=post.scheduled_at if post.publication_status == "scheduled" else None,
                published_at=post.published_at,
                publication=publication,
                url=page_url(post, publication),
                state=destination_state(
                    status=post.publication_status, scheduled_at=post.scheduled_at, publication=publication, now=now
                ),
                overrides=link.overrides,
            )
        )
    for story in stories:
        story.destinations = by_story[story.pk]
        story.state = story_state(destination.state for destination in story.destinations)
    return stories


def story_of_post(post_id: int) -> int | None:
    """The id of the story the post belongs to, or None."""
    return StoryPost.objects.filter(post_id=post_id).values_list("story_id", flat=True).first()
