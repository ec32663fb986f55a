"""The webhooks of the OpenAPI schema (OpenAPI 3.1 `webhooks`): one entry per event kind, with the
headers a delivery carries and its body typed by the serializers whose output it is, so receivers
can generate types for our events. Built from the apps' declarations alone (apps.core.events): each
app describes its events' `data` in its `event_payloads` module, and the app that sends the
deliveries describes their envelope (`account`, the headers); this module names no app.

Registered in SPECTACULAR_SETTINGS: WEBHOOKS, and `complete_webhooks` first of the postprocessing
hooks. tests/api/test_openapi_webhooks.py checks real deliveries of every event against them.
"""

from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import OpenApiResponse, OpenApiWebhook, extend_schema, extend_schema_field
from rest_framework import serializers

from apps.core.events import EventType, envelope, event_types, payload_of

# --- The envelope (apps/webhooks/serializers.delivery_body) ----------------------------------------


def _camel(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.replace(".", "_").split("_"))


def _event_name(kind: str) -> serializers.Field:
    # A field class of its own per kind: DRF re-creates fields from their class, and `const` keeps
    # the kinds out of the shared enum components.
    field_class = type(f"{_camel(kind)}EventName", (serializers.CharField,), {})
    return extend_schema_field({"type": "string", "const": kind})(field_class)(help_text="The event kind.")


def event_serializer(kind: str) -> type[serializers.Serializer]:
    """The delivery body of `kind`: the spec's envelope around the kind's `data`."""
    fields = {
        "event": _event_name(kind),
        "timestamp": serializers.DateTimeField(help_text="When the event happened: ISO 8601, UTC (`Z`)."),
        "account": envelope().account(help_text="The account (organization) the event belongs to."),
        "data": payload_of(kind)(),
    }
    return type(f"{_camel(kind)}EventSerializer", (serializers.Serializer,), fields)


def complete_webhooks(result, generator, request, public):
    """drf-spectacular postprocessing hook, the first: each webhook's headers (drf-spectacular's
    webhooks take no parameters), and the components only the webhooks use, which drf-spectacular
    registers after it has listed the components, so that the enum hook after this one sees them
    (`PublicationStatusEnum` rather than an enum of its own in the webhooks' posts)."""
    for kind, operations in result.get("webhooks", {}).items():
        operations["post"]["parameters"] = envelope().headers(kind)
    result["components"] = generator.registry.build(spectacular_settings.APPEND_COMPONENTS)
    return result


# --- The webhooks -------------------------------------------------------------------------------

ACKNOWLEDGED = OpenApiResponse(
    description="Any 2xx within `WEBHOOK_TIMEOUT` (10 s) acknowledges the delivery; the body is ignored. "
    "Anything else, or no answer, is retried (redirects are not followed)."
)
GONE = OpenApiResponse(description="`410 Gone` disables the endpoint: it gets no more deliveries until enabled.")


TO_SUBSCRIBERS = (
    "A signed `POST` with a JSON body to the URL of each of the account's enabled webhook endpoints that "
    "subscribe to the event (none ticked: all), configured in Settings / Webhooks."
)
TO_THE_ONE_ENDPOINT = "A signed `POST` with a JSON body to the one endpoint whose **Send test event** was pressed."


def _webhook(event_type: EventType) -> OpenApiWebhook:
    return OpenApiWebhook(
        name=event_type.name,
        decorator=extend_schema(
            summary=event_type.description,
            description=TO_SUBSCRIBERS if event_type.subscribable else TO_THE_ONE_ENDPOINT,
            request=event_serializer(event_type.name),
            responses={"2XX": ACKNOWLEDGED, 410: GONE},
        ),
    )


WEBHOOKS = [_webhook(event_type) for event_type in event_types()]
