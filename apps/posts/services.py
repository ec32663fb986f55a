"""Every state change of a post. Each function runs in one transaction and locks the post's row
first, so two requests on the same post (two publish calls, an admin save beside an API call)
run one after the other and the second sees what the first did."""

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone
from django.utils.text import slugify

from apps.accounts.models import Account
from apps.channels.models import Channel
from apps.channels.selectors import channel_get
from apps.core.errors import DomainError, NotFound
from apps.core.keep import KEEP, Keep
from apps.core.validation import field_error, invalid_from_django
from apps.posts.models import (
    POST_STATE_FIELDS,
    SLUG_MAX_LENGTH,
    ApiPublication,
    Media,
    Post,
    PublicationStatus,
    Tag,
)
from apps.posts.serializers import post_webhook_data, publication_webhook_data
from apps.publishing.models import JobAction, JobState, PublicationJob
from apps.publishing.services import job_enqueue, jobs_cancel
from apps.webhooks.models import EventKind
from apps.webhooks.services import event_emit

POST_NOT_FOUND = "Post not found."

# The content of a post: what `post.updated` is about. Status, schedule and external references
# are workflow state and change only through the workflow functions below.
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

    url: str
    kind: str = "image"
    alt_text: str = ""
    width: int | None = None
    height: int | None = None
    id: int | None = None


MEDIA_INPUT_FIELDS: Final = ("url", "kind", "alt_text", "width", "height")


def _validate(instance: models.Model, fields: Iterable[str], prefix: str = "") -> None:
    """Run the model's own field validators and constraints on `fields` only."""
    names = set(fields)
    exclude = [field.name for field in instance._meta.fields if field.name not in names]
    try:
        instance.full_clean(exclude=exclude)
    except ValidationError as exc:
        raise invalid_from_django(exc, prefix) from None


# --- the states of a post: the one place that says what each state's fields are ----------------


def state_values(status: str, *, at: datetime | None = None, external_id=None, external_url=None) -> dict:
    """Every field that belongs to the state `status`, so no stale published_at or external
    reference survives a change of state (`at`: the publication time of `published`)."""
    published = status == PublicationStatus.PUBLISHED
    return {
        "publication_status": status,
        "published_at": at if published else None,
        "external_id": external_id if published else None,
        "external_url": external_url if published else None,
    }


def _put(post: Post, status: str, *, scheduled_at: datetime | Keep | None = KEEP, **state) -> None:
    """Put the post in `status` (state_values), its schedule too where given, and save that."""
    for name, value in state_values(status, **state).items():
        setattr(post, name, value)
    if not isinstance(scheduled_at, Keep):
        post.scheduled_at = scheduled_at
    post.save(update_fields=POST_STATE_FIELDS)


def posts_put(
    *, post_ids: Sequence[int], status: str, now: datetime, scheduled_at: datetime | Keep | None = KEEP
) -> int:
    """Put many posts in `status` in one statement (the content plan's batches, demo data); the
    caller writes their events. Returns how many rows were written."""
    values = state_values(status, at=now) | {"updated_at": now}
    if not isinstance(scheduled_at, Keep):
        values["scheduled_at"] = scheduled_at
    return Post.objects.filter(pk__in=list(post_ids)).update(**values)


def posts_hand_over(*, post_ids: Sequence[int], now: datetime) -> int:
    """Hand posts of `api` channels to the external system in bulk: `publishing_pending`, each with
    its API publication record (a post that was in the workflow before keeps its record, reset)."""
    moved = posts_put(post_ids=post_ids, status=PublicationStatus.PUBLISHING_PENDING, now=now)
    ApiPublication.objects.bulk_create(
        [ApiPublication(post_id=post_id, created_at=now) for post_id in post_ids],
        update_conflicts=True,
        unique_fields=["post"],
        update_fields=["confirmed_at", "external_id", "external_url"],
    )
    return moved


def _locked_post_or_none(post_id: int) -> Post | None:
    return Post.objects.select_for_update(of=("self",)).select_related("channel__account").filter(pk=post_id).first()


def _locked_post(post_id: int) -> Post:
    post = _locked_post_or_none(post_id)
    if post is None:
        raise NotFound(POST_NOT_FOUND)
    return post


def _emit(kind: str, post: Post) -> None:
    """Write the post's event in the transaction of the change it reports (the webhooks outbox)."""
    event_emit(account=post.channel.account, kind=kind, data={"post": post_webhook_data(post)}, post_id=post.pk)


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


def _validate_content(post: Post, names: Iterable[str]) -> None:
    names = list(names)
    # The slug's uniqueness is a constraint over (channel, slug): validate both together.
    _validate(post, [*names, "channel"] if "slug" in names else names)


