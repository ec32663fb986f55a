"""Posts as the publishing pipeline (apps/publishing) sees them: the document a job writes, and what
a job's outcome does to its post (called by the pipeline in the transaction that records the
outcome). Registered with the pipeline as its `Subject` by PostsConfig.ready()."""

from collections import defaultdict
from datetime import datetime

from django.db.models import Case, DateTimeField, Value, When
from django.urls import reverse
from django.utils import timezone

from apps.channels.models import Platform
from apps.core.destinations import Document
from apps.posts.events import PostEvent
from apps.posts.lifecycle import state_values
from apps.posts.models import Post, PublicationStatus
from apps.posts.outcomes import moved
from apps.posts.selectors import SOURCES, posts_images
from apps.posts.serializers import document, post_webhook_data, posts_webhook_data, publication_webhook_data
from apps.publishing.models import JobAction, PublicationJob
from apps.webhooks.models import EventInput
from apps.webhooks.services import event_emit, events_emit


def blog_link(post: Post) -> str | None:
    """The page of the post on the account's blog: its own where it is a blog's post, else (a
    social share of an article) the published post of the same slug on one of the account's blogs."""
    return blog_links([post])[post.pk]


def blog_links(posts: list[Post]) -> dict[int, str | None]:
    """blog_link of each of the posts (their channels loaded): the articles of those that are not a
    blog's own looked up in one query."""
    links = {post.pk: post.channel.post_url(post.slug) for post in posts if post.channel.has_public_site}
    shares = [post for post in posts if post.pk not in links]
    if not shares:
        return links
    articles = (
        Post.objects.select_related("channel")
        .filter(
            channel__account_id__in={post.channel.account_id for post in shares},
            channel__platform=Platform.BLOG,
            slug__in={post.slug for post in shares},
            publication_status=PublicationStatus.PUBLISHED,
        )
        .order_by("-published_at", "-id")
    )
    latest: dict[tuple[int, str], Post] = {}
    for article in articles:
        latest.setdefault((article.channel.account_id, article.slug), article)
    for post in shares:
        article = latest.get((post.channel.account_id, post.slug))
        links[post.pk] = article.channel.post_url(article.slug) if article is not None else None
    return links


def posts_publications_confirmed(*, jobs: list[PublicationJob]) -> list[int]:
    """The destination has the posts of these jobs (one job's, or a batch's recorded in one
    transaction): each first publication makes its post `published`, dated as its job says, and
    sends `post.published`; for the batch, one lock of the posts, one UPDATE and one insert of the
    events. Not for a post published already, nor one the editor has since taken back (an
    unpublish job follows and takes it down). Returns the posts published."""
    firsts = {job.post_id: job for job in jobs if job.action == JobAction.PUBLISH}
    if not firsts:
        return []
    locked = list(
        Post.objects.select_for_update(of=("self",))
        .filter(pk__in=list(firsts))
        .exclude(publication_status=PublicationStatus.PUBLISHED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    unpublishes = PublicationJob.objects.filter(post_id__in=locked, action=JobAction.UNPUBLISH)
    taken_back = {post for post, job_id in unpublishes.values_list("post_id", "id") if job_id > firsts[post].pk}
    post_ids = [pk for pk in locked if pk not in taken_back]
    if not post_ids:
        return []
    now = timezone.now()
    dated = Case(
        *(When(pk=pk, then=Value(firsts[pk].published_at or now)) for pk in post_ids), output_field=DateTimeField()
    )
    values = state_values(PublicationStatus.PUBLISHED) | {"published_at": dated, "updated_at": now}
    Post.objects.filter(pk__in=post_ids).update(**values)
    moved(post_ids)
    events_emit(
        kind=PostEvent.PUBLISHED,
        items=[
            EventInput(account=channel.account, data={"post": data}, post_id=pk)
            for channel, pk, data in posts_webhook_data(post_ids)
        ],
    )
    return post_ids


def post_publication_confirmed(*, job: PublicationJob) -> None:
    """One job's confirmation: a batch of one."""
    posts_publications_confirmed(jobs=[job])


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


def documents(wanted: list[tuple[int, str, datetime | None]]) -> list[Document | None]:
    """The documents of (post id, action, publication date) in order (None for a post that no
    longer exists): a batch's posts, tags, images and blog links read in one query each."""
    posts = Post.objects.select_related("channel").filter(pk__in={post_id for post_id, _, _ in wanted})
    posts = {post.pk: post for post in posts}
    if not posts:
        return [None] * len(wanted)
    tags = defaultdict(list)
    named = Post.tags.through.objects.filter(post_id__in=list(posts)).order_by("post_id", "tag__name")
    for post_id, name in named.values_list("post_id", "tag__name"):
        tags[post_id].append(name)
    images = posts_images(list(posts.values()))
    links = blog_links(list(posts.values()))
    return [
        document(
            post,
            action=action,
            published_at=published_at,
            link=links[post_id],
            tags=tags[post_id],
            images=images[post_id],
        )
        if (post := posts.get(post_id)) is not None
        else None
        for post_id, action, published_at in wanted
    ]


class PostSubject:
    def document(self, *, post_id: int, action: str, published_at: datetime | None) -> Document | None:
        [found] = documents([(post_id, action, published_at)])
        return found

    def documents(self, *, wanted: list[tuple[int, str, datetime | None]]) -> list[Document | None]:
        return documents(wanted)

    def confirmed(self, *, jobs: list[PublicationJob]) -> None:
        posts_publications_confirmed(jobs=jobs)

    def failed(self, *, job) -> None:
        post_publication_failed(job=job)

    def links(self, *, job) -> list[tuple[str, str]]:
        return post_links(job.post_id)
