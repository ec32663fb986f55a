"""How an event looks to a receiver: the delivery body. `data` comes from the app whose change it
reports (posts.serializers, users.serializers)."""

from datetime import datetime

from django.core.serializers.json import DjangoJSONEncoder
from rest_framework import serializers

from apps.accounts.models import Account
from apps.core.json import compact_json

_ENCODER = DjangoJSONEncoder(ensure_ascii=False, separators=(",", ":"))


# `account` of every delivery body, as delivery_body writes it. (A comment: a docstring would be its
# description in the OpenAPI schema.)
class EventAccountSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


def delivery_body(kind: str, account: Account, data: dict, at: datetime) -> str:
    """The body of every delivery of an event (the spec's delivery body): the same bytes on every attempt."""
    payload = {
        "event": kind,
        "timestamp": at.isoformat().replace("+00:00", "Z"),
        "account": {"id": account.id, "name": account.name},
        "data": data,
    }
    # orjson where it writes what json.dumps would: the content plan writes thousands of bodies.
    body = compact_json(payload, default=_ENCODER.default)
    return body.decode() if body is not None else _ENCODER.encode(payload)
