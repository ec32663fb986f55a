"""Lean building blocks for response serializers: the representations of the domain apps (their
serializers.py), used by the API's endpoints and by the webhook payloads alike.

DRF resolves every field of every item through its generic machinery (source lookups,
SkipField, PKOnlyObject checks, time zone conversion), and every serializer instance deep-copies
its declared fields (re-running each field's constructor) before it renders anything: on a page
of 100 posts that is thousands of calls per response, and even one post paid ~0.5 ms for the
copies alone. ResponseSerializer renders the same output with plain attribute access, from a
plan built once per class, while the declared fields still describe the OpenAPI schema.
"""

import copy
from collections.abc import Mapping
from datetime import UTC
from functools import cache
from typing import Any

from django.db.models.manager import BaseManager
from django.utils.functional import cached_property
from rest_framework import serializers


class UtcDateTimeField(serializers.DateTimeField):
    """ISO 8601 in UTC with `Z`: what DRF writes with TIME_ZONE = "UTC", in one step. Input is
    parsed by DRF's DateTimeField as usual."""

    def to_representation(self, value) -> str:
        return value.astimezone(UTC).isoformat()[:-6] + "Z"


# Exactly what these fields' to_representation do, without the method call.
_BUILTIN_RENDERERS = {serializers.CharField: str, serializers.IntegerField: int}

# Per serializer class: ((field name, render function or None), ...); None marks a nested
# serializer that needs an instance of its own for each rendering (see _renders_statelessly).
_plans: dict[type, tuple[tuple[str, Any], ...]] = {}


def _renders_statelessly(cls: type) -> bool:
    """True when instances of `cls` render through ResponseSerializer's own to_representation
    and all their nested serializers do too, so one shared plan can render for every request.
    A class that overrides to_representation may keep state on its instance (a per-response
    cache, say), so it gets a fresh instance per rendering, as DRF would give it."""
    return (
        issubclass(cls, ResponseSerializer)
        and cls.to_representation is ResponseSerializer.to_representation
        and all(render is not None for _, render in _plan(cls))
    )


def _list_renderer(child_plan):
    def render(value) -> list:
        items = value.all() if isinstance(value, BaseManager) else value
        return [_render(child_plan, item) for item in items]

    return render


def _field_renderer(field):
    """A function value -> representation that any thread may call, or None."""
    if isinstance(field, serializers.ListSerializer):
        child = type(field.child)
        return _list_renderer(_plan(child)) if _renders_statelessly(child) else None
    if isinstance(field, serializers.BaseSerializer):
        plan = _plan(type(field)) if _renders_statelessly(type(field)) else None
        return None if plan is None else (lambda value: _render(plan, value))
    return _BUILTIN_RENDERERS.get(type(field), field.to_representation)


@cache
def fields_of(cls: type) -> Mapping[str, serializers.Field]:
    """The fields of one instance of `cls`, made once: DRF's public `fields` (bound copies of the
    declared fields, in declaration order). Plain fields render from their declaration alone (no
    request, no context), so these copies serve every later rendering and every reader of the
    class's field list (columns to read, query filters), instead of a deep copy per instance."""
    return cls().fields


def _plan(cls: type) -> tuple[tuple[str, Any], ...]:
    plan = _plans.get(cls)
    if plan is None:
        entries = []
        for field in fields_of(cls).values():
            if field.write_only:
                continue
            if field.source != field.field_name:
                raise TypeError(f"{cls.__name__}.{field.field_name}: a `source` needs DRF's own rendering")
            entries.append((field.field_name, _field_renderer(field)))
        plan = _plans[cls] = tuple(entries)
    return plan


def _render(plan, instance) -> dict:
    data = {}
    for name, render in plan:
        value = getattr(instance, name)
        data[name] = None if value is None else render(value)
    return data


class ResponseSerializer(serializers.Serializer):
    """A read-only serializer whose fields each read the attribute of their own name (no
    `source`, no method fields, nothing read from the context). None renders as null without
    calling the field, as in DRF. The fields are the class's declared ones."""

    @cached_property
    def _own_renderers(self) -> dict:
        """Nested serializers that keep state while rendering get fresh instances for this one,
        made from their declarations as DRF's deep copy would make them (and no other field)."""
        own = {}
        for name, render in _plan(type(self)):
            if render is None:
                # A deep copy of a DRF field is a new, unbound field made from its arguments.
                field = copy.deepcopy(fields_of(type(self))[name])
                field.bind(name, self)
                own[name] = field.to_representation
        return own

    def to_representation(self, instance) -> dict:
        own = self._own_renderers
        data = {}
        for name, render in _plan(type(self)):
            value = getattr(instance, name)
            data[name] = None if value is None else (render or own[name])(value)
        return data
