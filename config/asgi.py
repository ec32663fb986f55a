"""What the web process serves (config/web.py runs it on granian): the Django application of
config/wsgi.py, handed only whole requests.

granian reads and writes the sockets in Rust, so a client that sends its headers or its body slowly
holds no Python thread. Here each request's body is read in full (up to MAX_REQUEST_BODY_BYTES and
WEB_BODY_TIMEOUT) before the application runs on one of WEB_THREADS threads per process: a body
dripped a byte at a time waits in the event loop, never on a thread, and is cut off with a 408.
Reading every body also keeps the connection usable for the client's next request when the
application answered without looking at the body (a 401, a 404). A body the application refuses
unread (over the size limit, or chunked) is not read: that answer says `Connection: close`.

The requests refused here before the application sees them (a request line or a header field over
its limit, an `Expect` other than 100-continue, disagreeing scheme headers from a trusted proxy, a
body too slow) answer the API's JSON error envelope with a fixed message, never the refused input.
"""

import asyncio
import io
import ipaddress
import json
import logging
import sys
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote_to_bytes

from django.conf import settings

from config.wsgi import application as django_application

log = logging.getLogger("cps.web")

# gunicorn's limits, which this service answered before granian (longer request lines answer 414,
# longer header fields 431). granian itself refuses more than 100 header fields, and a head larger
# than config/web.py's HEAD_BUFFER_BYTES, with an empty 431 before anything here runs.
LIMIT_REQUEST_LINE = 4094  # bytes: method, target and version
LIMIT_REQUEST_FIELDS = 100
LIMIT_REQUEST_FIELD_SIZE = 8190  # bytes, name and value of one header field

# Codes shared with the application are its codes (apps/api/errors.py STATUS_CODES; config imports
# no app, and tests/ops/test_server_refusals.py keeps the two in step).
REFUSAL_CODES = {
    400: "bad_request",
    408: "request_timeout",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_header_fields_too_large",
    500: "internal_error",
}
REFUSAL_MESSAGES = {
    400: "The request is not valid HTTP/1.1.",
    408: "The request body did not arrive in time.",
    414: f"The request line is longer than {LIMIT_REQUEST_LINE} bytes.",
    417: "Only the expectation 100-continue is supported.",
    431: (
        f"The request has more than {LIMIT_REQUEST_FIELDS} header fields, "
        f"or a header field longer than {LIMIT_REQUEST_FIELD_SIZE} bytes."
    ),
    500: "The server failed to handle the request.",
}
# The headers of the application's data responses, and no caching: 414 is cacheable by default.
# The connection is closed after a refusal whatever the request asked.
REFUSAL_HEADERS = (
    (b"content-type", b"application/json"),
    (b"x-api-version", b"1"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"connection", b"close"),
)

# The scheme headers a trusted proxy may set, and the value that means HTTPS (gunicorn's
# secure_scheme_headers, which FORWARDED_ALLOW_IPS applied to before).
SECURE_SCHEME_HEADERS = {b"x-forwarded-protocol": b"ssl", b"x-forwarded-proto": b"https", b"x-forwarded-ssl": b"on"}
# A response body larger than this is sent in parts as the application produces it (static files,
# streaming responses); anything smaller goes in one message once the application returned.
STREAM_AFTER_BYTES = 256 * 1024


class ClientGone(Exception):
    """The client closed the connection while a large answer was being sent."""


