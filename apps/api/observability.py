"""One log line per request, with a request id that is echoed as X-Request-ID and carried by every
log record of the request (RequestIdFilter) and by the Celery tasks it enqueues (config/celery.py)."""

import logging
import re
import time
import uuid
from contextvars import ContextVar

from django.http import HttpRequest
from django.utils.log import log_response

logger = logging.getLogger("cps.request")

# A caller's own request id is kept when it is reasonable, so logs across services line up.
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# The id of the request (or of the request that enqueued the task) being handled; None outside.
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

# What log records made outside any request show as their request id.
NO_REQUEST_ID = "-"


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # META, not request.headers: that builds a map of every header, on every request.
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = incoming if REQUEST_ID_PATTERN.match(incoming) else uuid.uuid4().hex
        token = current_request_id.set(request.request_id)
        try:
            return self.handle(request)
        finally:
            current_request_id.reset(token)

    def handle(self, request):
        started = time.monotonic()
        response = self.get_response(request)
        duration_ms = (time.monotonic() - started) * 1000
        if response.status_code >= 400:
            # Django's own warning for a 4xx or 5xx ("Not Found: /path"), written here, while the
            # request id is still set, instead of by the handler after this middleware has returned.
            log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
        response["X-Request-ID"] = request.request_id
        api_key = getattr(request, "auth", None)
        # Path only, never the query string: it can carry one-time tokens.
        logger.info(
            "request method=%s path=%s status=%s duration_ms=%.1f account=%s request_id=%s",
            request.method,
            request.path,
            response.status_code,
            duration_ms,
            getattr(api_key, "account_id", "-"),
            request.request_id,
            extra={
                "method": request.method,
                "path": request.path,
                "status": response.status_code,
                "duration_ms": round(duration_ms, 1),
                "account_id": getattr(api_key, "account_id", None),
                "request_id": request.request_id,
            },
        )
        return response


class RequestIdFilter(logging.Filter):
    """Gives every record a `request_id`: the id of the request (or task) it was logged in, or "-"."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id.get() or NO_REQUEST_ID
        return True


class RequestSummaryFilter(logging.Filter):
    """Django's loggers attach the request to their records (django.request for every 4xx and 5xx), and a
    formatter that writes extra fields (LOG_FORMAT=json) would write it with its full URL: query strings
    carry one-time tokens (`/sso/login?token=...`). Leave only the method and the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            record.request = f"{request.method} {request.path}"
        return True
