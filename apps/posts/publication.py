"""Posts as the publishing pipeline sees them (apps/publishing): the document a job writes, and
what a job's outcome does to its post. Registered with the pipeline by PostsConfig.ready()."""

from datetime import datetime

from apps.posts import services
from apps.posts.models import Post
from apps.publishing.destinations import Document


class PostSubject:
    def document(self, *, post_id: int, action: str, published_at: datetime | None) -> Document | None:
        post = Post.objects.filter(pk=post_id).first()
        if post is None:
            return None
        return Document(
            post_id=post.pk,
            title=post.title,
            slug=post.slug,
            body=post.body,
            # A first publication is dated by its job (the same on every attempt); an update keeps
            # the post's date and says when it changed.
            published_at=post.published_at or published_at or post.updated_at,
            tags=list(post.tags.order_by("name").values_list("name", flat=True)),
            description=post.meta_description or post.teaser or None,
            updated_at=post.updated_at if action == "update" else None,
        )

    def confirmed(self, *, job) -> None:
        services.post_publication_confirmed(job=job)

    def failed(self, *, job) -> None:
        services.post_publication_failed(job=job)