def _save_content(post: Post, *, slug_made: bool, **save_options) -> None:
    """Save the post's content. Two saves can pick the same free slug at once (or take a given one
    between the check and the write): the slug's uniqueness in the database decides, and the loser
    gets a random suffix on a slug made from the title, or a 400 on a slug it was given."""
    try:
        with transaction.atomic():
            post.save(**save_options)
    except IntegrityError:
        if post.slug and Post.objects.filter(channel_id=post.channel_id, slug=post.slug).exclude(pk=post.pk).exists():
            if not slug_made:
                raise field_error("slug", "unique", "Another post of this channel already has this slug.") from None
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
        values = {name: getattr(item, name) for name in MEDIA_INPUT_FIELDS} | {"position": position}
        if media.pk and all(getattr(media, name) == value for name, value in values.items()):
            continue
        for name, value in values.items():
            setattr(media, name, value)
        _validate(media, values, prefix=f"media[{position}].")
        media.save()
        changed = True
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
    _validate_content(post, CONTENT_FIELDS)
    _save_content(post, slug_made=_blank(slug))
    _assign_tags(post, tags)
    _assign_media(post, media)
    return post


@transaction.atomic
def post_update_content(
    *,
    post: Post,
    title: str | Keep = KEEP,
    body: str | Keep = KEEP,
    teaser: str | Keep | None = KEEP,
    slug: str | Keep | None = KEEP,
    meta_title: str | Keep | None = KEEP,
    meta_description: str | Keep | None = KEEP,
    tags: Iterable[Tag] | Keep = KEEP,
    media: Sequence[MediaInput] | Keep = KEEP,
) -> tuple[Post, list[str]]:
    """Change a post's content; return the post and the names of what really changed, in the
    order of CONTENT_FIELDS then "tags", "media" (empty when the values equal the stored ones).

    Values are compared with the row as locked, not with the `post` passed in: the admin's form
    has already written its values onto that instance. The status does not change; a published
    post stays published (the spec's `post.updated` case).
    """
    locked = _locked_post(post.pk)
    given = {"title": title, "body": body, "teaser": teaser, "slug": slug}
    given |= {"meta_title": meta_title, "meta_description": meta_description}
    changed = _assign_content(locked, {name: value for name, value in given.items() if value is not KEEP})
    if changed:
        _validate_content(locked, changed)
    if not isinstance(tags, Keep) and _assign_tags(locked, tags):
        changed.append("tags")
    if not isinstance(media, Keep) and _assign_media(locked, media):
        changed.append("media")
    if changed:
        # updated_at moves for tag and media changes too: they are the post's content.
        _save_content(
            locked,
            slug_made=slug is not KEEP and _blank(slug),
            update_fields=[*(name for name in changed if name in CONTENT_FIELDS), "updated_at"],
        )
        if locked.publication_status == PublicationStatus.PUBLISHED:
            _emit(EventKind.POST_UPDATED, locked)
            if locked.channel.publishes_through_destination:
                _request(locked, JobAction.UPDATE)
    return locked, changed


# --- the external publishing workflow of `api` channels ---------------------------------------


def _only_api_platform() -> DomainError:
    return DomainError(
        "Only posts of channels with platform 'api' go through the external publishing workflow.",
        code="only_api_platform",
    )


def _workflow_post(*, post_id: int, channel_id: int, account: Account, status: str, action: str) -> Post:
    """Rules 2 to 4 of publish and unpublish, in the spec's order; returns the locked post."""
    channel = channel_get(account_id=account.pk, channel_id=channel_id)
    post = Post.objects.select_for_update().filter(pk=post_id, channel=channel).first()
    if post is None:
        raise NotFound(POST_NOT_FOUND)
    if not channel.publishes_externally:
        raise _only_api_platform()
    if post.publication_status != status:
        raise DomainError(
            f"Only a post in {status} can be {action}; this post is {post.publication_status}.",
            code="invalid_status",
        )
    channel.account = account  # the channel was looked up within this account
    post.channel = channel
    return post


def _publication_of(post: Post) -> ApiPublication:
    publication = ApiPublication.objects.filter(post=post).first()
    if publication is None:
        raise DomainError(
            "This post has no API publication record: it did not enter the external publishing workflow.",
            code="no_publication",
        )
    return publication


