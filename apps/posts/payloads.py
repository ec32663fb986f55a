"""`data.post` of webhook deliveries: posts as the database holds them at the time of the event,
in the same field forms as the API, for one post or a whole batch at a fixed number of queries."""

from collections.abc import Iterable

from apps.channels.models import Channel
from apps.posts.models import Post


def posts_webhook_data(post_ids: Iterable[int]) -> list[tuple[Post, dict]]:
    from apps.posts.api import PostContentSerializer

    posts = list(Post.objects.with_content().filter(pk__in=list(post_ids)).order_by("id"))
    channels = Channel.objects.with_posts_count().select_related("account").in_bulk({p.channel_id for p in posts})
    for post in posts:
        post.channel = channels[post.channel_id]
    return [(post, dict(PostContentSerializer(post).data)) for post in posts]


def post_webhook_data(post: Post) -> dict:
    [(_, data)] = posts_webhook_data([post.pk])
    return data
