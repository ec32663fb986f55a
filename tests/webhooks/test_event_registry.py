"""Each app declares its own events (apps.core.events); the webhooks app offers and validates them."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import models

from apps.core.events import describe_envelope, describe_payloads, envelope, event_types, payload_of, register
from apps.posts.event_payloads import PostFailedEventDataSerializer
from apps.posts.events import PostEvent
from apps.publishing.newsletter.events import SubscriberEvent
from apps.stories.events import StoryEvent
from apps.users.events import UserEvent
from apps.webhooks.event_payloads import delivery_headers
from apps.webhooks.events import WebhookEvent
from apps.webhooks.models import SUBSCRIBABLE_EVENTS, Event, EventKind
from apps.webhooks.serializers import EventAccountSerializer


def test_every_app_declared_event_is_known_to_the_webhooks_app_in_a_fixed_order():
    declared = [*PostEvent.values, *StoryEvent.values, *SubscriberEvent.values, *UserEvent.values, *WebhookEvent.values]
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


def test_every_declared_event_has_the_data_its_app_describes_in_its_event_payloads():
    assert all(payload_of(event.name) is not None for event in event_types())
    assert payload_of(PostEvent.FAILED) is PostFailedEventDataSerializer


def test_the_envelope_of_every_delivery_is_the_one_the_webhooks_app_describes():
    assert envelope().account is EventAccountSerializer
    assert envelope().headers is delivery_headers


def test_an_events_data_described_twice_is_refused():
    payload_of(PostEvent.PUBLISHED)  # the apps' own descriptions are read first
    with pytest.raises(ImproperlyConfigured, match=r"post\.published"):
        describe_payloads({PostEvent.PUBLISHED: PostFailedEventDataSerializer})


def test_a_second_envelope_is_refused():
    envelope()
    with pytest.raises(ImproperlyConfigured, match="envelope"):
        describe_envelope(envelope())
