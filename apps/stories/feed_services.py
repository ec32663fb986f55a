"""A user's calendar feed: made, replaced (a new secret, the old address dead at once), revoked, and
found by its secret when a calendar app reads it. The secret is 256 random bits, stored only as its
digest (apps/core/crypto.hash_secret), so whoever reads the table cannot read anyone's schedule."""

import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.core.crypto import hash_secret
from apps.core.errors import DomainError, Forbidden, NotFound
from apps.stories.models import CalendarFeed
from apps.users.models import Permission, User

NO_FEED = "You have no calendar feed."
# A feed is read by calendar apps every few minutes to hours: its last read is written at most this
# often, so polling costs no write per request.
READ_RESOLUTION = timedelta(minutes=5)


def may_have_feed(user: User) -> bool:
    """The rule of who has a feed that answers: an active member of an account who may read its
    articles. A user deactivated, or who loses articles.read, keeps the row but the address answers
    404 until this holds again."""
    return user.is_active and user.account_id is not None and Permission.ARTICLES_READ in user.permissions


def _check_may_have_feed(user: User) -> None:
    if user.account_id is None:
        raise Forbidden("A calendar feed shows an account's schedule; operators belong to no account.")
    if not may_have_feed(user):
        raise Forbidden(
            "A calendar feed shows the account's stories and posts, which needs the permission articles.read."
        )


def _new_secret(feed: CalendarFeed) -> str:
    raw = secrets.token_urlsafe(32)
    feed.token_hash = hash_secret(raw)
    feed.created_at = timezone.now()
    feed.last_read_at = None
    return raw


@transaction.atomic
def calendar_feed_create(*, user: User) -> tuple[CalendarFeed, str]:
    """The user's feed, with its secret, which is shown to them only now."""
    _check_may_have_feed(user)
    if CalendarFeed.objects.select_for_update().filter(user=user).exists():
        raise DomainError("You already have a calendar feed: replace it to get a new address.", code="feed_exists")
    feed = CalendarFeed(user=user)
    raw = _new_secret(feed)
    feed.save()
    return feed, raw


@transaction.atomic
def calendar_feed_replace(*, user: User) -> tuple[CalendarFeed, str]:
    """A new secret for the user's feed: the old address answers 404 from now on."""
    _check_may_have_feed(user)
    feed = CalendarFeed.objects.select_for_update().filter(user=user).first()
    if feed is None:
        raise NotFound(NO_FEED)
    raw = _new_secret(feed)
    feed.save(update_fields=["token_hash", "created_at", "last_read_at"])
    return feed, raw


@transaction.atomic
def calendar_feed_revoke(*, user: User) -> bool:
    """The user's feed gone (its address answers 404); whether there was one."""
    deleted, _ = CalendarFeed.objects.filter(user=user).delete()
    return bool(deleted)


def calendar_feed_read(*, raw: str) -> CalendarFeed:
    """The feed whose secret this is, with its user and their account, noted as read; NotFound for an
    unknown or revoked secret and for a user who may not have a feed (may_have_feed).

    The row is looked up by the secret's digest (which tells nothing of the secret) and then compared
    in constant time, as an API key is."""
    digest = hash_secret(raw)
    feed = CalendarFeed.objects.select_related("user__account").filter(token_hash=digest).first()
    if feed is None or not secrets.compare_digest(feed.token_hash, digest) or not may_have_feed(feed.user):
        raise NotFound("No such calendar feed.")
    now = timezone.now()
    if feed.last_read_at is None or now - feed.last_read_at >= READ_RESOLUTION:
        CalendarFeed.objects.filter(pk=feed.pk).update(last_read_at=now)
        feed.last_read_at = now
    return feed
