"""A post's content: created, changed and deleted. Each function runs in one transaction and locks
the post's row first, so two requests on the same post (two saves, an admin save beside an API
call) run one after the other and the second sees what the first did.

A post's state changes live in this package, one module per concern: its content here; what every
change does alike, and which fields each state sets, in lifecycle.py; editors' status changes in
editor_status.py; the `api` channels' external workflow in api_workflow.py; the publishing
pipeline's outcomes in pipeline_subject.py. Each caller imports a name from the module that defines
it (this one re-exports nothing).
"""

import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from apps.channels.models import Channel
from apps.core.errors import NotFound
from apps.core.keep import KEEP, Keep
from apps.core.validation import field_error
from apps.media.selectors import media_shown_in, medium_get, medium_url, shows_media
from apps.posts.events import PostEvent
from apps.posts.lifecycle import emit, locked_post, publication_under_way, request_job, validate_fields
from apps.posts.models import SLUG_MAX_LENGTH, Media, Post, PublicationStatus, Tag
from apps.publishing.models import JobAction
from apps.publishing.services import jobs_cancel

# The content of a post: what `post.updated` is about. Status, schedule and external references
# are workflow state and change only through editor_status.py and api_workflow.py.
CONTENT_FIELDS: Final = ("title", "body", "teaser", "slug", "meta_title", "meta_description")
# What an empty (or blank, or missing) value of these is stored as: the spec types the teaser and
# the slug as strings (an empty slug is then made from the title), the SEO texts as string or null.
EMPTY_CONTENT: Final = {"teaser": "", "slug": "", "meta_title": None, "meta_description": None}
# Suffixed slugs tried, in one query, before a random suffix: "title", "title-2", ... "title-10".
SLUG_NUMBERS: Final = range(2, 11)


@dataclass(frozen=True)
class MediaInput:
    """One media item of a post as an editor sets it; `id` names an existing item of the post to
    keep (and update), no `id` adds a new one."""

    url: str = ""
    kind: str = "image"
    alt_text: str = ""
    width: int | None = None
    height: int | None = None
    id: int | None = None
    # An uploaded medium of the post's account: the item shows it (url, kind and size are its own).
    medium: int | None = None


MEDIA_INPUT_FIELDS: Final = ("url", "kind", "alt_text", "width", "height")


# --- content ---------------------------------------------------------------------------------


def _blank(value: str | None) -> bool:
    return value is None or not value.strip()


def _suffixed(base: str, suffix: str) -> str:
    return base[: SLUG_MAX_LENGTH - len(suffix)].rstrip("-_") + suffix


def _slug_from_title(title: str) -> str:
    return slugify(title)[:SLUG_MAX_LENGTH].strip("-_") or "post"


def _free_slug(*, channel_id: int, title: str, post_id: int | None = None) -> str:
    """A slug made from the title that no other post of the channel has: the title's slug, or it
    numbered, or (past SLUG_NUMBERS) with a random suffix. One indexed query."""
    base = _slug_from_title(title)
    candidates = [base, *(_suffixed(base, f"-{number}") for number in SLUG_NUMBERS)]
    taken = set(
        Post.objects.filter(channel_id=channel_id, slug__in=candidates)
        .exclude(pk=post_id)
        .values_list("slug", flat=True)
    )
    return next((slug for slug in candidates if slug not in taken), _suffixed(base, f"-{secrets.token_hex(4)}"))


