"""Each app declares its own events (apps.core.events); the webhooks app offers and validates them."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import models

from apps.core.events import event_types, register
from apps.posts.events import PostEvent
from apps.publishing.newsletter.events import SubscriberEvent
from apps.users.events import UserEvent
from apps.webhooks.events import WebhookEvent
from apps.webhooks.models import SUBSCRIBABLE_EVENTS, Event, EventKind


def test_every_app_declared_event_is_known_to_the_webhooks_app_in_a_fixed_order():
    declared = [*PostEvent.values, *SubscriberEvent.values, *UserEvent.values, *WebhookEvent.values]
    assert [event.name for event in event_types()] == declared
    assert EventKind.values == declared
    assert Event._meta.get_field("kind").choices == EventKind.choices


def test_endpoints_subscribe_to_every_event_but_the_test_one():
    assert [name for name in EventKind.values if name != WebhookEvent.TEST] == SUBSCRIBABLE_EVENTS


def test_the_old_names_are_the_apps_own_events():
    assert EventKind.POST_PUBLISHED == PostEvent.PUBLISHED == "post.published"
    assert EventKind.SUBSCRIBER_UNSUBSCRIBED == SubscriberEvent.UNSUBSCRIBED
    assert EventKind.USER_ROLE_CHANGED == UserEvent.ROLE_CHANGED
    assert EventKind.WEBHOOK_TEST == WebhookEvent.TEST


def test_an_event_carries_the_description_its_app_gave_it():
    descriptions = {event.name: event.description for event in event_types()}
    assert descriptions["post.published"] == "A post was published"


def test_an_event_declared_twice_is_refused():
    class Again(models.TextChoices):
        PUBLISHED = "post.published", "Published again"

    with pytest.raises(ImproperlyConfigured, match=r"post\.published"):
        register(Again)
