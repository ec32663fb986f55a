"""The webhooks of the OpenAPI schema (OpenAPI 3.1 `webhooks`): one entry per event kind, with the
headers a delivery carries and its body typed by the serializers whose output it is (the post and
user representations the apps write into `data`), so receivers can generate types for our events.

Registered in SPECTACULAR_SETTINGS: WEBHOOKS, and `complete_webhooks` first of the postprocessing
hooks. tests/api/test_openapi_webhooks.py checks real deliveries of every event against them.
"""

from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import OpenApiResponse, OpenApiWebhook, extend_schema, extend_schema_field
from rest_framework import serializers

from apps.channels.serializers import ChannelRefSerializer
from apps.core.events import event_types
from apps.posts.events import PostEvent
from apps.posts.serializers import PostContentSerializer, PublicationSerializer
from apps.publishing.newsletter.events import SubscriberEvent
from apps.publishing.newsletter.serializers import SubscriberSerializer
from apps.users.events import UserEvent
from apps.users.serializers import EventAccountSerializer, UserEventDataSerializer
from apps.webhooks.events import WebhookEvent
from apps.webhooks.models import SignatureFormat

# --- `data` of each event kind ------------------------------------------------------------------


class PostEventDataSerializer(serializers.Serializer):
    post = PostContentSerializer(help_text="The full post at the time of the event.")


class PostFailedEventDataSerializer(serializers.Serializer):
    post = PostContentSerializer(allow_null=True, help_text="The post as it is now; null once it was deleted.")
    post_id = serializers.IntegerField(help_text="The post's id, also once it was deleted.")
    publication = PublicationSerializer(help_text="The job that failed for good; `last_error` says why.")


class SubscriberEventDataSerializer(serializers.Serializer):
    # apps/publishing/newsletter/serializers.subscriber_webhook_data writes it.
    subscriber = SubscriberSerializer(help_text="The subscriber as the API shows it, after the change.")
    channel = ChannelRefSerializer(help_text="The newsletter channel whose list it is.")


class _UserEventData(UserEventDataSerializer):
    # `data` of one user.* kind: the user, and those of the users app's optional fields that this
    # kind always sends (apps/users/services.py), as required. (A comment: a docstring would be
    # every subclass's description in the schema.)

    sends: tuple[str, ...] = ()

    def get_fields(self):
        fields = super().get_fields()
        for name in self.sends:
            fields[name].required = True
        return {name: field for name, field in fields.items() if name == "user" or name in self.sends}


class UserCreatedEventDataSerializer(_UserEventData):
    pass


class UserUpdatedEventDataSerializer(_UserEventData):
    sends = ("changed",)


class UserDeletedEventDataSerializer(_UserEventData):
    pass


class UserLoginEventDataSerializer(_UserEventData):
    sends = ("via",)


class UserRoleChangedEventDataSerializer(_UserEventData):
    sends = ("old_role", "new_role")


class WebhookTestEndpointSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()


class WebhookTestEventDataSerializer(serializers.Serializer):
    # The one body no representation writes: apps/webhooks/services.endpoint_send_test builds it.
    message = serializers.CharField()
    endpoint = WebhookTestEndpointSerializer(help_text="The endpoint the test was sent from (and to).")


DATA: dict[str, type[serializers.Serializer]] = {
    PostEvent.UPDATED: PostEventDataSerializer,
    PostEvent.PUBLISHING_PENDING: PostEventDataSerializer,
    PostEvent.PUBLISHED: PostEventDataSerializer,
    PostEvent.UNPUBLISHED: PostEventDataSerializer,
    PostEvent.FAILED: PostFailedEventDataSerializer,
    SubscriberEvent.CONFIRMED: SubscriberEventDataSerializer,
    SubscriberEvent.UNSUBSCRIBED: SubscriberEventDataSerializer,
    UserEvent.CREATED: UserCreatedEventDataSerializer,
    UserEvent.UPDATED: UserUpdatedEventDataSerializer,
    UserEvent.DELETED: UserDeletedEventDataSerializer,
    UserEvent.LOGIN: UserLoginEventDataSerializer,
    UserEvent.ROLE_CHANGED: UserRoleChangedEventDataSerializer,
    WebhookEvent.TEST: WebhookTestEventDataSerializer,
}

