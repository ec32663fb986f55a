"""A story's changes: written once, sent to its channels (a post of it on each), scheduled or
published at once, retried where it failed, deleted. Each function runs in one transaction and locks
the story's row first, so two requests on a story run one after the other.

Every change of a post goes through the posts app's own writes (apps/posts/writing.py), so a story's
post does exactly what the same change of a post of its own does: its events, its destination's
jobs, the workflow of `api` channels, the rules and their errors.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from django.db import transaction
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.destinations import PublishError
from apps.core.errors import DomainError, Forbidden, NotFound
from apps.core.keep import KEEP, Keep
from apps.core.validation import field_error
from apps.posts.editor_status import post_set_status
from apps.posts.lifecycle import locked_post, validate_fields
from apps.posts.models import Post, PublicationStatus
from apps.posts.publish_now import publish_now
from apps.posts.services import MediaInput
from apps.posts.writing import Writer, post_write, post_write_delete, post_write_new, tags_named
from apps.publishing.models import JobAction, JobState, PublicationJob
from apps.publishing.services import job_retry_now
from apps.stories.announcements import writing_story
from apps.stories.models import OVERRIDABLE, DestinationState, Story, StoryPost, StoryStatus
from apps.stories.selectors import STORY_NOT_FOUND, with_destinations
from apps.stories.validation import channels_of, check_media, check_schedule

_S = StoryStatus
# The story's fields that are its posts' content, as the posts' write takes them.
CONTENT: Final = OVERRIDABLE
NO_PUBLISH = (
    "Publishing, scheduling and taking down stories needs the permission articles.publish, which the owner of this "
    "API key lacks."
)
NO_DELETE = "Taking a channel off a story deletes its post, which needs the permission articles.delete."


@dataclass(frozen=True)
class ChannelChoice:
    """A channel the story is sent to, with the fields it overrides (KEEP: as they are; a new
    channel then overrides none)."""

    id: int
    overrides: dict | Keep = KEEP


def _overrides_of(choice: ChannelChoice) -> dict:
    return {} if isinstance(choice.overrides, Keep) else _clean(choice.overrides)


def _clean(values: dict) -> dict:
    """Stored texts: overrides without empty ones (an empty override is the story's text)."""
    return {name: value for name, value in values.items() if value}


# --- what the story's posts get ------------------------------------------------------------------


def _content(story: Story, overrides: dict, names) -> dict:
    content = {name: overrides.get(name) or getattr(story, name) for name in names if name in CONTENT}
    if "media" in names:
        content["media"] = [MediaInput(**item) for item in story.media]
    return content


def _tag_names(story: Story) -> list[str]:
    return list(story.tags.order_by("name").values_list("name", flat=True))


def _add_post(story: Story, channel: Channel, overrides: dict, writer: Writer) -> StoryPost:
    post = post_write_new(
        channel=channel,
        writer=writer,
        content=_content(story, overrides, (*CONTENT, "media")),
        tag_names=_tag_names(story),
    )
    return StoryPost.objects.create(story=story, post=post, overrides=overrides)


def _publish(post: Post, now: datetime) -> None:
    """Publish one of the story's posts now, unless it is published or on its way: an `api` channel's
    post is scheduled for now (the content plan hands it to the external system, as the spec says)."""
    if post.publication_status in (PublicationStatus.PUBLISHED, PublicationStatus.PUBLISHING_PENDING):
        return
    if post.channel.publishes_externally:
        post_set_status(post_id=post.pk, status=PublicationStatus.SCHEDULED, scheduled_at=now, allow_past=True)
        return
    under_way = PublicationJob.objects.filter(
        post_id=post.pk, action=JobAction.PUBLISH, state__in=[JobState.QUEUED, JobState.RUNNING]
    ).exists()
    if not under_way:
        publish_now(post_id=post.pk)


def _apply_status(story: Story, links: Sequence[StoryPost], writer: Writer) -> None:
    """Ask the story's status (and time) of these posts."""
    if story.publication_status != _S.DRAFT and not writer.may_publish:
        raise Forbidden(NO_PUBLISH)
    now = timezone.now()
    for link in links:
        post = locked_post(link.post_id)
        if story.publication_status == _S.PUBLISHED:
            _publish(post, now)
        else:
            post_write(
                post_id=post.pk,
                channel_id=post.channel_id,
                writer=writer,
                content={},
                status=story.publication_status,
                scheduled_at=story.scheduled_at,
            )


# --- the changes -------------------------------------------------------------------------------


def _set_texts(story: Story, values: dict) -> list[str]:
    changed = []
    for name, value in values.items():
        value = "" if value is None else value
        if isinstance(value, str):
            value = value.replace("\r\n", "\n").replace("\r", "\n")
        if getattr(story, name) != value:
            setattr(story, name, value)
            changed.append(name)
    if changed:
        validate_fields(story, [name for name in changed if name != "media"])
        if not story.title.strip():
            raise field_error("title", "blank", "A story needs a title.")
    return changed


@transaction.atomic
def story_create(
    *,
    account_id: int,
    writer: Writer,
    title: str,
    body: str = "",
    teaser: str | None = "",
    meta_title: str | None = "",
    meta_description: str | None = "",
    tag_names: Sequence[str] = (),
    media: Sequence[dict] = (),
    publication_status: str = _S.DRAFT,
    scheduled_at: datetime | None = None,
    planned_for: datetime | None = None,
    channels: Sequence[ChannelChoice] = (),
    created_by=None,
) -> Story:
    """A new story, its post on each chosen channel, in the status asked (a draft, unless said)."""
    check_schedule(publication_status, scheduled_at, current=None)
    found = channels_of(account_id, channels)
    media = [dict(item) for item in media]
    check_media(account_id, media)
    story = Story(account_id=account_id, created_by=created_by, planned_for=planned_for)
    texts = {"title": title, "body": body, "teaser": teaser, "meta_title": meta_title}
    _set_texts(story, texts | {"meta_description": meta_description, "media": media})
    story.publication_status, story.scheduled_at = publication_status, scheduled_at
    story.save()
    story.tags.set(tags_named(account_id=account_id, names=tag_names))
    with writing_story(story.pk):
        links = [
            _add_post(
                story, found[choice.id], _clean({} if isinstance(choice.overrides, Keep) else choice.overrides), writer
            )
            for choice in channels
        ]
        _apply_status(story, links, writer)
    return story


def _locked_story(account_id: int, story_id: int) -> Story:
    """The account's story, its row locked, and its posts' rows before it, in id order: the posts'
    outcomes (a job confirmed, the content plan's batch) lock a post and then its story
    (announcements.py), so taking them in the same order means neither waits for the other while
    holding what the other waits for."""
    # Through the story's own key, whose lookups Django answers empty for an id beyond the column's
    # range (a made-up path): a foreign key's lookup passes such an id to the database (SQLite: 500).
    post_ids = list(
        StoryPost.objects.filter(story__pk=story_id, story__account_id=account_id).values_list("post_id", flat=True)
    )
    if post_ids:
        list(Post.objects.select_for_update(of=("self",)).filter(pk__in=post_ids).order_by("id").values_list("id"))
    story = Story.objects.select_for_update().filter(pk=story_id, account_id=account_id).first()
    if story is None:
        raise NotFound(STORY_NOT_FOUND)
    return story


Check = Callable[[Story], None]


def _push(story: Story, link: StoryPost, names: set[str], writer: Writer, tag_names) -> None:
    """Carry what changed of the story (or of the channel's overrides) to the channel's post."""
    if not names and tag_names is KEEP:
        return
    post = locked_post(link.post_id)
    post_write(
        post_id=post.pk,
        channel_id=post.channel_id,
        writer=writer,
        content=_content(story, link.overrides, names),
        tag_names=tag_names,
    )


def _set_overrides(link: StoryPost, overrides: dict) -> set[str]:
    """Store the channel's new overrides: the names whose text changed."""
    changed = {name for name in OVERRIDABLE if overrides.get(name) != link.overrides.get(name)}
    link.overrides = overrides
    link.save(update_fields=["overrides"])
    return changed


def _drop_channels(by_channel: dict[int, StoryPost], chosen: set[int], may_delete: bool) -> None:
    """Delete the posts of the channels no longer chosen, as a post's delete does."""
    dropped = [link for channel_id, link in by_channel.items() if channel_id not in chosen]
    if dropped and not may_delete:
        raise Forbidden(NO_DELETE)
    for link in dropped:
        post_write_delete(post_id=link.post_id, channel_id=link.post.channel_id)


def _change_channels(
    story: Story, links: list[StoryPost], choices: Sequence[ChannelChoice], writer: Writer, may_delete: bool
) -> tuple[list[StoryPost], list[StoryPost], dict[int, set[str]]]:
    """The story's channels as chosen: (links kept, links added, the override names changed by
    post id). A channel left out has its post deleted, as a post's delete does."""
    found = channels_of(story.account_id, choices)
    by_channel = {link.post.channel_id: link for link in links}
    _drop_channels(by_channel, {choice.id for choice in choices}, may_delete)
    kept, added, overridden = [], [], {}
    for choice in choices:
        link = by_channel.get(choice.id)
        overrides = KEEP if isinstance(choice.overrides, Keep) else _clean(choice.overrides)
        if link is None:
            added.append(_add_post(story, found[choice.id], {} if overrides is KEEP else overrides, writer))
            continue
        if overrides is not KEEP and overrides != link.overrides:
            overridden[link.post_id] = {name for name in OVERRIDABLE if overrides.get(name) != link.overrides.get(name)}
            link.overrides = overrides
            link.save(update_fields=["overrides"])
        kept.append(link)
    return kept, added, overridden


def _schedule_of(story: Story, status: str | Keep, scheduled_at: datetime | Keep | None) -> tuple[str, datetime | None]:
    """The status and time the story ends with (checked), from what was given."""
    status = story.publication_status if isinstance(status, Keep) else status
    when = scheduled_at
    if isinstance(scheduled_at, Keep):
        when = story.scheduled_at if status == _S.SCHEDULED else None
    check_schedule(status, when, current=story)
    return status, when


def _change_texts(story: Story, given: dict, media: Sequence[dict] | Keep) -> set[str]:
    """Set the given texts (and media) on the story: the names of those that changed."""
    given = {name: value for name, value in given.items() if value is not KEEP}
    if not isinstance(media, Keep):
        media = [dict(item) for item in media]
        check_media(story.account_id, media)
        given["media"] = media
    return set(_set_texts(story, given))


def _change_tags(story: Story, tag_names: Sequence[str] | Keep) -> list[str] | Keep:
    """Set the story's tags where given: their names when they changed, else KEEP."""
    if isinstance(tag_names, Keep):
        return KEEP
    tags = tags_named(account_id=story.account_id, names=tag_names)
    if {tag.pk for tag in tags} == set(story.tags.values_list("pk", flat=True)):
        return KEEP
    story.tags.set(tags)
    return [tag.name for tag in tags]


@transaction.atomic
def story_update(
    *,
    story_id: int,
    account_id: int,
    writer: Writer,
    may_delete: bool = True,
    check: Check | None = None,
    title: str | Keep = KEEP,
    body: str | Keep = KEEP,
    teaser: str | Keep | None = KEEP,
    meta_title: str | Keep | None = KEEP,
    meta_description: str | Keep | None = KEEP,
    tag_names: Sequence[str] | Keep = KEEP,
    media: Sequence[dict] | Keep = KEEP,
    publication_status: str | Keep = KEEP,
    scheduled_at: datetime | Keep | None = KEEP,
    planned_for: datetime | Keep | None = KEEP,
    channels: Sequence[ChannelChoice] | Keep = KEEP,
) -> Story:
    """Change what is given of the story, all or nothing: its text reaches each post that does not
    override it, a new status (or time) is asked of every post, a new channel gets its post (in the
    story's status), a channel left out of `channels` has its post deleted."""
    story = _locked_story(account_id, story_id)
    if check is not None:
        check(story)
    status, when = _schedule_of(story, publication_status, scheduled_at)
    moves = (status, when) != (story.publication_status, story.scheduled_at)
    if moves and not writer.may_publish:
        raise Forbidden(NO_PUBLISH)
    given = {"title": title, "body": body, "teaser": teaser, "meta_title": meta_title}
    changed = _change_texts(story, given | {"meta_description": meta_description}, media)
    tags = _change_tags(story, tag_names)
    story.publication_status, story.scheduled_at = status, when
    if not isinstance(planned_for, Keep):
        story.planned_for = planned_for
    story.save()
    with writing_story(story.pk):
        links = list(story.links.select_related("post__channel"))
        added: list[StoryPost] = []
        overridden: dict[int, set[str]] = {}
        if not isinstance(channels, Keep):
            links, added, overridden = _change_channels(story, links, channels, writer, may_delete)
        for link in links:
            shared = {name for name in changed if name == "media" or not link.overrides.get(name)}
            _push(story, link, shared | overridden.get(link.post_id, set()), writer, tags)
        _apply_status(story, links if moves else added, writer)
    return story


@transaction.atomic
def story_delete(*, story_id: int, account_id: int, check: Check | None = None) -> None:
    """Delete the story and its posts, each taken down from its destination as a post's delete does
    (a published post of an `api` channel: 422, the unpublish endpoint first)."""
    story = _locked_story(account_id, story_id)
    if check is not None:
        check(story)
    for link in story.links.select_related("post"):
        post_write_delete(post_id=link.post_id, channel_id=link.post.channel_id)
    story.delete()


@transaction.atomic
def story_retry_failed(*, story_id: int, account_id: int) -> list[int]:
    """Run again, now, the publication of each of the story's posts that failed for good, and only
    those: a destination that has the post is not sent it again. Returns the posts retried."""
    story = _locked_story(account_id, story_id)
    [story] = with_destinations([story])
    failed = [destination for destination in story.destinations if destination.state == DestinationState.FAILED]
    if not failed:
        raise DomainError("No destination of this story failed: there is nothing to retry.", code="nothing_to_retry")
    with writing_story(story.pk):
        for destination in failed:
            try:
                job_retry_now(job=PublicationJob.objects.get(pk=destination.publication.id))
            except PublishError as exc:
                raise DomainError(exc.message, code="invalid_status") from None
    return [destination.post_id for destination in failed]