@transaction.atomic
def post_mark_publishing_pending(*, post_id: int) -> Post:
    """Hand a post of an `api` channel to the external system: `publishing_pending`, with its API
    publication record (created, or reused when the post was in the workflow before).

    The content plan calls this when a scheduled post's time comes. A post already pending is
    left as it is (only a missing record is added), so calling twice changes nothing.
    """
    post = _locked_post(post_id)
    if not post.channel.publishes_externally:
        raise _only_api_platform()
    if post.publication_status == PublicationStatus.PUBLISHED:
        raise DomainError("A published post cannot await publication again; unpublish it first.", code="invalid_status")
    ApiPublication.objects.get_or_create(post=post)
    if post.publication_status != PublicationStatus.PUBLISHING_PENDING:
        _put(post, PublicationStatus.PUBLISHING_PENDING)
        _emit(EventKind.POST_PUBLISHING_PENDING, post)
    return post


@transaction.atomic
def post_publish(
    *,
    post_id: int,
    channel_id: int,
    account: Account,
    external_id: str | None = None,
    external_url: str | None = None,
) -> Post:
    """The external system confirms publication: `publishing_pending` -> `published`."""
    post = _workflow_post(
        post_id=post_id, channel_id=channel_id, account=account, status=PublicationStatus.PUBLISHING_PENDING,
        action="published",
    )  # fmt: skip
    publication = _publication_of(post)
    now = timezone.now()
    post.external_id, post.external_url = external_id, external_url
    _validate(post, ["external_id", "external_url"])
    _put(post, PublicationStatus.PUBLISHED, at=now, external_id=external_id, external_url=external_url)
    publication.confirm(at=now, external_id=external_id, external_url=external_url)
    publication.save(update_fields=["confirmed_at", "external_id", "external_url"])
    _emit(EventKind.POST_PUBLISHED, post)
    return post


@transaction.atomic
def post_unpublish(*, post_id: int, channel_id: int, account: Account) -> Post:
    """Revert a published post of an `api` channel to `draft`; its external references go."""
    post = _workflow_post(
        post_id=post_id, channel_id=channel_id, account=account, status=PublicationStatus.PUBLISHED,
        action="unpublished",
    )  # fmt: skip
    publication = _publication_of(post)
    _put(post, PublicationStatus.DRAFT)
    publication.reset()
    publication.save(update_fields=["confirmed_at", "external_id", "external_url"])
    _emit(EventKind.POST_UNPUBLISHED, post)
    return post


# --- status changes made by editors (the admin) ------------------------------------------------

Step = Callable[[Post, datetime | None], Post]
ANY: Final = "*"


def _hand_over(post: Post, scheduled_at: datetime | None) -> Post:
    return post_mark_publishing_pending(post_id=post.pk)


def _confirm(post: Post, scheduled_at: datetime | None) -> Post:
    return post_publish(post_id=post.pk, channel_id=post.channel_id, account=post.channel.account)


def _revert(post: Post, scheduled_at: datetime | None) -> Post:
    return post_unpublish(post_id=post.pk, channel_id=post.channel_id, account=post.channel.account)


def _refuse(post: Post, scheduled_at: datetime | None) -> Post:
    raise _only_api_platform()


def _set(status: str) -> Step:
    """Put the post straight into `status` (every field of the state with it)."""

    def step(post: Post, scheduled_at: datetime | None) -> Post:
        if status == PublicationStatus.SCHEDULED:
            _put(post, status, scheduled_at=scheduled_at)
        else:
            _put(post, status, at=timezone.now())
        return post

    return step


def _request(post: Post, action: str) -> None:
    """Ask the channel's destination for `action` on the post (a job, run after commit)."""
    job_enqueue(channel_id=post.channel_id, post_id=post.pk, title=post.title, action=action)


def _requesting(action: str) -> Step:
    def step(post: Post, scheduled_at: datetime | None) -> Post:
        _request(post, action)
        return post

    return step


def _publication_under_way(post_id: int, actions: list[str]) -> bool:
    """A job of these actions running, or tried and waiting for its retry: what it sent may be out
    there (its answer lost), so taking the post back asks for an unpublish too."""
    return (
        PublicationJob.objects.filter(post_id=post_id, action__in=actions)
        .filter(models.Q(state=JobState.RUNNING) | models.Q(state=JobState.QUEUED, attempts__gt=0))
        .exists()
    )


def _withdrawing(post: Post, scheduled_at: datetime | None) -> Post:
    """A post that is not published goes back to draft or to a later time: its publication that
    has not started is canceled; one already running (or tried) is followed by an unpublish, so
    that what it put up comes down again."""
    under_way = _publication_under_way(post.pk, [JobAction.PUBLISH])
    jobs_cancel(post_id=post.pk, actions=[JobAction.PUBLISH])
    if under_way:
        _request(post, JobAction.UNPUBLISH)
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
        _emit(kind, post)
        return post

    return step