class Refused(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def refusal_messages(status: int) -> list[dict]:
    """The ASGI messages of a refusal: `{"error": {"code", "message"}}` with a fixed message."""
    server_error = status >= 500
    code = REFUSAL_CODES.get(status, "internal_error" if server_error else "bad_request")
    message = REFUSAL_MESSAGES.get(status, REFUSAL_MESSAGES[500 if server_error else 400])
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [*REFUSAL_HEADERS, (b"content-length", str(len(body)).encode())]
    return [
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    ]


def trusted(client: tuple | None, networks: tuple) -> bool:
    """Whether the peer may tell the scheme (FORWARDED_ALLOW_IPS); a peer without an address (a
    unix socket) may, as with gunicorn."""
    if not client:
        return True
    if "*" in networks:
        return True
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return False
    address = getattr(address, "ipv4_mapped", None) or address  # ::ffff:10.0.0.5 on a dual-stack port
    return any(address in network for network in networks)


def check_head(scope: dict) -> None:
    """The refusals decided by the request line and headers alone."""
    target = scope.get("raw_path") or scope["path"].encode()
    query = scope.get("query_string") or b""
    line = len(scope["method"]) + 1 + len(target) + (len(query) + 1 if query else 0) + len(" HTTP/1.1")
    if line > LIMIT_REQUEST_LINE:
        raise Refused(414)
    headers = scope["headers"]
    if len(headers) > LIMIT_REQUEST_FIELDS:
        raise Refused(431)
    for name, value in headers:
        if len(name) + len(value) + 2 > LIMIT_REQUEST_FIELD_SIZE:
            raise Refused(431)
        if name == b"expect" and value.strip().lower() != b"100-continue":
            raise Refused(417)


def build_environ(scope: dict, networks: tuple) -> dict:
    """The WSGI environ of the request (PEP 3333), as gunicorn built it: header names with an
    underscore are dropped (X_Forwarded_For would otherwise pass for X-Forwarded-For), repeated
    fields are joined with commas, and the scheme comes from a trusted proxy's headers only."""
    raw_path = scope.get("raw_path") or scope["path"].encode()
    path = raw_path.split(b"?", 1)[0]
    server = scope.get("server") or ("127.0.0.1", 0)
    client = scope.get("client")
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": (scope.get("query_string") or b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if client:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = str(client[0]), str(client[1])
    proxy = trusted(client, networks)
    scheme = None
    for name, value in scope["headers"]:
        if proxy and name in SECURE_SCHEME_HEADERS:
            said = "https" if value.strip().lower() == SECURE_SCHEME_HEADERS[name] else "http"
            if scheme not in (None, said):
                raise Refused(400)
            scheme = said
        if b"_" in name:
            continue
        key = name.decode("latin-1").upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = f"HTTP_{key}"
        text = value.decode("latin-1")
        environ[key] = f"{environ[key]},{text}" if key in environ else text
    if scheme:
        environ["wsgi.url_scheme"] = scheme
    return environ


class Server:
    """The ASGI application granian calls (one instance per worker process after the fork)."""

    def __init__(self, wsgi_application) -> None:
        self.wsgi = wsgi_application
        self.threads = settings.WEB_THREADS
        self.body_timeout = settings.WEB_BODY_TIMEOUT
        self.max_body = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        self.networks = settings.FORWARDED_ALLOW_IPS
        self._executor: ThreadPoolExecutor | None = None

    @property
    def executor(self) -> ThreadPoolExecutor:
        # Made on the first request, in the worker: threads do not survive the fork of a preloaded
        # master.
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix="web")
        return self._executor

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] != "http":
            return
        try:
            check_head(scope)
            environ = build_environ(scope, self.networks)
            body, close = await self.read_body(environ, receive)
        except Refused as refusal:
            log.warning("Refused a request from ip=%s: %s", (scope.get("client") or ("-",))[0], refusal.status)
            for message in refusal_messages(refusal.status):
                await send(message)
            return
        if body is None:  # the client went away
            return
        environ["wsgi.input"] = io.BytesIO(body)
        loop = asyncio.get_running_loop()
        messages = await loop.run_in_executor(self.executor, self.run_application, environ, close, loop, send)
        for message in messages:
            await send(message)

    async def read_body(self, environ: dict, receive) -> tuple[bytes | None, bool]:
        """The whole body, or b"" with close=True when the application refuses it from the headers
        alone (larger than the limit, or chunked: apps/api/middleware.py answers 413 and 411), so
        it is left unread and the connection is closed after the answer."""
        declared = environ.get("CONTENT_LENGTH", "").strip()
        if "HTTP_TRANSFER_ENCODING" in environ:
            return b"", True
        if not declared.isdigit() or int(declared) == 0:
            return b"", False  # granian refuses a malformed Content-Length itself
        if int(declared) > self.max_body:
            return b"", True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.body_timeout
        chunks = []
        while True:
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(receive(), remaining)
            except TimeoutError:
                raise Refused(408) from None
            if message["type"] == "http.disconnect":
                return None, True
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks), False

    def run_application(self, environ: dict, close: bool, loop, send) -> list[dict]:
        """Runs on a thread of the pool: the application's answer as ASGI messages. A large body is
        sent in parts from here (waiting for each send, so a slow reader holds back the producer);
        what is left is returned for the event loop to send."""
        started: dict = {}

        def start_response(status: str, headers: list, exc_info=None) -> None:
            kept = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
            if close:
                kept = [(name, value) for name, value in kept if name != b"connection"] + [(b"connection", b"close")]
            started["message"] = {"type": "http.response.start", "status": int(status[:3]), "headers": kept}

        async def sending(message: dict) -> None:
            # granian's send() returns an awaitable that is not a coroutine, which
            # run_coroutine_threadsafe refuses (a TypeError that read as a client gone: every answer
            # past STREAM_AFTER_BYTES was granian's bare 500).
            await send(message)

        def send_now(message: dict) -> None:
            try:
                asyncio.run_coroutine_threadsafe(sending(message), loop).result()
            except Exception as exc:
                raise ClientGone from exc

        try:
            result = self.wsgi(environ, start_response)
        except Exception:
            log.exception("The application failed before answering")
            return refusal_messages(500)
        pending, size, streaming = [], 0, False
        try:
            for chunk in result:
                if not chunk:
                    continue
                pending.append(chunk)
                size += len(chunk)
                if size >= STREAM_AFTER_BYTES:
                    if not streaming:
                        send_now(started["message"])
                        streaming = True
                    send_now({"type": "http.response.body", "body": b"".join(pending), "more_body": True})
                    pending, size = [], 0
        except ClientGone:
            return []
        except Exception:
            log.exception("The application failed while answering")
            if not streaming:
                return refusal_messages(500)
            pending = []
        finally:
            if hasattr(result, "close"):
                result.close()  # Django's request_finished: database connections are checked here
        last = {"type": "http.response.body", "body": b"".join(pending)}
        return [last] if streaming else [started["message"], last]


application = Server(django_application)
