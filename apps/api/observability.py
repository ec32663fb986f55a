"""One log line per request, with a request id that is echoed as X-Request-ID."""

import logging
import re
import time
import uuid

from django.http import HttpRequest

logger = logging.getLogger("cps.request")

# A caller's own request id is kept when it is reasonable, so logs across services line up.
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request.request_id = incoming if REQUEST_ID_PATTERN.match(incoming) else uuid.uuid4().hex
        started = time.monotonic()
        response = self.get_response(request)
        duration_ms = (time.monotonic() - started) * 1000
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


class RequestSummaryFilter(logging.Filter):
    """Django's loggers attach the request to their records (django.request for every 4xx and 5xx), and a
    formatter that writes extra fields (LOG_FORMAT=json) would write it with its full URL: query strings
    carry one-time tokens (`/sso/login?token=...`). Leave only the method and the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            record.request = f"{request.method} {request.path}"
        return True
