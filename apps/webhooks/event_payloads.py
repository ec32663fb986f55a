"""What this app's deliveries carry, described for the OpenAPI schema's webhooks (apps.core.events):
the `data` of webhook.test, and the envelope of every delivery, which this app writes
(serializers.delivery_body) and signs (transport.py): its `account`, and its headers in each
signature format."""

from rest_framework import serializers

from apps.core.events import Envelope, describe_envelope, describe_payloads
from apps.webhooks.events import WebhookEvent
from apps.webhooks.models import SignatureFormat
from apps.webhooks.serializers import EventAccountSerializer


class WebhookTestEndpointSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()


class WebhookTestEventDataSerializer(serializers.Serializer):
    # The one body no representation writes: apps/webhooks/services.endpoint_send_test builds it.
    message = serializers.CharField()
    endpoint = WebhookTestEndpointSerializer(help_text="The endpoint the test was sent from (and to).")


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


describe_payloads({WebhookEvent.TEST: WebhookTestEventDataSerializer})
describe_envelope(Envelope(account=EventAccountSerializer, headers=delivery_headers))
