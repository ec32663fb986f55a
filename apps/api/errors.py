"""The one error envelope: `{"error": {"code", "message", "details"?}}` for every error under /v1."""

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from apps.core import error_pages
from apps.core import errors as domain
from apps.core.validation import validation_envelope

logger = logging.getLogger(__name__)

# Codes for DRF's own exceptions, by HTTP status; an exception raised with an explicit code
# (for example PermissionDenied(code="insufficient_scope")) keeps its own.
STATUS_CODES = {
    400: "bad_request",
    401: "authentication_failed",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    411: "length_required",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable_entity",
    429: "rate_limit_exceeded",
    500: "internal_error",
    503: "service_unavailable",
}

# The HTTP status of each kind of domain error: the one place where the domain meets HTTP.
DOMAIN_STATUS: dict[type[domain.DomainError], int] = {
    domain.InvalidInput: 400,
    domain.Forbidden: 403,
    domain.NotFound: 404,
    domain.Conflict: 409,
    domain.Gone: 410,
    domain.PreconditionFailed: 412,
    domain.Unavailable: 503,
}
# A rule of the domain that refuses an otherwise well-formed request.
DOMAIN_STATUS_DEFAULT = 422


def status_of(exc: domain.DomainError) -> int:
    for kind in type(exc).__mro__:
        if kind in DOMAIN_STATUS:
            return DOMAIN_STATUS[kind]
    return DOMAIN_STATUS_DEFAULT


GENERIC_CODES = {"error", "invalid", "permission_denied", "not_authenticated", "authentication_failed"}


def payload_too_large_message(limit: int | None = None) -> str:
    return f"The request body is larger than the limit of {limit or settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes."


def envelope(code: str, message: str, details: dict | None = None) -> dict:
    error = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def error_response(status: int, code: str, message: str, details: dict | None = None, headers=None) -> Response:
    return Response(envelope(code, message, details), status=status, headers=headers)


def flatten_validation_errors(detail, field: str | None = None) -> list[dict]:
    """DRF nests errors by field; the envelope lists them as {field, rule, message}."""
    if isinstance(detail, dict):
        items = []
        for key, value in detail.items():
            name = None if key == "non_field_errors" else (f"{field}.{key}" if field else str(key))
            items.extend(flatten_validation_errors(value, name if name is not None else field))
        return items
    if isinstance(detail, list):
        items = []
        for index, value in enumerate(detail):
            # A list of plain messages belongs to the field; a list of objects is indexed.
            nested = isinstance(value, dict | list)
            items.extend(flatten_validation_errors(value, f"{field}[{index}]" if nested and field else field))
        return items
    return [{"field": field, "rule": getattr(detail, "code", "invalid"), "message": str(detail)}]


def validation_error_response(detail) -> Response:
    message, details = validation_envelope(flatten_validation_errors(detail))
    return error_response(400, "VALIDATION_ERROR", message, details)


def exception_handler(exc, context):
    set_rollback()
    if isinstance(exc, domain.DomainError):
        return error_response(status_of(exc), exc.code, exc.message, exc.details)
    if isinstance(exc, RequestDataTooBig):
        return error_response(413, STATUS_CODES[413], payload_too_large_message())
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    if isinstance(exc, exceptions.ValidationError):
        return validation_error_response(exc.detail)
    if isinstance(exc, exceptions.ParseError):
        _, details = validation_envelope([{"field": None, "rule": "json", "message": str(exc.detail)}])
        return error_response(400, "VALIDATION_ERROR", f"The request body is not valid JSON: {exc.detail}", details)
    if isinstance(exc, exceptions.APIException):
        return _api_exception_response(exc)

    logger.error("Unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
    return error_response(500, "internal_error", "Internal server error.")


def _api_exception_response(exc: exceptions.APIException) -> Response:
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None) is not None:
        headers["Retry-After"] = str(int(exc.wait))
    code = STATUS_CODES.get(exc.status_code, "error")
    detail_code = exc.get_codes() if isinstance(exc.detail, str) else None
    if isinstance(detail_code, str) and detail_code not in GENERIC_CODES and exc.status_code != 404:
        code = detail_code
    message = str(exc.detail) if isinstance(exc.detail, str) else code
    if exc.status_code == 404:
        message = "Resource not found."
    return error_response(exc.status_code, code, message, headers=headers)


def is_api_path(request) -> bool:
    path = request.path
    return len(path) > 2 and path[1] == "v" and path[2].isdigit()


def json_error(status: int, message: str, headers: dict | None = None) -> JsonResponse:
    """The envelope outside DRF views (middleware and Django's handlers)."""
    return JsonResponse(envelope(STATUS_CODES[status], message), status=status, headers=headers)


# Django-level handlers for errors raised outside DRF views (middleware, URL resolution); any
# other path gets the pages people see (apps/core/error_pages.py).
def bad_request(request, exception, template_name="400.html"):
    if is_api_path(request):
        if isinstance(exception, RequestDataTooBig):
            return json_error(413, payload_too_large_message())
        return json_error(400, "Bad request.")
    return error_pages.bad_request(request, exception)


def permission_denied(request, exception, template_name="403.html"):
    if is_api_path(request):
        return json_error(403, str(exceptions.PermissionDenied.default_detail))
    return error_pages.permission_denied(request, exception)


def page_not_found(request, exception, template_name="404.html"):
    if is_api_path(request):
        return json_error(404, "Resource not found.")
    return error_pages.page_not_found(request, exception)


def server_error(request, template_name="500.html"):
    if is_api_path(request):
        return json_error(500, "Internal server error.")
    return error_pages.server_error(request)
