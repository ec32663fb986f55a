"""The fast rendering path writes exactly what DRF's own machinery writes."""

import dataclasses
import decimal
import threading
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone
from types import SimpleNamespace

import pytest
from django.utils.translation import gettext_lazy
from rest_framework import renderers, serializers
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from apps.api.rendering import JSONRenderer
from apps.core.serializers import ResponseSerializer, UtcDateTimeField

# --- the renderer ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    y: int


CASES = {
    "plain": {"data": [{"id": 1, "title": "Hello", "ok": True, "none": None}], "meta": {"page": 1}},
    "unicode": {"text": "Grüße, 東京, emoji 🚀, é"},
    "controls and quotes": {"s": 'tab\t nl\n cr\r bs\b ff\f nul\x00 us\x1f del\x7f "q" back\\slash /'},
    "line separators": {"s": "a\u2028b\u2029c"},
    "drf containers": ReturnDict({"items": ReturnList([1, 2], serializer=None)}, serializer=None),
    "datetimes": {
        "utc": datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        "whole second": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "offset": datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2))),
        "naive": datetime(2026, 1, 2, 3, 4, 5),
        "date": date(2026, 1, 2),
        "time": time(3, 4, 5, 6),
    },
    "other types": {
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "decimal": decimal.Decimal("1.50"),
        "timedelta": timedelta(minutes=90),
        "lazy": gettext_lazy("Resource not found."),
        "bytes": b"raw",
        "set": {3},
        "tuple": (1, "a"),
    },
    "integer keys": {1: "one", 2: {3: "three"}},
    "big integer": {"n": 2**70},
    "empty": {},
}


@pytest.mark.parametrize("data", list(CASES.values()), ids=list(CASES))
def test_renderer_writes_the_same_bytes_as_drf(data):
    expected = renderers.JSONRenderer().render(data, "application/json", {})
    assert JSONRenderer().render(data, "application/json", {}) == expected


def test_renderer_follows_an_indent_asked_for_in_accept():
    data = {"a": [1, 2]}
    expected = renderers.JSONRenderer().render(data, "application/json; indent=2", {})
    assert b"\n" in expected
    assert JSONRenderer().render(data, "application/json; indent=2", {}) == expected


def test_renderer_refuses_a_type_drf_refuses():
    for renderer in (renderers.JSONRenderer(), JSONRenderer()):
        with pytest.raises(TypeError, match="Point"):
            renderer.render({"point": Point(1, 2)})


def test_renderer_renders_none_as_an_empty_body():
    assert JSONRenderer().render(None) == b""


def test_renderer_writes_null_for_a_float_drf_would_refuse():
    # The documented difference: DRF fails on NaN (a 500), orjson writes null.
    with pytest.raises(ValueError):
        renderers.JSONRenderer().render({"n": float("nan")})
    assert JSONRenderer().render({"n": float("nan")}) == b'{"n":null}'


# --- the response serializers ---------------------------------------------------------------------


class OwnerSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class BoxSerializer(ResponseSerializer):
    """Like the channel form: a nested serializer that caches its rendering on its instance."""

    id = serializers.IntegerField()
    label = serializers.CharField()
    owner = OwnerSerializer(allow_null=True)

    renders = 0

    def to_representation(self, instance):
        if getattr(self, "_last", (None,))[0] is not instance:
            type(self).renders += 1
            self._last = (instance, super().to_representation(instance))
        return self._last[1]


class ItemSerializer(ResponseSerializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=[("a", "A"), ("b", "B")])
    at = UtcDateTimeField()
    box = BoxSerializer()
    tags = OwnerSerializer(many=True)


def make_item(n: int, box) -> SimpleNamespace:
    tags = [SimpleNamespace(id=t, name=f"tag {t}") for t in range(n % 3)]
    return SimpleNamespace(
        id=n, kind="ab"[n % 2], at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n), box=box, tags=tags
    )


def expected_item(item) -> dict:
    box = item.box
    owner = None if box.owner is None else {"id": box.owner.id, "name": box.owner.name}
    return {
        "id": item.id,
        "kind": item.kind,
        "at": serializers.DateTimeField().to_representation(item.at),
        "box": {"id": box.id, "label": box.label, "owner": owner},
        "tags": [{"id": tag.id, "name": tag.name} for tag in item.tags],
    }


def test_response_serializer_renders_like_drf():
    box = SimpleNamespace(id=7, label="Blog", owner=SimpleNamespace(id=1, name="Ann"))
    items = [make_item(n, box) for n in range(5)]
    assert ItemSerializer(items, many=True).data == [expected_item(item) for item in items]
    ownerless = SimpleNamespace(id=8, label="Feed", owner=None)
    assert ItemSerializer(make_item(1, ownerless)).data["box"]["owner"] is None


def test_nested_serializer_state_lasts_one_rendering():
    box = SimpleNamespace(id=7, label="Blog", owner=None)
    BoxSerializer.renders = 0
    assert len(ItemSerializer([make_item(n, box) for n in range(10)], many=True).data) == 10
    assert BoxSerializer.renders == 1  # the shared box is rendered once per response
    box.label = "Renamed"
    assert ItemSerializer(make_item(1, box)).data["box"]["label"] == "Renamed"


def test_response_serializer_renders_correctly_from_many_threads():
    boxes = [SimpleNamespace(id=b, label=f"box {b}", owner=SimpleNamespace(id=b, name=f"o{b}")) for b in range(8)]
    failures = []
    barrier = threading.Barrier(len(boxes))

    def render(box):
        barrier.wait()
        for _ in range(200):
            items = [make_item(n, box) for n in range(5)]
            if ItemSerializer(items, many=True).data != [expected_item(item) for item in items]:
                failures.append(box.id)

    threads = [threading.Thread(target=render, args=(box,)) for box in boxes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_response_serializer_refuses_a_source():
    class Renamed(ResponseSerializer):
        title = serializers.CharField(source="name")

    with pytest.raises(TypeError, match="source"):
        Renamed(SimpleNamespace(name="x")).data  # noqa: B018


def test_response_serializer_fields_still_describe_the_schema():
    assert list(ItemSerializer().fields) == ["id", "kind", "at", "box", "tags"]


# --- the content negotiation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "accept",
    [
        None,
        "",
        "*/*",
        "application/json",
        "application/json; indent=2",
        "application/*",
        "text/html",
        "text/html, application/json;q=0.9",
        "application/json;q=0",
        "APPLICATION/JSON",
        " */*",
    ],
)
@pytest.mark.parametrize("query", ["", "format=json", "format=api", "a=format", "page=2"])
def test_the_negotiation_chooses_what_drf_s_own_chooses(accept, query):
    from rest_framework.exceptions import NotAcceptable
    from rest_framework.negotiation import DefaultContentNegotiation
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from apps.api.rendering import ContentNegotiation

    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(f"/v1/me?{query}", **headers))
    outcomes = []
    for negotiation in (ContentNegotiation(), DefaultContentNegotiation()):
        try:
            renderer, media_type = negotiation.select_renderer(request, [JSONRenderer()])
            outcomes.append((type(renderer), media_type))
        except (NotAcceptable, Exception) as exc:  # Http404 for an unknown format
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]