# Each event's description, as its app declares it (apps.core.events).
SUMMARIES = {event_type.name: event_type.description for event_type in event_types()}


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
        "account": EventAccountSerializer(help_text="The account (organization) the event belongs to."),
        "data": DATA[kind](),
    }
    return type(f"{_camel(kind)}EventSerializer", (serializers.Serializer,), fields)


# --- Headers ------------------------------------------------------------------------------------

_STANDARD = "When the endpoint uses the Standard Webhooks format: "
_SERVICE = "When the endpoint uses the specification's format (the default): "


def delivery_headers(kind: str) -> list[dict]:
    """The headers of a delivery of `kind`. Those of one signature format name it in
    `x-signature-format`; they are not `required`, since the endpoint's format decides."""

    def header(name: str, description: str, schema: dict, signature_format: str | None = None) -> dict:
        parameter = {"name": name, "in": "header", "required": signature_format is None}
        parameter.update(description=description, schema=schema)
        if signature_format is not None:
            parameter["x-signature-format"] = signature_format
        return parameter

    unix_time = {"type": "string", "pattern": "^[0-9]+$", "example": "1767225600"}
    return [
        header("X-Service-Event", "The event kind, as `event` in the body.", {"type": "string", "const": kind}),
        header(
            "X-Service-Delivery",
            f"{_SERVICE}the delivery's id, the same on every attempt: deduplicate by it.",
            {"type": "string", "format": "uuid"},
            SignatureFormat.SERVICE,
        ),
        header(
            "X-Service-Timestamp",
            f"{_SERVICE}Unix time (seconds) at which the attempt was signed; reject those outside your "
            "replay window (5 minutes, say).",
            unix_time,
            SignatureFormat.SERVICE,
        ),
        header(
            "X-Service-Signature",
            f"{_SERVICE}HMAC-SHA256 of `{{X-Service-Timestamp}}.{{raw body}}` keyed with the endpoint's secret, "
            "lowercase hex; compare in constant time.",
            {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            SignatureFormat.SERVICE,
        ),
        header(
            "webhook-id",
            f"{_STANDARD}the delivery's id, the same on every attempt: deduplicate by it.",
            {"type": "string", "format": "uuid"},
            SignatureFormat.STANDARD,
        ),
        header(
            "webhook-timestamp",
            f"{_STANDARD}Unix time (seconds) at which the attempt was signed.",
            unix_time,
            SignatureFormat.STANDARD,
        ),
        header(
            "webhook-signature",
            f"{_STANDARD}space-separated `v1,<base64 HMAC-SHA256 of {{webhook-id}}.{{webhook-timestamp}}.{{raw "
            "body}>`, two while a rotated secret's overlap lasts; any Standard Webhooks library verifies it.",
            {"type": "string", "pattern": "^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$"},
            SignatureFormat.STANDARD,
        ),
    ]


def complete_webhooks(result, generator, request, public):
    """drf-spectacular postprocessing hook, the first: each webhook's headers (drf-spectacular's
    webhooks take no parameters), and the components only the webhooks use, which drf-spectacular
    registers after it has listed the components, so that the enum hook after this one sees them
    (`PublicationStatusEnum` rather than an enum of its own in the webhooks' posts)."""
    for kind, operations in result.get("webhooks", {}).items():
        operations["post"]["parameters"] = delivery_headers(kind)
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


def _webhook(kind: str) -> OpenApiWebhook:
    return OpenApiWebhook(
        name=kind,
        decorator=extend_schema(
            summary=SUMMARIES[kind],
            description=TO_THE_ONE_ENDPOINT if kind == WebhookEvent.TEST else TO_SUBSCRIBERS,
            request=event_serializer(kind),
            responses={"2XX": ACKNOWLEDGED, 410: GONE},
        ),
    )


WEBHOOKS = [_webhook(event_type.name) for event_type in event_types()]
