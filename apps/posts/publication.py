"""Posts as the publishing pipeline sees them (apps/publishing): the document a job writes, and
what a job's outcome does to its post. Registered with the pipeline by PostsConfig.ready()."""

from datetime import datetime

from apps.channels.models import Platform
from apps.core.destinations import Document
from apps.posts import services
from apps.posts.models import Post, PublicationStatus
from apps.posts.serializers import document


def blog_link(post: Post) -> str | None:
    """The page of the post on the account's blog: its own where it is a blog's post, else (a
    social share of an article) the published post of the same slug on one of the account's blogs."""
    if post.channel.has_public_site:
        return post.channel.post_url(post.slug)
    article = (
        Post.objects.select_related("channel")
        .filter(
            channel__account_id=post.channel.account_id,
            channel__platform=Platform.BLOG,
            slug=post.slug,
            publication_status=PublicationStatus.PUBLISHED,
        )
        .order_by("-published_at", "-id")
        .first()
    )
    return article.channel.post_url(article.slug) if article is not None else None


class PostSubject:
    def document(self, *, post_id: int, action: str, published_at: datetime | None) -> Document | None:
        post = Post.objects.select_related("channel").filter(pk=post_id).first()
        if post is None:
            return None
        return document(post, action=action, published_at=published_at, link=blog_link(post))

    def confirmed(self, *, job) -> None:
        services.post_publication_confirmed(job=job)

    def failed(self, *, job) -> None:
        services.post_publication_failed(job=job)
