"""Status changes made by editors (the Settings area, the admin, the API's writes, demo data): what a
change from one status to another does, by how the post's channel publishes (the transition
tables), and the Settings area's "Publish now"."""

from collections.abc import Callable
from datetime import datetime
from typing import Final

from django.db import transaction
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.errors import DomainError, NotFound
from apps.core.validation import field_error
from apps.posts.api_workflow import only_api_platform, post_mark_publishing_pending, post_publish, post_unpublish
from apps.posts.events import PostEvent
from apps.posts.lifecycle import POST_NOT_FOUND, emit, locked_post, publication_under_way, put_state, request_job
from apps.posts.models import Post, PublicationStatus
from apps.publishing.models import JobAction
from apps.publishing.services import jobs_cancel

Step = Callable[[Post, datetime | None], Post]
ANY: Final = "*"


def _hand_over(post: Post, scheduled_at: datetime | None) -> Post:
    return post_mark_publishing_pending(post_id=post.pk)


def _confirm(post: Post, scheduled_at: datetime | None) -> Post:
    return post_publish(post_id=post.pk, channel_id=post.channel_id, account=post.channel.account)


def _revert(post: Post, scheduled_at: datetime | None) -> Post:
    return post_unpublish(post_id=post.pk, channel_id=post.channel_id, account=post.channel.account)


def _refuse(post: Post, scheduled_at: datetime | None) -> Post:
    raise only_api_platform()


def _set(status: str) -> Step:
    """Put the post straight into `status` (every field of the state with it)."""

    def step(post: Post, scheduled_at: datetime | None) -> Post:
        if status == PublicationStatus.SCHEDULED:
            put_state(post, status, scheduled_at=scheduled_at)
        else:
            put_state(post, status, at=timezone.now())
        return post

    return step


def _requesting(action: str) -> Step:
    def step(post: Post, scheduled_at: datetime | None) -> Post:
        request_job(post, action)
        return post

    return step


def _withdrawing(post: Post, scheduled_at: datetime | None) -> Post:
    """A post that is not published goes back to draft or to a later time: its publication that
    has not started is canceled; one already running (or tried) is followed by an unpublish, so
    that what it put up comes down again."""
    under_way = publication_under_way(post.pk, [JobAction.PUBLISH])
    jobs_cancel(post_id=post.pk, actions=[JobAction.PUBLISH])
    if under_way:
        request_job(post, JobAction.UNPUBLISH)
    return post


def _then(*steps: Step) -> Step:
    def step(post: Post, scheduled_at: datetime | None) -> Post:
        for each in steps:
            post = each(post, scheduled_at)
        return post

    return step


def _sending(kind: str, change: Step) -> Step:
    """A change that is itself the event: an editor's publish or take-down on a direct channel."""

    def step(post: Post, scheduled_at: datetime | None) -> Post:
        post = change(post, scheduled_at)
        emit(kind, post)
        return post

    return step


_S = PublicationStatus
# What an editor's change of status (from, to) does, by how the channel publishes; a row for
# (from, to) wins over the row for (ANY, to). On `api` channels the workflow's own transitions
# run through the workflow functions (api_workflow.py), so their rules and events apply whoever triggers
# them. Other channels publish directly; `publishing_pending` does not exist there.
EXTERNAL_TRANSITIONS: Final[dict[tuple[str, str], Step]] = {
    (ANY, _S.PUBLISHING_PENDING): _hand_over,
    (ANY, _S.PUBLISHED): _confirm,
    (_S.PUBLISHED, _S.DRAFT): _revert,
    (_S.PUBLISHED, _S.SCHEDULED): _then(_revert, _set(_S.SCHEDULED)),
    (ANY, _S.DRAFT): _set(_S.DRAFT),
    (ANY, _S.SCHEDULED): _set(_S.SCHEDULED),
}
# Blog channels: their own site is the destination, so publishing is the change itself.
DIRECT_TRANSITIONS: Final[dict[tuple[str, str], Step]] = {
    (ANY, _S.PUBLISHING_PENDING): _refuse,
    (ANY, _S.PUBLISHED): _sending(PostEvent.PUBLISHED, _set(_S.PUBLISHED)),
    (_S.PUBLISHED, _S.DRAFT): _sending(PostEvent.UNPUBLISHED, _set(_S.DRAFT)),
    (_S.PUBLISHED, _S.SCHEDULED): _sending(PostEvent.UNPUBLISHED, _set(_S.SCHEDULED)),
    (ANY, _S.DRAFT): _set(_S.DRAFT),
    (ANY, _S.SCHEDULED): _set(_S.SCHEDULED),
}
# Channels with a destination: publishing asks their destination (a job); the post becomes
# `published` when the destination confirms (post_publication_confirmed). Taking a post down is
# the editor's to decide at once; the job then removes it from the destination.
DESTINATION_TRANSITIONS: Final[dict[tuple[str, str], Step]] = {
    (ANY, _S.PUBLISHING_PENDING): _refuse,
    (ANY, _S.PUBLISHED): _requesting(JobAction.PUBLISH),
    (_S.PUBLISHED, _S.DRAFT): _then(_sending(PostEvent.UNPUBLISHED, _set(_S.DRAFT)), _requesting(JobAction.UNPUBLISH)),
    (_S.PUBLISHED, _S.SCHEDULED): _then(
        _sending(PostEvent.UNPUBLISHED, _set(_S.SCHEDULED)), _requesting(JobAction.UNPUBLISH)
    ),
    (ANY, _S.DRAFT): _then(_set(_S.DRAFT), _withdrawing),
    (ANY, _S.SCHEDULED): _then(_set(_S.SCHEDULED), _withdrawing),
}


