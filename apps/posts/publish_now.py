"""The Settings area's "Publish now" on a post: what it does there, in the words of the post's
channel, whether it may be pressed now, and pressing it. A channel that publishes through a
destination (a repository, a social network, a mailing list...) is described by its destination (its DestinationKind),
so adding a destination changes nothing here."""

from dataclasses import dataclass

from apps.channels.models import Channel
from apps.core.destinations import kind_for
from apps.core.errors import DomainError, NotFound
from apps.posts.editor_status import post_publish_now
from apps.posts.lifecycle import POST_NOT_FOUND
from apps.posts.models import Post, PublicationStatus

BLOG = "The post goes on the blog now."
# The specification's publishing workflow for api channels: the external system publishes the post.
API = (
    "The post is handed to the external system now: it becomes publishing pending (the post.publishing_pending "
    "event is sent), and is published when that system confirms it through the publish endpoint."
)
# Statuses in which Publish now is not offered: the post is published, or already handed over.
DONE = frozenset({PublicationStatus.PUBLISHED, PublicationStatus.PUBLISHING_PENDING})


@dataclass(frozen=True)
class PublishNow:
    # What pressing it does, for this post's channel.
    does: str
    # Why it cannot be pressed now (the destination is not set up), as a sentence; "" when it can.
    unavailable: str = ""


def channel_publish_now(channel: Channel) -> PublishNow:
    """What Publish now does on a post of the channel, and whether it can now."""
    if not channel.publishes_through_destination:
        return PublishNow(API if channel.publishes_externally else BLOG)
    kind = kind_for(channel.platform)
    if kind is None:
        name = channel.get_platform_display()
        return PublishNow("", f"{name} channels cannot publish on this server: no {name} destination is installed.")
    return PublishNow(kind.publishes, kind.unready(channel.pk))


def post_publish_now_offer(post: Post) -> PublishNow | None:
    """Publish now on this post's page: None where it is not offered (published, or handed over)."""
    if post.publication_status in DONE:
        return None
    return channel_publish_now(post.channel)


def publish_now(*, post_id: int) -> str:
    """Press Publish now on a post (the post's page and the list's action): refused where it is not
    offered or cannot be pressed; otherwise what it did, as a sentence."""
    post = Post.objects.select_related("channel").filter(pk=post_id).first()
    if post is None:
        raise NotFound(POST_NOT_FOUND)
    offer = post_publish_now_offer(post)
    if post.publication_status == PublicationStatus.PUBLISHED:
        raise DomainError("This post is already published.", code="invalid_status")
    if offer is None:
        raise DomainError("This post already awaits the external system's confirmation.", code="invalid_status")
    if offer.unavailable:
        raise DomainError(offer.unavailable, code="not_set_up")
    post_publish_now(post_id=post_id)
    return offer.does
