"""The registry of the events the service reports to the outside (as webhooks). As pretix's apps
do, each app declares its own events in its `events` module, and the webhooks app reads them here:

    class PostEvent(models.TextChoices):
        PUBLISHED = "post.published", "A post was published"

    register(PostEvent)

A member is the event's name (a str: the `kind` a service emits, the body's `event`); its label is
the description the admin and the API's documentation show. An `events` module imports nothing
but Django and this module: the registry imports it while the models are being loaded."""

from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.utils.module_loading import autodiscover_modules


@dataclass(frozen=True)
class EventType:
    name: str
    description: str
    # Whether an endpoint may subscribe to it (webhook.test goes only to the endpoint it is sent from).
    subscribable: bool = True


_declared: dict[str, EventType] = {}
_discovery = {"done": False}


def register(kinds: type[models.TextChoices], *, subscribable: bool = True) -> type[models.TextChoices]:
    """Declare an app's events (a TextChoices of names and descriptions)."""
    for kind in kinds:
        if kind.value in _declared:
            raise ImproperlyConfigured(f"The event {kind.value!r} is declared twice.")
        _declared[kind.value] = EventType(name=kind.value, description=kind.label, subscribable=subscribable)
    return kinds


def event_types() -> list[EventType]:
    """Every declared event: by family (the name's part before the dot), then as its app declares
    them. So the order (of the admin's boxes, the schema's webhooks, an endpoint's stored events)
    does not depend on INSTALLED_APPS' order."""
    _discover()
    return sorted(_declared.values(), key=lambda event_type: event_type.name.split(".")[0])


def _discover() -> None:
    # Autodiscovery rather than a list in the webhooks app: the apps that own events are its
    # siblings, which it may not import (the import contracts), and an app's new events reach it
    # by being declared, with no second list to keep in step. On the first read rather than in
    # WebhooksConfig.ready(): the webhooks models need the names (Event.kind's choices) when
    # their classes are built, which is before any ready() runs, once the app configs exist.
    if not _discovery["done"]:
        _discovery["done"] = True
        autodiscover_modules("events")