def _transitions(channel: Channel) -> dict[tuple[str, str], Step]:
    if channel.publishes_externally:
        return EXTERNAL_TRANSITIONS
    return DESTINATION_TRANSITIONS if channel.publishes_through_destination else DIRECT_TRANSITIONS


@transaction.atomic
def post_set_status(
    *, post_id: int, status: str, scheduled_at: datetime | None = None, allow_past: bool = False
) -> Post:
    """An editor sets a post's status and planned time; what the change does is in the
    transition tables above."""
    post = locked_post(post_id)
    _check_status(post, status, scheduled_at, allow_past=allow_past)
    if post.scheduled_at != scheduled_at:
        post.scheduled_at = scheduled_at
        post.save(update_fields=["scheduled_at", "updated_at"])
        if post.channel.publishes_through_destination and post.publication_status != PublicationStatus.PUBLISHED:
            # A new time: the publication asked for the old one (or for now) waits for the new one.
            _withdrawing(post, scheduled_at)
    current = post.publication_status
    if status == current:
        if status != PublicationStatus.PUBLISHED and post.channel.publishes_through_destination:
            # Still a draft (or scheduled): a "Publish now" asked for meanwhile is called off.
            _withdrawing(post, scheduled_at)
        return post
    transitions = _transitions(post.channel)
    step = transitions.get((current, status)) or transitions[(ANY, status)]
    return step(post, scheduled_at)


def _check_status(post: Post, status: str, scheduled_at: datetime | None, *, allow_past: bool) -> None:
    """InvalidInput for a status that does not exist, or a schedule it cannot have."""
    if status not in PublicationStatus.values:
        raise field_error("publication_status", "invalid_choice", f"Unknown status {status!r}.")
    if status == PublicationStatus.SCHEDULED and scheduled_at is None:
        raise field_error("scheduled_at", "required", "A scheduled post needs the time it is scheduled for.")
    rescheduling = status == PublicationStatus.SCHEDULED and (
        post.publication_status != status or post.scheduled_at != scheduled_at
    )
    # A time in the past would publish at the content plan's next run: almost always a slip of
    # the date picker, so it needs saying (callers that mean it, such as demo data, allow it).
    if rescheduling and not allow_past and scheduled_at <= timezone.now():
        raise field_error(
            "scheduled_at",
            "future",
            f"{scheduled_at:%Y-%m-%d %H:%M} UTC is in the past: pick a future time, or publish the post now.",
        )


def post_publish_now(*, post_id: int) -> Post:
    """The Settings area's "Publish now" on a draft or scheduled post: a blog post is published at
    once, a post of a channel with a destination is handed to it, an `api` post to the external system."""
    post = Post.objects.select_related("channel").filter(pk=post_id).first()
    if post is None:
        raise NotFound(POST_NOT_FOUND)
    if post.publication_status == PublicationStatus.PUBLISHED:
        raise DomainError("This post is already published.", code="invalid_status")
    if post.channel.publishes_externally:
        return post_mark_publishing_pending(post_id=post_id)
    return post_set_status(post_id=post_id, status=PublicationStatus.PUBLISHED, scheduled_at=post.scheduled_at)
