"""The external publishing workflow of `api` channels: a post handed to the external system
(`publishing_pending`), which confirms its publication (`published`) or reverts it (`draft`) through
the API's publish and unpublish endpoints. Each function runs in one transaction and locks the
post's row first; editors' changes on `api` channels (editor_status.py) run through these too, so
the workflow's rules and events apply whoever triggers them."""

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Account
from apps.channels.selectors import channel_get
from apps.core.errors import DomainError, NotFound
from apps.posts.events import PostEvent
from apps.posts.lifecycle import POST_NOT_FOUND, emit, locked_post, put_state, validate_fields
from apps.posts.models import ApiPublication, Post, PublicationStatus


def only_api_platform() -> DomainError:
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
        raise only_api_platform()
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
    post = locked_post(post_id)
    if not post.channel.publishes_externally:
        raise only_api_platform()
    if post.publication_status == PublicationStatus.PUBLISHED:
        raise DomainError("A published post cannot await publication again; unpublish it first.", code="invalid_status")
    ApiPublication.objects.get_or_create(post=post)
    if post.publication_status != PublicationStatus.PUBLISHING_PENDING:
        put_state(post, PublicationStatus.PUBLISHING_PENDING)
        emit(PostEvent.PUBLISHING_PENDING, post)
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
        post_id=post_id,
        channel_id=channel_id,
        account=account,
        status=PublicationStatus.PUBLISHING_PENDING,
        action="published",
    )
    publication = _publication_of(post)
    now = timezone.now()
    post.external_id, post.external_url = external_id, external_url
    validate_fields(post, ["external_id", "external_url"])
    put_state(post, PublicationStatus.PUBLISHED, at=now, external_id=external_id, external_url=external_url)
    publication.confirm(at=now, external_id=external_id, external_url=external_url)
    publication.save(update_fields=["confirmed_at", "external_id", "external_url"])
    emit(PostEvent.PUBLISHED, post)
    return post


@transaction.atomic
def post_unpublish(*, post_id: int, channel_id: int, account: Account) -> Post:
    """Revert a published post of an `api` channel to `draft`; its external references go."""
    post = _workflow_post(
        post_id=post_id,
        channel_id=channel_id,
        account=account,
        status=PublicationStatus.PUBLISHED,
        action="unpublished",
    )
    publication = _publication_of(post)
    put_state(post, PublicationStatus.DRAFT)
    publication.reset()
    publication.save(update_fields=["confirmed_at", "external_id", "external_url"])
    emit(PostEvent.UNPUBLISHED, post)
    return post