_S = PublicationStatus
# What an editor's change of status (from, to) does, by how the channel publishes; a row for
# (from, to) wins over the row for (ANY, to). On `api` channels the workflow's own transitions
# run through the workflow functions above, so their rules and events apply whoever triggers
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
    (ANY, _S.PUBLISHED): _sending(EventKind.POST_PUBLISHED, _set(_S.PUBLISHED)),
    (_S.PUBLISHED, _S.DRAFT): _sending(EventKind.POST_UNPUBLISHED, _set(_S.DRAFT)),
    (_S.PUBLISHED, _S.SCHEDULED): _sending(EventKind.POST_UNPUBLISHED, _set(_S.SCHEDULED)),
    (ANY, _S.DRAFT): _set(_S.DRAFT),
    (ANY, _S.SCHEDULED): _set(_S.SCHEDULED),
}
# git and LinkedIn channels: publishing asks their destination (a job); the post becomes
# `published` when the destination confirms (post_publication_confirmed). Taking a post down is
# the editor's to decide at once; the job then removes it from the destination.
DESTINATION_TRANSITIONS: Final[dict[tuple[str, str], Step]] = {
    (ANY, _S.PUBLISHING_PENDING): _refuse,
    (ANY, _S.PUBLISHED): _requesting(JobAction.PUBLISH),
    (_S.PUBLISHED, _S.DRAFT): _then(
        _sending(EventKind.POST_UNPUBLISHED, _set(_S.DRAFT)), _requesting(JobAction.UNPUBLISH)
    ),
    (_S.PUBLISHED, _S.SCHEDULED): _then(
        _sending(EventKind.POST_UNPUBLISHED, _set(_S.SCHEDULED)), _requesting(JobAction.UNPUBLISH)
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
    post = _locked_post(post_id)
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
            "past",
            f"{scheduled_at:%Y-%m-%d %H:%M} UTC is in the past: pick a future time, or publish the post now.",
        )
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


def post_publish_now(*, post_id: int) -> Post:
    """The Settings area's "Publish now" on a draft or scheduled post: a blog post is published at
    once, a git or LinkedIn post is handed to its destination, an `api` post to the external system."""
    post = Post.objects.select_related("channel").filter(pk=post_id).first()
    if post is None:
        raise NotFound(POST_NOT_FOUND)
    if post.publication_status == PublicationStatus.PUBLISHED:
        raise DomainError("This post is already published.", code="invalid_status")
    if post.channel.publishes_externally:
        return post_mark_publishing_pending(post_id=post_id)
    return post_set_status(post_id=post_id, status=PublicationStatus.PUBLISHED, scheduled_at=post.scheduled_at)


@transaction.atomic
def post_delete(*, post_id: int) -> None:
    """Delete a post. A published post of a git or LinkedIn channel is taken down from its
    destination (a job that outlives the post); its publication not yet started is canceled."""
    post = _locked_post(post_id)
    if post.channel.publishes_through_destination:
        under_way = _publication_under_way(post.pk, [JobAction.PUBLISH, JobAction.UPDATE, JobAction.UNPUBLISH])
        jobs_cancel(
            post_id=post.pk, actions=[JobAction.PUBLISH, JobAction.UPDATE], reason="Canceled: the post was deleted."
        )
        published = post.publication_status == PublicationStatus.PUBLISHED
        if published or under_way:
            _request(post, JobAction.UNPUBLISH)
    post.delete()


# --- outcomes of publication jobs (called by the pipeline, in the transaction that records them) --


def post_publication_confirmed(*, job: PublicationJob) -> None:
    """The destination has the post: a first publication makes it `published`, dated as the file
    says, and sends `post.published`. Not when the editor has since taken it back (an unpublish
    job follows this one and takes it down)."""
    if job.action != JobAction.PUBLISH:
        return
    post = _locked_post_or_none(job.post_id)
    if post is None or post.publication_status == PublicationStatus.PUBLISHED:
        return
    if PublicationJob.objects.filter(post_id=post.pk, action=JobAction.UNPUBLISH, id__gt=job.pk).exists():
        return
    _put(post, PublicationStatus.PUBLISHED, at=job.published_at or timezone.now())
    _emit(EventKind.POST_PUBLISHED, post)


def post_publication_failed(*, job: PublicationJob) -> None:
    """A job failed for good: `post.failed` with the post (null once deleted) and the job's error."""
    post = Post.objects.select_related("channel__account").filter(pk=job.post_id).first()
    channel = post.channel if post is not None else job.channel
    data = {
        "post": post_webhook_data(post) if post is not None else None,
        "post_id": job.post_id,
        "publication": publication_webhook_data(job),
    }
    event_emit(account=channel.account, kind=EventKind.POST_FAILED, data=data, post_id=job.post_id)
