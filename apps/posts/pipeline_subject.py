"""Posts as the publishing pipeline (apps/publishing) sees them: the document a job writes, and what
a job's outcome does to its post (called by the pipeline in the transaction that records the
outcome). Registered with the pipeline as its `Subject` by PostsConfig.ready()."""

from datetime import datetime

from django.urls import reverse
from django.utils import timezone

from apps.channels.models import Platform
from apps.core.destinations import Document
from apps.posts.events import PostEvent
from apps.posts.lifecycle import emit, locked_post_or_none, put_state
from apps.posts.models import Post, PublicationStatus
from apps.posts.outcomes import moved
from apps.posts.selectors import SOURCES
from apps.posts.serializers import document, post_webhook_data, publication_webhook_data
from apps.publishing.models import JobAction, PublicationJob
from apps.webhooks.services import event_emit


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


def post_publication_confirmed(*, job: PublicationJob) -> None:
    """The destination has the post: a first publication makes it `published`, dated as the file
    says, and sends `post.published`. Not when the editor has since taken it back (an unpublish
    job follows this one and takes it down)."""
    if job.action != JobAction.PUBLISH:
        return
    post = locked_post_or_none(job.post_id)
    if post is None or post.publication_status == PublicationStatus.PUBLISHED:
        return
    if PublicationJob.objects.filter(post_id=post.pk, action=JobAction.UNPUBLISH, id__gt=job.pk).exists():
        return
    put_state(post, PublicationStatus.PUBLISHED, at=job.published_at or timezone.now())
    emit(PostEvent.PUBLISHED, post)


def post_publication_failed(*, job: PublicationJob) -> None:
    """A job failed for good: `post.failed` with the post (null once deleted) and the job's error."""
    post = Post.objects.select_related("channel__account").filter(pk=job.post_id).first()
    channel = post.channel if post is not None else job.channel
    data = {
        "post": post_webhook_data(post) if post is not None else None,
        "post_id": job.post_id,
        "publication": publication_webhook_data(job),
    }
    event_emit(account=channel.account, kind=PostEvent.FAILED, data=data, post_id=job.post_id)
    if post is not None:
        moved([post.pk])


def post_links(post_id: int) -> list[tuple[str, str]]:
    """The Settings area's page of the post and, for a story's post, of its story: (label, path)."""
    row = Post.objects.filter(pk=post_id).values_list(SOURCES["story"]).first()
    if row is None:
        return []
    [story_id] = row
    links = [("The post", reverse("admin:posts_post_change", args=[post_id]))]
    if story_id is not None:
        links.append(("The story", reverse("admin:stories_story_change", args=[story_id])))
    return links


class PostSubject:
    def document(self, *, post_id: int, action: str, published_at: datetime | None) -> Document | None:
        post = Post.objects.select_related("channel").filter(pk=post_id).first()
        if post is None:
            return None
        return document(post, action=action, published_at=published_at, link=blog_link(post))

    def confirmed(self, *, job) -> None:
        post_publication_confirmed(job=job)

    def failed(self, *, job) -> None:
        post_publication_failed(job=job)

    def links(self, *, job) -> list[tuple[str, str]]:
        return post_links(job.post_id)
