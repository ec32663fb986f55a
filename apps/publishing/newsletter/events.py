"""The subscriber.* events (see apps.core.events): a newsletter's subscriber confirmed (or was
added as having opted in), or left."""

from django.db import models

from apps.core.events import register


class SubscriberEvent(models.TextChoices):
    CONFIRMED = (
        "subscriber.confirmed",
        "A newsletter's subscriber confirmed, or was added as having opted in elsewhere",
    )
    UNSUBSCRIBED = (
        "subscriber.unsubscribed",
        "A newsletter's subscriber unsubscribed (one click in their mail client, or the unsubscribe page's button)",
    )


register(SubscriberEvent)
