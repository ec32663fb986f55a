"""The webhooks app's own event (see apps.core.events): the test an admin sends from an endpoint's
page. It goes only to that endpoint: no endpoint subscribes to it."""

from django.db import models

from apps.core.events import register


class WebhookEvent(models.TextChoices):
    TEST = "webhook.test", "The test event an admin sends from an endpoint's page, to that endpoint only"


register(WebhookEvent, subscribable=False)
