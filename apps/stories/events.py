"""The story.* events (see apps.core.events): a story reached every destination, or some of them."""

from django.db import models

from apps.core.events import register


class StoryEvent(models.TextChoices):
    PUBLISHED = "story.published", "A story is published on every destination it was sent to"
    PARTIALLY_PUBLISHED = (
        "story.partially_published",
        "A story is published on some destinations and failed for good on at least one",
    )


register(StoryEvent)