def one_line_end(text: str) -> str:
    """Text with LF line ends only: a browser's form sends CRLF, so an unchanged text saved from the
    Settings area would otherwise differ from the stored one (and be "updated")."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _assign_content(post: Post, values: dict) -> list[str]:
    """Set the given content fields on `post`; return the names whose value changed. An empty slug
    given is made from the (new) title."""
    values = {
        name: EMPTY_CONTENT[name] if name in EMPTY_CONTENT and _blank(value) else value
        for name, value in values.items()
    }
    values = {name: one_line_end(value) if isinstance(value, str) else value for name, value in values.items()}
    if values.get("slug") == "":
        values["slug"] = _free_slug(channel_id=post.channel_id, title=values.get("title", post.title), post_id=post.pk)
    changed = []
    for name, value in values.items():
        if getattr(post, name) != value:
            setattr(post, name, value)
            changed.append(name)
    return changed


SLUG_TAKEN = "Another post of this channel already has this slug."


def _validate_content(post: Post, names: Iterable[str], *, slug_made: bool) -> None:
    """The content's own rules. The slug's constraints are the services' to keep: a slug made from
    the title is free and never empty (a race for it is settled at the save), and a given one is
    checked here, so that the error names the slug (the constraint over (channel, slug) names none)."""
    names = list(names)
    taken = Post.objects.filter(channel_id=post.channel_id, slug=post.slug).exclude(pk=post.pk)
    if "slug" in names and not slug_made and taken.exists():
        raise field_error("slug", "unique", SLUG_TAKEN)
    validate_fields(post, names, constraints=False)


def _save_content(post: Post, *, slug_made: bool, **save_options) -> None:
    """Save the post's content. Two saves can pick the same free slug at once (or take a given one
    between the check and the write): the slug's uniqueness in the database decides, and the loser
    gets a random suffix on a slug made from the title, or a 400 on a slug it was given."""
    fields = save_options.get("update_fields")
    if fields is not None and "slug" not in fields:
        # Only a written slug can break a constraint here: no savepoint to recover from that (two
        # statements fewer in every editor's save that keeps its slug).
        post.save(**save_options)
    else:
        _save_slug(post, slug_made=slug_made, **save_options)
    if fields is None or "body" in fields:
        _sync_body_media(post, created=fields is None)


def _save_slug(post: Post, *, slug_made: bool, **save_options) -> None:
    try:
        with transaction.atomic():
            post.save(**save_options)
    except IntegrityError:
        if post.slug and Post.objects.filter(channel_id=post.channel_id, slug=post.slug).exclude(pk=post.pk).exists():
            if not slug_made:
                raise field_error("slug", "unique", SLUG_TAKEN) from None
            post.slug = _suffixed(_slug_from_title(post.title), f"-{secrets.token_hex(4)}")
            post.save(**save_options)
        else:
            raise


def check_tags_of_account(tags: Iterable[Tag], account_id: int) -> None:
    """Tags are per account: a post takes only tags of its channel's account."""
    foreign = sorted(tag.name for tag in tags if tag.account_id != account_id)
    if foreign:
        raise field_error("tags", "account", f"The tags {', '.join(foreign)} belong to another account.")


def _assign_tags(post: Post, tags: Iterable[Tag]) -> bool:
    tags = list(tags)
    check_tags_of_account(tags, post.channel.account_id)
    if {tag.pk for tag in tags} == set(post.tags.values_list("pk", flat=True)):
        return False
    post.tags.set(tags)
    return True


def _media_values(item: MediaInput, account_id: int, position: int) -> dict:
    """The stored values of a media item: as given, or those of the uploaded medium it names."""
    if item.medium is None:
        return {name: getattr(item, name) for name in MEDIA_INPUT_FIELDS} | {"position": position, "medium_id": None}
    try:
        medium = medium_get(account_id=account_id, medium_id=item.medium)
    except NotFound:
        raise field_error(
            f"media[{position}].medium", "not_found", f"No medium {item.medium} in this account's media library."
        ) from None
    return {
        "url": medium_url(medium),
        "kind": medium.kind,
        "alt_text": item.alt_text or medium.alt_text,
        "width": medium.width,
        "height": medium.height,
        "position": position,
        "medium_id": medium.pk,
    }


def _sync_body_media(post: Post, *, created: bool) -> None:
    """What the body shows of the media library, as the body now reads (a new post shows none yet)."""
    shown = media_shown_in(post.body, account_id=post.channel.account_id) if shows_media(post.body) else []
    if created:
        if shown:
            post.body_media.add(*shown)
    elif {medium.pk for medium in shown} != set(post.body_media.values_list("pk", flat=True)):
        post.body_media.set(shown)


def _assign_media(post: Post, items: Sequence[MediaInput]) -> bool:
    existing = {media.pk: media for media in post.media.all()}
    kept_ids = {item.id for item in items if item.id is not None}
    unknown = kept_ids - existing.keys()
    if unknown:
        raise field_error("media", "unknown", f"Items {sorted(unknown)} are not media of this post.")
    changed = False
    removed = existing.keys() - kept_ids
    if removed:
        Media.objects.filter(pk__in=removed).delete()
        changed = True
    for position, item in enumerate(items):
        media = existing[item.id] if item.id is not None else Media(post=post)
        values = _media_values(item, post.channel.account_id, position)
        if media.pk and all(getattr(media, name) == value for name, value in values.items()):
            continue
        for name, value in values.items():
            setattr(media, name, value)
        validate_fields(media, values, prefix=f"media[{position}].")
        media.save()
        changed = True
    return changed


