"""Every /v1 route of the real URL configuration, as a concrete request, so tests of rules that hold
for every endpoint also cover the endpoints added after them."""

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

SAMPLE_VALUES = {"int": "1", "str": "x", "slug": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000001"}
CONVERTER = re.compile(r"<(?:(?P<converter>\w+):)?\w+>")


@dataclass(frozen=True)
class Route:
    path: str
    method: str
    view_class: type

    @property
    def checks_the_key(self) -> bool:
        """Whether the view authenticates the key (drf-spectacular's schema and docs views do not)."""
        return bool(self.view_class().get_authenticators())


def _walk(patterns, prefix: str = ""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix, entry


def v1_routes() -> list[Route]:
    routes = []
    for prefix, entry in _walk(get_resolver("config.urls").url_patterns):
        if not prefix.startswith("v1/"):
            continue
        assert isinstance(entry.pattern, RoutePattern), f"extend v1_routes() for regex route {entry.pattern}"
        route = CONVERTER.sub(lambda m: SAMPLE_VALUES[m["converter"] or "str"], prefix + str(entry.pattern))
        view_class = entry.callback.cls
        methods = [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view_class, m)]
        routes.append(Route(path=f"/{route}", method=methods[0], view_class=view_class))
    assert {"/v1/me", "/v1/openapi.json", "/v1/docs"} <= {r.path for r in routes}
    return routes


def request(client, route: Route, **extra):
    return getattr(client, route.method)(route.path, **extra)
