"""The HTTP server under the tests' fakes of outside APIs (LinkedIn, Mastodon, Bluesky...): on
127.0.0.1 in a daemon thread, keep-alive, every request recorded. A fake subclasses FakeApi and
answers in `_route` as its API does (and in `_injected` with its API's error body); the base gives
every fake the same failure injection: error answers (`fail_next`), slow answers (`hang`), and
answers that never arrive (a route returning DROP)."""

import base64
import binascii
import contextlib
import json
import socket
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

from requests.structures import CaseInsensitiveDict

DROP = object()  # a route's answer meaning: close the connection and answer nothing


@dataclass
class Request:
    method: str
    path: str  # as sent, still percent-encoded
    query: dict[str, str]
    headers: CaseInsensitiveDict
    body: Any  # the JSON value, the form as a dict, the text, or None
    raw_query: str = ""
    raw: bytes = b""


@dataclass
class Rule:
    method: str | None
    path: str | None
    times: int | None
    status: int = 0
    message: str | None = None
    headers: dict = field(default_factory=dict)
    seconds: float = 0.0
    after_processing: bool = False

    def matches(self, request: Request) -> bool:
        return (self.method is None or self.method == request.method) and (
            self.path is None or request.path.startswith(self.path)
        )


def json_answer(status: int, value, headers=()) -> tuple:
    return status, [("Content-Type", "application/json"), *headers], json.dumps(value).encode()


def empty(status: int, headers=()) -> tuple:
    return status, list(headers), b""


def page(status: int, text: str) -> tuple:
    return status, [("Content-Type", "text/html; charset=utf-8")], f"<html><body><p>{text}</p></body></html>".encode()


def redirect(redirect_uri: str, **params) -> tuple:
    location = redirect_uri + ("&" if "?" in redirect_uri else "?") + urlencode(params)
    return empty(302, [("Location", location)])


def basic(headers) -> tuple[str, str] | None:
    """The user and password of an `Authorization: Basic` header, or None."""
    scheme, _, value = headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return unquote(user), unquote(password)


def parse_body(content_type: str, raw: bytes):
    if not raw:
        return None
    text = raw.decode("utf-8", "replace")
    if content_type.startswith("application/json"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    if content_type.startswith("application/x-www-form-urlencoded"):
        return dict(parse_qsl(text, keep_blank_values=True))
    return text


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as requests' sessions use it
    timeout = 60  # an idle kept-alive connection ends its thread by itself

    def log_message(self, format, *args):
        pass  # the test output stays readable

    def do_GET(self):
        self.server.fake._handle(self)

    do_POST = do_DELETE = do_PUT = do_PATCH = do_GET


class _Server(ThreadingHTTPServer):
    daemon_threads = True


class FakeApi:
    """A fake API at `.url`. `requests` holds every request (a Request); `_lock` guards the fake's
    state, which `_route` reads and changes under it."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._failures: list[Rule] = []
        self._hangs: list[Rule] = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)  # quick stop()

    # -- life cycle ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes sleeping requests, which then end without an answer
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- test controls ------------------------------------------------------------------------------
    def fail_next(
        self,
        status: int,
        *,
        method: str | None,
        path: str | None,
        times: int = 1,
        message: str | None = None,
        headers: dict | None = None,
    ) -> None:
        """The next `times` requests whose method is `method` and whose path starts with `path` (None: any)
        get `status` with the API's error body (`_injected`), before any other check."""
        with self._lock:
            self._failures.append(Rule(method, path, times, status=status, message=message, headers=headers or {}))

    def hang(
        self,
        seconds: float,
        *,
        method: str | None = None,
        path: str | None = None,
        times: int | None = None,
        after_processing: bool = False,
    ) -> None:
        """Matching requests (path prefix; `times` of them, None: all) wait `seconds` before they are carried
        out, or with `after_processing` after they are carried out and before the answer. A request still
        waiting when the fake stops ends without an answer (and, if not yet carried out, without effect)."""
        with self._lock:
            self._hangs.append(Rule(method, path, times, seconds=seconds, after_processing=after_processing))

    def calls(self, method: str | None = None, path_prefix: str = "") -> list[Request]:
        with self._lock:
            return [
                r for r in self.requests if (method is None or r.method == method) and r.path.startswith(path_prefix)
            ]

    # -- what a fake answers ------------------------------------------------------------------------
    def _route(self, request: Request):
        """(status, headers, body) for the request, or DROP; called under `_lock`."""
        raise NotImplementedError

    def _injected(self, rule: Rule) -> tuple:
        """The answer of an injected failure (`fail_next`), in the API's own error shape."""
        return json_answer(rule.status, {"error": rule.message or HTTPStatus(rule.status).phrase}, rule.headers.items())

    # -- serving ------------------------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        path, _, raw_query = handler.path.partition("?")
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = CaseInsensitiveDict(handler.headers.items())
        request = Request(
            handler.command,
            path,
            dict(parse_qsl(raw_query, keep_blank_values=True)),
            headers,
            parse_body(headers.get("Content-Type", ""), raw),
            raw_query,
            raw,
        )
        with self._lock:
            self.requests.append(request)
            failure, hang = _take(self._failures, request), _take(self._hangs, request)
        if hang and not hang.after_processing and self._stopping.wait(hang.seconds):
            return _drop(handler)
        if failure:
            answer = self._injected(failure)
        else:
            with self._lock:
                answer = self._route(request)
        if hang and hang.after_processing and self._stopping.wait(hang.seconds):
            return _drop(handler)
        if answer is DROP:
            return _drop(handler)
        status, answer_headers, body = answer
        try:
            handler.send_response(status)
            for name, value in answer_headers:
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            handler.close_connection = True  # the client gave up waiting


def _take(rules: list[Rule], request: Request) -> Rule | None:
    for rule in rules:
        if rule.matches(request):
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    rules.remove(rule)
            return rule
    return None


def _drop(handler: BaseHTTPRequestHandler) -> None:
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
