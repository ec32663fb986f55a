"""The web process's ASGI application (config/server/asgi.py), called in the test's own process and
built twice: with the fast path that answers recorded reads before Django (config/server/fast_reads.py),
and without it (WEB_FAST_READS=false); the tests of both paths hold them to the same answers."""

import asyncio
from types import SimpleNamespace

import pytest

from config.server import asgi
from config.wsgi import application as django_application


class Web:
    """The application, with or without the fast path, and whether the fast path answered the last
    request."""

    def __init__(self, loop, *, fast: bool, request_id: str) -> None:
        self.loop = loop
        self.request_id = request_id
        self.server = asgi.Server(django_application)
        if not fast:
            self.server.fast = None
        self.fast_answers = 0

    def get(self, path: str, key=None, *, host: str = "testserver", method: str = "GET", **headers) -> SimpleNamespace:
        """The answer to `path` (`key`: the API key it is sent with; headers as keyword arguments,
        `_` for `-`)."""
        path, _, query = path.partition("?")
        headers.setdefault("x_request_id", self.request_id)
        sent = [(b"host", host.encode())]
        if key is not None:
            sent.append((b"authorization", f"Bearer {key.raw}".encode()))
        sent += [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
        scope = {
            "type": "http",
            "method": method,
            "scheme": "http",
            "http_version": "1.1",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "headers": sent,
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        messages = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            messages.append(message)

        before = self.answered_fast()
        self.loop.run_until_complete(self.server(scope, receive, send))
        self.fast_answers += self.answered_fast() - before
        start, *bodies = messages
        return SimpleNamespace(
            status=start["status"],
            headers=start["headers"],
            body=b"".join(body.get("body", b"") for body in bodies),
            fast=self.answered_fast() > before,
        )

    def answered_fast(self) -> int:
        return getattr(self.server.fast, "answered", 0)


def answered_fast(web: Web, path: str, key=None, **headers) -> SimpleNamespace:
    """The fast path's answer to `path`, once Django's answers were recorded (a miss computes and
    stores the answer; a hit that Django answers is recorded, an API key's first use renews its
    entry, a page is recorded when the same request comes a second time)."""
    for _ in range(3):
        answer = web.get(path, key, **headers)
        if answer.fast:
            return answer
    raise AssertionError(f"the fast path never answered {path}: {answer.status} {answer.body[:200]!r}")


def fixtures(*, request_id: str) -> tuple:
    """The fixtures `loop`, `fast` and `django_only` of a test module, whose requests carry
    `request_id` (assign them to those names in the module)."""

    @pytest.fixture(name="loop")
    def loop_fixture():
        loop = asyncio.new_event_loop()
        yield loop
        loop.close()

    @pytest.fixture(name="fast")
    def fast_fixture(loop):
        return Web(loop, fast=True, request_id=request_id)

    @pytest.fixture(name="django_only")
    def django_only_fixture(loop):
        return Web(loop, fast=False, request_id=request_id)

    return loop_fixture, fast_fixture, django_only_fixture