def _assign_parts(post: Post, tags: Iterable[Tag] | Keep, media: Sequence[MediaInput] | Keep) -> list[str]:
    """The post's tags and media, where given: the names of those that changed."""
    changed = []
    if not isinstance(tags, Keep) and _assign_tags(post, tags):
        changed.append("tags")
    if not isinstance(media, Keep) and _assign_media(post, media):
        changed.append("media")
    return changed


@transaction.atomic
def post_create(
    *,
    channel: Channel,
    title: str,
    body: str = "",
    teaser: str | None = None,
    slug: str | None = None,
    meta_title: str | None = None,
    meta_description: str | None = None,
    tags: Iterable[Tag] = (),
    media: Sequence[MediaInput] = (),
) -> Post:
    """A new draft post; its status changes afterwards through post_set_status or the workflow."""
    post = Post(channel=channel)
    content = {"title": title, "body": body, "teaser": teaser, "slug": slug}
    _assign_content(post, content | {"meta_title": meta_title, "meta_description": meta_description})
    _validate_content(post, CONTENT_FIELDS, slug_made=_blank(slug))
    _save_content(post, slug_made=_blank(slug))
    # A new post has no tags or media yet: nothing to read and compare first.
    tags = list(tags)
    if tags:
        check_tags_of_account(tags, channel.account_id)
        post.tags.add(*tags)
    if media:
        _assign_media(post, media)
    return post


@transaction.atomic
def post_update_content(*, post: Post, **changes) -> tuple[Post, list[str]]:
    """Change a post's content (the arguments of locked_post_change); return the post and the names
    of what really changed.

    Values are compared with the row as locked, not with the `post` passed in: the admin's form
    has already written its values onto that instance.
    """
    return locked_post_change(locked=locked_post(post.pk), **changes)


def locked_post_change(
    *,
    locked: Post,
    title: str | Keep = KEEP,
    body: str | Keep = KEEP,
    teaser: str | Keep | None = KEEP,
    slug: str | Keep | None = KEEP,
    meta_title: str | Keep | None = KEEP,
    meta_description: str | Keep | None = KEEP,
    tags: Iterable[Tag] | Keep = KEEP,
    media: Sequence[MediaInput] | Keep = KEEP,
) -> tuple[Post, list[str]]:
    """post_update_content for a caller that holds the post's row lock in its transaction (the
    row `locked` was read with it): the names of what really changed, in the order of
    CONTENT_FIELDS then "tags", "media" (empty when the values equal the stored ones). The status
    does not change; a published post stays published (the spec's `post.updated` case)."""
    given = {"title": title, "body": body, "teaser": teaser, "slug": slug}
    given |= {"meta_title": meta_title, "meta_description": meta_description}
    changed = _assign_content(locked, {name: value for name, value in given.items() if value is not KEEP})
    if changed:
        _validate_content(locked, changed, slug_made=slug is not KEEP and _blank(slug))
    changed += _assign_parts(locked, tags, media)
    if changed:
        # updated_at moves for tag and media changes too: they are the post's content.
        _save_content(
            locked,
            slug_made=slug is not KEEP and _blank(slug),
            update_fields=[*(name for name in changed if name in CONTENT_FIELDS), "updated_at"],
        )
        if locked.publication_status == PublicationStatus.PUBLISHED:
            emit(PostEvent.UPDATED, locked)
            if locked.channel.publishes_through_destination:
                request_job(locked, JobAction.UPDATE)
    return locked, changed


@transaction.atomic
def post_delete(*, post_id: int) -> None:
    """Delete a post. A published post of a channel with a destination is taken down from its
    destination (a job that outlives the post); its publication not yet started is canceled."""
    post = locked_post(post_id)
    if post.channel.publishes_through_destination:
        under_way = publication_under_way(post.pk, [JobAction.PUBLISH, JobAction.UPDATE, JobAction.UNPUBLISH])
        jobs_cancel(
            post_id=post.pk, actions=[JobAction.PUBLISH, JobAction.UPDATE], reason="Canceled: the post was deleted."
        )
        published = post.publication_status == PublicationStatus.PUBLISHED
        if published or under_way:
            request_job(post, JobAction.UNPUBLISH)
    post.delete()
