"""Slow clients cannot stall the web process (issue 30): sockets that send their headers or their body
a little at a time hold no thread of the application, a normal request beside 200 of the one and 50
of the other still answers within a second, and each slow socket is cut off once its read timeout
(WEB_HEADER_TIMEOUT, WEB_BODY_TIMEOUT) has passed. The Procfile's web process with its default
processes and threads, on 127.0.0.1 only."""

import contextlib
import selectors
import socket
import threading
import time

import pytest
import requests
from django.conf import settings

from tests.factories import ApiKeyFactory

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not settings.IS_POSTGRES, reason="the web process needs the test database on PostgreSQL"),
    pytest.mark.django_db(transaction=True),
]

HEADER_SOCKETS, BODY_SOCKETS = 200, 50
TIMEOUT = 2  # seconds, both read timeouts of the web process under test
DRIP_EVERY = 0.5  # seconds between two pieces of a slow socket: each is on time, the whole never is


class SlowSocket:
    def __init__(self, address: tuple[str, int], start: bytes, piece: bytes) -> None:
        self.sock = socket.create_connection(address, timeout=5)
        self.sock.sendall(start)
        self.sock.setblocking(False)
        self.piece = piece
        self.opened = time.monotonic()
        self.closed_after: float | None = None
        self.answer = b""

    def drip(self) -> None:
        if self.closed_after is None:
            with contextlib.suppress(OSError):
                self.sock.send(self.piece)

    def read(self) -> None:
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.answer += data
        else:
            self.closed_after = time.monotonic() - self.opened
            self.sock.close()


class SlowClients:
    """200 sockets that send a request's head one header line at a time, and 50 that send an
    authenticated PUT's declared body ten bytes at a time, each piece every DRIP_EVERY seconds."""

    def __init__(self, url: str, key: str) -> None:
        address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        put = (
            f"PUT /v1/users/profile HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        ).encode()
        self.headers = [SlowSocket(address, head, b"X-Slow: 1\r\n") for _ in range(HEADER_SOCKETS)]
        self.bodies = [SlowSocket(address, put, b'{"name": "') for _ in range(BODY_SOCKETS)]
        self.sockets = self.headers + self.bodies
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for slow in self.sockets:
            selector.register(slow.sock, selectors.EVENT_READ, slow)
        next_drip = time.monotonic() + DRIP_EVERY
        while not self._stop.is_set() and any(slow.closed_after is None for slow in self.sockets):
            for key, _ in selector.select(timeout=0.05):
                key.data.read()
                if key.data.closed_after is not None:
                    selector.unregister(key.fileobj)
            if time.monotonic() >= next_drip:
                for slow in self.sockets:
                    slow.drip()
                next_drip += DRIP_EVERY
        selector.close()

    def all_closed(self) -> bool:
        return all(slow.closed_after is not None for slow in self.sockets)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for slow in self.sockets:
            slow.sock.close()


@pytest.fixture
def slow_web(start_web):
    """The web process as the Procfile runs it (default processes and threads), with short read
    timeouts so that the cut-off happens within the test."""
    return start_web(WEB_HEADER_TIMEOUT=TIMEOUT, WEB_BODY_TIMEOUT=TIMEOUT, RATE_LIMIT_FREE=1_000_000)


def timed_get(url: str, **headers) -> tuple[int, float]:
    started = time.monotonic()
    response = requests.get(url, headers=headers, timeout=10)
    return response.status_code, time.monotonic() - started


def test_normal_requests_answer_within_a_second_beside_slow_sockets_which_are_then_cut_off(slow_web):
    key = ApiKeyFactory()
    clients = SlowClients(slow_web.url, key.raw)
    try:
        answers = []
        # While every slow socket is open (their timeout is TIMEOUT seconds away): a health check
        # and an authenticated read, four times.
        for _ in range(4):
            answers.append(timed_get(f"{slow_web.url}/healthz"))
            answers.append(timed_get(f"{slow_web.url}/v1/me", Authorization=f"Bearer {key.raw}"))
            time.sleep(0.2)
        assert not any(slow.closed_after for slow in clients.sockets), "slow sockets were closed before their time"

        deadline = time.monotonic() + TIMEOUT + 10
        while not clients.all_closed() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        clients.stop()

    assert [status for status, _ in answers] == [200] * 8
    assert max(seconds for _, seconds in answers) < 1.0, answers
    # Every slow socket was cut off by the server, after its read timeout and not long after it;
    # a slow body is told why first.
    closed = [slow.closed_after for slow in clients.sockets]
    assert None not in closed, f"{closed.count(None)} slow sockets still open"
    assert min(closed) > TIMEOUT - 0.5 and max(closed) < TIMEOUT + 5, (min(closed), max(closed))
    assert {slow.answer for slow in clients.headers} == {b""}
    assert {slow.answer.split(b"\r\n", 1)[0] for slow in clients.bodies} == {b"HTTP/1.1 408 Request Timeout"}
    assert all(b'"code": "request_timeout"' in slow.answer for slow in clients.bodies)
