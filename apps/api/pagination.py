import hashlib
import math
from collections.abc import Callable

from django.conf import settings
from django.core import signing
from rest_framework import exceptions
from rest_framework.exceptions import ErrorDetail
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from apps.core import paging
from apps.core.paging import Window


def _invalid(name: str, message: str, code: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({name: [ErrorDetail(message, code=code)]})


def positive_int_param(query_params, name: str, default: int | None) -> int | None:
    raw = query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise _invalid(name, f"'{name}' must be a positive integer, got {raw!r}.", "positive_integer")
    return value


def _object_schema(properties: dict, description: str = "") -> dict:
    schema = {"type": "object", "required": list(properties), "properties": properties}
    return {**schema, "description": description} if description else schema


class PagePagination(BasePagination):
    """The one pagination of every list: `page`, and `per_page` or its shorthand `limit` (the spec
    names both; `per_page` wins when both are given), capped at PAGE_SIZE_MAX; response key `meta`.

    A page past the last returns an empty `data` with the true `meta`; `pages` is 0 for an empty
    list.
    """

    # In order of precedence.
    page_size_params: tuple[str, ...] = ("per_page", "limit")
    meta_key = "meta"

    def window(self, request) -> Window:
        """The rows the request asks for (400 for a bad `page` or `per_page`)."""
        params = request.query_params
        self.page = positive_int_param(params, "page", 1)
        self.per_page = self.page_size(params)
        self.offset = (self.page - 1) * self.per_page
        return Window(size=self.per_page, offset=self.offset)

    def settle(self, rows: list, count: int) -> list:
        """The page of `rows` (what paging.rows read for the window) in a list of `count` items,
        noted for the response's `meta`."""
        self.count = count
        return rows

    def paginate_queryset(self, queryset, request, view=None, count: int | None = None):
        """The page's items; `count`, when the caller knows it, spares the count query."""
        window = self.window(request)
        count = self.count_of(queryset, count)
        return self.settle(paging.rows(queryset, window, count), count)

    @staticmethod
    def count_of(queryset, count: int | None) -> int:
        return queryset.count() if count is None else count

    def page_size(self, params) -> int:
        per_page = settings.PAGE_SIZE_DEFAULT
        for name in reversed(self.page_size_params):
            value = positive_int_param(params, name, None)
            if value is not None:
                per_page = value
        return min(per_page, settings.PAGE_SIZE_MAX)

    @property
    def pages(self) -> int:
        return math.ceil(self.count / self.per_page)

    def get_meta(self) -> dict:
        return {"page": self.page, "pages": self.pages, "count": self.count, "per_page": self.per_page}

    def get_paginated_response(self, data) -> Response:
        return Response({"data": data, self.meta_key: self.get_meta()})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["data", self.meta_key],
            "properties": {"data": schema, self.meta_key: self.meta_schema()},
        }

    schema_meta_keys = ("page", "pages", "count", "per_page")

    def meta_schema(self) -> dict:
        return _object_schema({key: {"type": "integer", "minimum": 0} for key in self.schema_meta_keys})

    def get_schema_operation_parameters(self, view) -> list[dict]:
        names = ("page", *self.page_size_params)
        return [
            {
                "name": name,
                "in": "query",
                "required": False,
                "description": self.descriptions.get(name, ""),
                "schema": {"type": "integer", "minimum": 1},
            }
            for name in names
        ]

    descriptions = {
        "page": "Page number, from 1. A page past the last returns an empty list.",
        "per_page": f"Items per page (default {settings.PAGE_SIZE_DEFAULT}, larger values are capped at "
        f"{settings.PAGE_SIZE_MAX}).",
        "limit": "Shorthand for `per_page`; `per_page` wins when both are given.",
    }


_cursor_signer = signing.Signer(salt="cps.pagination.cursor")


def _list_digest(list_key: str) -> str:
    return hashlib.sha256(list_key.encode()).hexdigest()[:16]


def cursor_after(list_key: str, item_id: int) -> str:
    """The cursor of the position after the item `item_id` in the list that `list_key` names."""
    return _cursor_signer.sign_object([_list_digest(list_key), item_id])


