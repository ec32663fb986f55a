"""A post written by a program (the API's create, edit and delete): its content, its tags by name
and its status in one transaction, by the same services as the Settings area, so an edit does
what an edit there does (post.updated, the destination updated) and a status change what the same
change there does (Publish now, back to draft takes the post down).

What the spec's workflow keeps for itself on `api` channels stays there: a program puts such a post
in `draft` or `scheduled` (the content plan hands it over), and only the publish and unpublish
endpoints move it in and out of `published`.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from django.db import IntegrityError, transaction

from apps.channels.models import Channel
from apps.core.errors import DomainError, Forbidden, NotFound
from apps.core.keep import KEEP, Keep
from apps.core.validation import field_error
from apps.posts.editor_status import post_set_status
from apps.posts.lifecycle import POST_NOT_FOUND, locked_post
from apps.posts.models import Post, PublicationStatus, Tag
from apps.posts.publish_now import publish_now
from apps.posts.services import MediaInput, locked_post_change, post_create, post_delete

_S = PublicationStatus
# A caller's check of the post as it is now, made with its row locked, before anything changes (the
# API's If-Match): it raises to refuse.
Check = Callable[[Post], None]
# The statuses a program may ask for on an `api` channel: the rest is the external workflow's.
API_CHANNEL_STATUSES: Final = frozenset({_S.DRAFT, _S.SCHEDULED})


@dataclass(frozen=True)
class Writer:
    """What the person behind the request may do beyond writing content: publish, schedule or take
    down (articles.publish)."""

    may_publish: bool


def tags_named(*, account_id: int, names: Iterable[str]) -> list[Tag]:
    """The account's tags of these names, in the order given (repeats once), made where new. Two
    requests making the same new tag at once both get the one that won."""
    wanted = list(dict.fromkeys(names))
    found = {tag.name: tag for tag in Tag.objects.filter(account_id=account_id, name__in=wanted)}
    for name in wanted:
        if name not in found:
            try:
                with transaction.atomic():
                    found[name] = Tag.objects.create(account_id=account_id, name=name)
            except IntegrityError:
                found[name] = Tag.objects.get(account_id=account_id, name=name)
    return [found[name] for name in wanted]


def _invalid_status(message: str) -> DomainError:
    return DomainError(message, code="invalid_status")


def _check_status_change(channel: Channel, current: str, wanted: str) -> None:
    """The workflow's rules for a status a program asks for (422 `invalid_status`)."""
    if channel.publishes_externally:
        if wanted not in API_CHANNEL_STATUSES and wanted != current:
            raise _invalid_status(
                f"A post of an api channel cannot be made {wanted} here: it is scheduled (or a draft), the content "
                "plan hands it to the external system at its time, and the publish endpoint confirms it."
            )
        if current == _S.PUBLISHED and wanted != current:
            raise _invalid_status(
                "This post of an api channel is published: the unpublish endpoint takes it back to draft first."
            )
    elif wanted == _S.PUBLISHING_PENDING:
        raise _invalid_status("Only posts of api channels await an external system's confirmation.")


def _schedule(post: Post, status: str | Keep, scheduled_at: datetime | Keep | None) -> tuple[str, datetime | None]:
    """The status and planned time the post ends with; refuses a time given to a post that will not
    be scheduled (it would mean nothing)."""
    wanted = post.publication_status if isinstance(status, Keep) else status
    if wanted == _S.SCHEDULED:
        when = post.scheduled_at if isinstance(scheduled_at, Keep) else scheduled_at
        if when is None:
            raise field_error("scheduled_at", "required", "A scheduled post needs the time it is scheduled for.")
        return wanted, when
    if not isinstance(scheduled_at, Keep) and scheduled_at is not None:
        raise field_error(
            "scheduled_at",
            "only_when_scheduled",
            "Only a scheduled post has a planned time: send publication_status scheduled with it.",
        )
    return wanted, None


