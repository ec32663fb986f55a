"""The post.* events (see apps.core.events): a post's content or publication changed."""

from django.db import models

from apps.core.events import register


class PostEvent(models.TextChoices):
    UPDATED = "post.updated", "A published post's content changed"
    PUBLISHING_PENDING = (
        "post.publishing_pending",
        "A post of an api channel reached its time and awaits the publish call",
    )
    PUBLISHED = "post.published", "A post was published"
    UNPUBLISHED = "post.unpublished", "A published post was taken back to draft"
    # A publication job on a channel's destination failed for good; data.publication says why.
    FAILED = "post.failed", "A post's publication job on its channel's destination failed for good"


register(PostEvent)