class CursorPagePagination(PagePagination):
    """PagePagination plus a cursor, for full syncs of long lists ordered by id (ascending).

    `meta.next_cursor` names the position after the page's last item, or is null when nothing
    follows. Given as `?cursor=`, it returns the next `per_page` items after that position, read
    through the index from there (`id > position`), so a page costs the same at any depth, and a
    sync sees no item twice, however many are created or deleted meanwhile (created ones come at
    its end). The cursor is signed (SECRET_KEY) and names the list it belongs to (the
    `list_key` of the view: its channel and filters): a cursor altered, or given to another list,
    is a 400. A cursor response has no `page` and `pages`; `page` and `cursor` together are a 400.
    """

    cursor_param = "cursor"

    def window(self, request, *, list_key: str = "") -> Window:
        """`list_key` names the list (a cursor of another list is refused)."""
        params = request.query_params
        raw = params.get(self.cursor_param, "")
        self.list_key = list_key
        self.next_cursor = None
        if not raw:
            return super().window(request)
        if params.get("page", "") != "":
            raise _invalid("cursor", "Give either 'page' or 'cursor', not both.", "cursor_with_page")
        after = self.position(raw)
        self.page = None
        self.per_page = self.page_size(params)
        return Window(size=self.per_page, after=after)

    def settle(self, rows: list, count: int, *, id_of: Callable) -> list:
        """`id_of(item)` is the id of one of the rows."""
        self.count = count
        if self.page is None:
            page = rows[: self.per_page]
            more = len(rows) > self.per_page
        else:
            page = rows
            more = bool(page) and self.offset + len(page) < count
        if more:
            self.next_cursor = cursor_after(self.list_key, id_of(page[-1]))
        return page

    def paginate_queryset(
        self, queryset, request, view=None, count: int | None = None, *, list_key: str = "", id_of: Callable
    ):
        window = self.window(request, list_key=list_key)
        count = self.count_of(queryset, count)
        return self.settle(paging.rows(queryset, window, count), count, id_of=id_of)

    def position(self, raw: str) -> int:
        try:
            digest, after = _cursor_signer.unsign_object(raw)
        except (signing.BadSignature, ValueError, TypeError):
            raise _invalid(
                "cursor", "This cursor is not one this API gave (altered or cut short).", "invalid_cursor"
            ) from None
        if digest != _list_digest(self.list_key):
            raise _invalid(
                "cursor",
                "This cursor belongs to another list (another channel, or other filters): "
                "follow each list's own meta.next_cursor.",
                "foreign_cursor",
            )
        return after

    def get_meta(self) -> dict:
        if self.page is None:
            return {"count": self.count, "per_page": self.per_page, "next_cursor": self.next_cursor}
        return {**super().get_meta(), "next_cursor": self.next_cursor}

    NEXT_CURSOR = {
        "type": ["string", "null"],
        "description": "Opaque: pass it back as `cursor` for the items after this page; null when none follow.",
    }

    def meta_schema(self) -> dict:
        page_meta = super().meta_schema()
        page_meta["properties"]["next_cursor"] = self.NEXT_CURSOR
        page_meta["required"].append("next_cursor")
        page_meta["description"] = "Without `cursor`: the page."
        cursor_meta = _object_schema(
            {
                "count": {"type": "integer", "minimum": 0},
                "per_page": {"type": "integer", "minimum": 1},
                "next_cursor": self.NEXT_CURSOR,
            },
            "With `cursor`: no page number.",
        )
        return {"anyOf": [page_meta, cursor_meta]}

    def get_schema_operation_parameters(self, view) -> list[dict]:
        cursor = {
            "name": self.cursor_param,
            "in": "query",
            "required": False,
            "description": "The `meta.next_cursor` of the previous page of this same list (same channel and "
            "filters), for a full sync: the page after it, at the same cost at any depth. Not with `page`. A "
            "cursor altered, or of another list, is a 400 `VALIDATION_ERROR` on field `cursor`.",
            "schema": {"type": "string"},
        }
        return [*super().get_schema_operation_parameters(view), cursor]
