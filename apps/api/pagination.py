import math

from django.conf import settings
from rest_framework import exceptions
from rest_framework.exceptions import ErrorDetail
from rest_framework.pagination import BasePagination
from rest_framework.response import Response


def positive_int_param(query_params, name: str, default: int | None) -> int | None:
    raw = query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise exceptions.ValidationError(
            {name: [ErrorDetail(f"'{name}' must be a positive integer, got {raw!r}.", code="positive_integer")]}
        )
    return value


class PagePagination(BasePagination):
    """The one pagination of every list: `page`, and `per_page` or its shorthand `limit` (the spec
    names both; `per_page` wins when both are given), capped at PAGE_SIZE_MAX; response key `meta`.

    A page past the last returns an empty `data` with the true `meta`; `pages` is 0 for an empty
    list.
    """

    # In order of precedence.
    page_size_params: tuple[str, ...] = ("per_page", "limit")
    meta_key = "meta"

    def paginate_queryset(self, queryset, request, view=None, count: int | None = None):
        """The page's items; `count`, when the caller knows it, spares the count query."""
        params = request.query_params
        self.page = positive_int_param(params, "page", 1)
        self.per_page = settings.PAGE_SIZE_DEFAULT
        for name in reversed(self.page_size_params):
            value = positive_int_param(params, name, None)
            if value is not None:
                self.per_page = value
        self.per_page = min(self.per_page, settings.PAGE_SIZE_MAX)
        self.count = queryset.count() if count is None else count
        offset = (self.page - 1) * self.per_page
        if offset >= self.count:
            # Also keeps absurd page numbers away from SQL's 64-bit OFFSET.
            return []
        return list(queryset[offset : offset + self.per_page])

    @property
    def pages(self) -> int:
        return math.ceil(self.count / self.per_page)

    def get_meta(self) -> dict:
        return {"page": self.page, "pages": self.pages, "count": self.count, "per_page": self.per_page}

    def get_paginated_response(self, data) -> Response:
        return Response({"data": data, self.meta_key: self.get_meta()})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        meta_properties = {key: {"type": "integer", "minimum": 0} for key in self.schema_meta_keys}
        return {
            "type": "object",
            "required": ["data", self.meta_key],
            "properties": {
                "data": schema,
                self.meta_key: {
                    "type": "object",
                    "required": list(self.schema_meta_keys),
                    "properties": meta_properties,
                },
            },
        }

    schema_meta_keys = ("page", "pages", "count", "per_page")

    def get_schema_operation_parameters(self, view) -> list[dict]:
        names = ("page", *self.page_size_params)
        descriptions = {
            "page": "Page number, from 1. A page past the last returns an empty list.",
            "per_page": f"Items per page (default {settings.PAGE_SIZE_DEFAULT}, larger values are capped at "
            f"{settings.PAGE_SIZE_MAX}).",
            "limit": "Shorthand for `per_page`; `per_page` wins when both are given.",
        }
        return [
            {
                "name": name,
                "in": "query",
                "required": False,
                "description": descriptions.get(name, ""),
                "schema": {"type": "integer", "minimum": 1},
            }
            for name in names
        ]
