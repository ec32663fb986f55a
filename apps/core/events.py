"""The registry of the events the service reports to the outside (as webhooks). As pretix's apps
do, each app declares its own events in its `events` module, and the webhooks app reads them here:

    class PostEvent(models.TextChoices):
        PUBLISHED = "post.published", "A post was published"

    register(PostEvent)

A member is the event's name (a str: the `kind` a service emits, the body's `event`); its label is
the description the admin and the API's documentation show. An `events` module imports nothing
but Django and this module: the registry imports it while the models are being loaded.

What a delivery of each event carries is declared apart, in the app's `event_payloads` module (it
imports serializers, hence models): `describe_payloads` names the serializer of each kind's `data`,
and the app that sends the deliveries names the envelope around it with `describe_envelope`. The
OpenAPI schema's webhooks are built from these declarations alone (apps/api/webhook_schema.py)."""

from collections.abc import Callable, Mapping
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


@dataclass(frozen=True)
class Envelope:
    """What every delivery carries around an event's `data`: the serializer of its `account`, and
    the OpenAPI header parameters of a delivery of a kind."""

    account: type
    headers: Callable[[str], list[dict]]


_declared: dict[str, EventType] = {}
_discovery = {"done": False}
_payloads: dict[str, type] = {}
_envelope: list[Envelope] = []
_payload_discovery = {"done": False}


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


def describe_payloads(payloads: Mapping[str, type]) -> None:
    """Declare the serializer of the `data` of each of an app's event kinds (from its `event_payloads`)."""
    for kind, serializer in payloads.items():
        kind = str(kind)
        if kind in _payloads:
            raise ImproperlyConfigured(f"The data of the event {kind!r} is described twice.")
        _payloads[kind] = serializer


def describe_envelope(envelope: Envelope) -> None:
    """Declare the envelope of every delivery (from the `event_payloads` of the app that sends them)."""
    if _envelope:
        raise ImproperlyConfigured("The envelope of the events' deliveries is described twice.")
    _envelope.append(envelope)


def payload_of(kind: str) -> type:
    """The serializer of the `data` of `kind`, as its app describes it."""
    _discover_payloads()
    try:
        return _payloads[kind]
    except KeyError:
        raise ImproperlyConfigured(f"No app's event_payloads describes the data of the event {kind!r}.") from None


def envelope() -> Envelope:
    _discover_payloads()
    if not _envelope:
        raise ImproperlyConfigured("No app's event_payloads describes the envelope of the events' deliveries.")
    return _envelope[0]


def _discover_payloads() -> None:
    # Apart from the events: an `event_payloads` module imports serializers, hence models, so it
    # can be read only once the apps are loaded (the schema is built long after).
    if not _payload_discovery["done"]:
        _payload_discovery["done"] = True
        autodiscover_modules("event_payloads")
