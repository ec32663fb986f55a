"""One log line per request, with a request id that is echoed as X-Request-ID and carried by every
log record of the request (RequestIdFilter) and by the Celery tasks it enqueues (config/celery.py);
and the formatters of settings.LOGGING, which write every record as one line whatever it quotes."""

import copy
import logging
import re
import time
import traceback
import uuid
from collections.abc import Iterator
from contextvars import ContextVar

from django.http import HttpRequest
from django.utils.log import log_response
from pythonjsonlogger.json import JsonFormatter

logger = logging.getLogger("cps.request")

# A caller's own request id is kept when it is reasonable, so logs across services line up.
REQUEST_ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

# The id of the request (or of the request that enqueued the task) being handled; None outside.
current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)

# What log records made outside any request show as their request id.
NO_REQUEST_ID = "-"


class RequestLogMiddleware:
    """The request's id (kept from the caller when it matches REQUEST_ID_PATTERN, else a new uuid4
    hex), set for the request only, and one log line per request.

    Not django-guid's middleware: it keeps a caller's id only if it is a UUID (or, unvalidated, any
    header value of any length), never resets its id after the response (a thread's later records
    would carry the last request's id instead of "-"), logs a line of its own on every request,
    and its Celery integration gives tasks enqueued outside a request a new id."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # META, not request.headers: that builds a map of every header, on every request.
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request.request_id = request_id_of(incoming)
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
            log_response("%s: %s", response.reason_phrase, loggable_path(request), response=response, request=request)
        response["X-Request-ID"] = request.request_id
        api_key = getattr(request, "auth", None)
        # Path only, never the query string: it can carry one-time tokens.
        log_request(
            request.method,
            loggable_path(request),
            response.status_code,
            duration_ms,
            getattr(api_key, "account_id", None),
            request.request_id,
        )
        return response


def log_request(method: str, path: str, status: int, duration_ms: float, account_id, request_id: str) -> None:
    """The line of one request, whoever answered it (the middleware above, or the web process's fast
    path for a cached read: config/server/fast_reads.py)."""
    logger.info(
        "request method=%s path=%s status=%s duration_ms=%.1f account=%s request_id=%s",
        method,
        path,
        status,
        duration_ms,
        "-" if account_id is None else account_id,
        request_id,
        extra={
            "method": method,
            "path": path,
            "status": status,
            "duration_ms": round(duration_ms, 1),
            "account_id": account_id,
            "request_id": request_id,
        },
    )


def request_id_of(incoming: str) -> str:
    """A request's id: the caller's X-Request-ID when it matches REQUEST_ID_PATTERN, else a new one."""
    return incoming if REQUEST_ID_PATTERN.match(incoming) else uuid.uuid4().hex


def loggable_path(request: HttpRequest) -> str:
    """The request's path with the token a link carries in it (a mailing list reader's confirm or
    unsubscribe link: the token is the link's only key) left out, so that the logs give no one the
    power of the link."""
    match = getattr(request, "resolver_match", None)
    token = match.kwargs.get("token") if match is not None else None
    return request.path.replace(token, "[token]") if isinstance(token, str) and token else request.path


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
            record.request = f"{request.method} {loggable_path(request)}"
        return True


# --- One record, one line: what a record quotes cannot start a line of its own ---
#
# Log records quote what clients send: the path (decoded: `%0a` is a line feed), headers (the Host of
# a DisallowedHost warning), the e-mail of a failed sign-in, exception messages that quote input. The
# formatters escape every character that could end a line or rewrite the terminal: C0 and C1 controls
# (CR, LF, NUL, ESC, TAB...), DEL, the Unicode line and paragraph separators (str.splitlines() splits
# on all of these), the bidirectional overrides (which make text read as another text), and lone
# surrogates, which the handler's UTF-8 stream cannot encode: the record would be lost instead.
# The backslash itself is left as it is, so escaping twice changes nothing and ordinary text (a
# Windows path, a regular expression) reads as written; `\n` in a line is a line feed that was sent,
# or a backslash and an n.
UNSAFE_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    character = match.group()
    code = ord(character)
    return SHORT_ESCAPES.get(character) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escape_controls(text: str) -> str:
    """`text` with each character that could break a log line written as an escape (`\\n`, `\\x00`, `\\u2028`)."""
    return UNSAFE_CHARACTERS.sub(_escape, text)


def _escaped(value):
    """A record's extra field, its strings escaped (within lists and dicts too, keys included)."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, list | tuple):
        return type(value)(_escaped(item) for item in value)
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    return value


# The attributes every record has; any other one is an `extra` field (or a filter's, like request_id).
RECORD_ATTRIBUTES = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


def escaped_record(record: logging.LogRecord) -> logging.LogRecord:
    """A copy of `record` whose message (with its arguments put in) and extra fields are escaped. A
    copy: other handlers (and tests' captures) still see what was logged."""
    safe = copy.copy(record)
    for name in record.__dict__.keys() - RECORD_ATTRIBUTES:
        value = safe.__dict__.pop(name)
        safe.__dict__[escape_controls(name)] = _escaped(value)
    safe.msg = _escaped(record.msg) if isinstance(record.msg, dict) else escape_controls(record.getMessage())
    safe.args = ()
    if record.exc_info:
        # Written again by formatException below, never taken from a text another formatter cached.
        safe.exc_text = None
    elif record.exc_text:
        # A traceback written elsewhere (another process): nothing tells its frames from quoted input.
        safe.exc_text = escape_controls(record.exc_text)
    return safe


CAUSE_LINE = "\nThe above exception was the direct cause of the following exception:\n\n"
CONTEXT_LINE = "\nDuring handling of the above exception, another exception occurred:\n\n"


def traceback_lines(exception: traceback.TracebackException) -> Iterator[str]:
    """The traceback as Python writes it (chained and grouped exceptions too), except that each
    exception's own lines (`ValueError: <message>`, its notes), which can quote input, are one line
    each, escaped. The frames stay as they are: they come from the code, not from a client."""
    if exception.__cause__ is not None:
        yield from traceback_lines(exception.__cause__)
        yield CAUSE_LINE
    elif exception.__context__ is not None and not exception.__suppress_context__:
        yield from traceback_lines(exception.__context__)
        yield CONTEXT_LINE
    if exception.stack:
        yield "Traceback (most recent call last):\n"
        yield from exception.stack.format()
    for line in exception.format_exception_only():
        yield escape_controls(line.removesuffix("\n")) + "\n"
    members = exception.exceptions or []
    for number, member in enumerate(members, start=1):
        yield f"\nException {number} of {len(members)} in the group above:\n\n"
        yield from traceback_lines(member)


class EscapingFormatter(logging.Formatter):
    """settings.LOGGING's plain format: every record on one line (a traceback follows on lines of its own)."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(escaped_record(record))

    def formatException(self, ei) -> str:
        if ei[1] is None:
            return super().formatException(ei)
        return "".join(traceback_lines(traceback.TracebackException(*ei))).removesuffix("\n")


class EscapingJsonFormatter(EscapingFormatter, JsonFormatter):
    """settings.LOGGING's JSON format. json.dumps already writes no raw control character (with
    ensure_ascii, nothing but ASCII); the values are escaped as well, so a message printed from the
    JSON (`jq -r .message`) is still one line and rewrites no terminal."""