def _set_status(post: Post, *, writer: Writer, status: str | Keep, scheduled_at: datetime | Keep | None) -> None:
    wanted, when = _schedule(post, status, scheduled_at)
    current = post.publication_status
    moves = wanted != current or (wanted == _S.SCHEDULED and when != post.scheduled_at)
    if not moves:
        return
    _check_status_change(post.channel, current, wanted)
    if not writer.may_publish:
        raise Forbidden(
            "Publishing, scheduling and taking down posts needs the permission articles.publish, which the owner "
            "of this API key lacks.",
        )
    if wanted == _S.PUBLISHED:
        publish_now(post_id=post.pk)
    else:
        post_set_status(post_id=post.pk, status=wanted, scheduled_at=when)


@transaction.atomic
def post_write_new(
    *,
    channel: Channel,
    writer: Writer,
    content: dict,
    tag_names: Sequence[str] = (),
    status: str = _S.DRAFT,
    scheduled_at: datetime | None = None,
) -> Post:
    """A new post of the channel, with its content and tags, in `status` (a draft, unless said)."""
    tags = tags_named(account_id=channel.account_id, names=tag_names)
    post = post_create(channel=channel, tags=tags, **content)
    _set_status(post, writer=writer, status=status, scheduled_at=scheduled_at)
    return post


def _by_position(post: Post, items: Sequence[MediaInput]) -> list[MediaInput]:
    """A program sends the whole list: each item is the post's item at its place, changed where it
    differs, so an unchanged list changes nothing (no post.updated, no new job)."""
    existing = list(post.media.order_by("position", "id").values_list("pk", flat=True))
    return [replace(item, id=existing[place]) if place < len(existing) else item for place, item in enumerate(items)]


@transaction.atomic
def post_write(
    *,
    post_id: int,
    channel_id: int,
    writer: Writer,
    content: dict,
    tag_names: Sequence[str] | Keep = KEEP,
    status: str | Keep = KEEP,
    scheduled_at: datetime | Keep | None = KEEP,
    check: Check | None = None,
) -> None:
    """Change what is given of the post (`content`: the content fields to change), all or nothing.

    A post leaving `published` is taken down before its content changes (no post.updated for what
    goes down); any other status change comes after the content, so a post published now goes out
    with its new content."""
    post = _locked_post_of(post_id, channel_id)
    if check is not None:
        check(post)
    tags = KEEP if isinstance(tag_names, Keep) else tags_named(account_id=post.channel.account_id, names=tag_names)
    leaving = post.publication_status == _S.PUBLISHED and not isinstance(status, Keep) and status != _S.PUBLISHED
    if leaving:
        _set_status(post, writer=writer, status=status, scheduled_at=scheduled_at)
        post = locked_post(post.pk)
    if "media" in content:
        content = content | {"media": _by_position(post, content["media"])}
    post, _ = locked_post_change(locked=post, tags=tags, **content)
    if not leaving:
        _set_status(post, writer=writer, status=status, scheduled_at=scheduled_at)


@transaction.atomic
def post_write_delete(*, post_id: int, channel_id: int, check: Check | None = None) -> None:
    """Delete the post, as a delete in the Settings area does; a published post of an `api` channel
    is the unpublish endpoint's to take down first."""
    post = _locked_post_of(post_id, channel_id)
    if check is not None:
        check(post)
    if post.channel.publishes_externally and post.publication_status == _S.PUBLISHED:
        raise _invalid_status(
            "This post of an api channel is published: the unpublish endpoint takes it back to draft before it is "
            "deleted."
        )
    post_delete(post_id=post.pk)


def _locked_post_of(post_id: int, channel_id: int) -> Post:
    post = locked_post(post_id)
    if post.channel_id != channel_id:
        # A post of another channel is not found through this one, as on reads.
        raise NotFound(POST_NOT_FOUND)
    return post
