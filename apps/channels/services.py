"""State changes of channels that are not the admin's plain edits."""

from dataclasses import dataclass

from django.db import transaction

from apps.channels.models import Channel


@dataclass(frozen=True)
class PostsRecount:
    channel_id: int
    title: str
    stored: int
    counted: int

    @property
    def drifted(self) -> bool:
        return self.stored != self.counted


@transaction.atomic
def channel_posts_recount(*, channel_id: int, fix: bool = True) -> PostsRecount | None:
    """Count the channel's posts and compare the number with its stored `posts_count`; with `fix`,
    store the counted number when they differ. None when there is no such channel.

    The channel's row is locked before the posts are counted, and the count is a statement of its
    own, so it sees every post whose transaction added to the stored number before the lock was
    granted; a transaction still adding posts waits for the lock (its trigger updates the same row)
    and adds to the number written here. So a recount beside writers never introduces drift."""
    channel = Channel.objects.select_for_update().only("title", "posts_count").filter(pk=channel_id).first()
    if channel is None:
        return None
    counted = channel.posts.count()
    if fix and counted != channel.posts_count:
        Channel.objects.filter(pk=channel_id).update(posts_count=counted)
    return PostsRecount(channel_id=channel_id, title=channel.title, stored=channel.posts_count, counted=counted)
