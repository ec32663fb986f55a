"""gunicorn settings: the tunables come from the environment (see the README's configuration table);
the request limits and the JSON answer to the requests gunicorn refuses itself are fixed here."""

import json
import logging
import os
import re


def _bool(name: str, default: str) -> bool:
    raw = os.environ.get(name, default).strip().lower()
    if raw not in {"true", "false", "1", "0", "yes", "no"}:
        raise ValueError(f"{name} must be true or false, got {raw!r}")
    return raw in {"true", "1", "yes"}


bind = os.environ.get("BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))
# Recycle workers now and then so a slow leak cannot grow without bound; jitter spreads restarts.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "10000"))
max_requests_jitter = max_requests // 10
# Workers are forked from a master that has already imported the application, so a recycled worker
# starts in milliseconds instead of importing Django again (about a second of CPU on a small
# machine, taken from the requests being served). Code changes then need a restart, not a HUP.
preload_app = _bool("WEB_PRELOAD", "true")
# The application logs one line per request (cps.request, with its request id and account), so
# gunicorn's own access log is off; WEB_ACCESS_LOG=true writes it to stdout as well.
accesslog = "-" if _bool("WEB_ACCESS_LOG", "false") else None
# The path without its query string: query strings can carry one-time tokens.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms'
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

# gunicorn refuses some requests itself, before the application sees them, and answers with its
# own HTML page, which can quote the refused input (a query string may carry a token). post_fork below
# makes that answer the API's JSON error envelope. The limits are gunicorn's defaults, written out
# so that an upgrade cannot move them silently: longer request lines answer 414, more or longer
# header fields 431.
limit_request_line = 4094  # bytes: method, target and version (0 would mean unlimited; at most 8190)
limit_request_fields = 100
limit_request_field_size = 8190  # bytes, name and value of one header field

# The statuses gunicorn answers itself (gunicorn.workers.base.Worker.handle_error chooses them).
# Codes shared with the application are its codes (apps/api/errors.py STATUS_CODES; this file
# imports nothing of Django, and tests/ops/test_server_refusals.py keeps the two in step).
REFUSAL_CODES = {
    400: "bad_request",
    403: "permission_denied",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_header_fields_too_large",
    500: "internal_error",
    501: "not_implemented",
}
# The headers of the application's data responses, and no caching: 414 and 501 are cacheable by
# default, and the connection is closed after the answer whatever the request asked.
REFUSAL_HEADERS = (
    ("Content-Type", "application/json"),
    ("X-API-Version", "1"),
    ("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
    ("Connection", "close"),
)


def refusal_messages(cfg) -> dict[int, str]:
    """A fixed message per status, with the limits gunicorn applies (as its parser reads cfg)."""
    line = cfg.limit_request_line
    fields = cfg.limit_request_fields if 0 < cfg.limit_request_fields <= 32768 else 32768
    field_size = cfg.limit_request_field_size if cfg.limit_request_field_size > 0 else 8190
    return {
        400: "The request is not valid HTTP/1.1.",
        403: "The request is not allowed from this address.",
        414: f"The request line is longer than {min(line, 8190)} bytes." if line else "The request line is too long.",
        417: "Only the expectation 100-continue is supported.",
        431: f"The request has more than {fields} header fields, or a header field longer than {field_size} bytes.",
        500: "The server failed to handle the request.",
        501: "The request uses a transfer coding the server does not implement.",
    }


def refusal_response(status: int, reason: str, messages: dict[int, str]) -> bytes:
    """The bytes of gunicorn's answer: status line, headers and `{"error": {"code", "message"}}`."""
    server_error = status >= 500
    code = REFUSAL_CODES.get(status, "internal_error" if server_error else "bad_request")
    message = messages.get(status, messages[500 if server_error else 400])
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = (*REFUSAL_HEADERS, ("Content-Length", str(len(body))))
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers)
    return (head + "\r\n").encode("latin-1") + body


class RefusedInputFilter(logging.Filter):
    """gunicorn logs each refusal with the exception's text, which quotes a malformed request line
    or header whole: its query string, which can carry a token, is left out of the log."""

    QUERY = re.compile(r"\?[^\s'\"]*")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Invalid request from"):
            record.msg, record.args = self.QUERY.sub("?<query left out>", message), ()
        return True


def post_fork(server, worker) -> None:
    """In each worker: gunicorn's error page becomes the JSON envelope. Its handle_error still
    chooses the status and logs the refusal; only the page it writes (util.write_error) changes.
    Its `mesg` argument can quote the refused input and is not sent."""
    from gunicorn import util

    messages = refusal_messages(worker.cfg)

    def write_error(sock, status_int: int, reason: str, mesg: str) -> None:
        util.write_nonblock(sock, refusal_response(status_int, reason, messages))

    util.write_error = write_error
    worker.log.error_log.addFilter(RefusedInputFilter())
