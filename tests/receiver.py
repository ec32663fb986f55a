"""A real HTTP receiver on 127.0.0.1 for webhook tests: records every request and answers with
the statuses (and delays) the test scripts."""

import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    at: float = field(default_factory=time.time)


def _wait_unless_abandoned(connection: socket.socket, delay: float) -> None:
    """Wait `delay` seconds before answering, or until the sender hangs up: a request whose sender
    gave up (its timeout) is no longer in flight, though it would still hold this thread."""
    deadline = time.monotonic() + delay
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([connection], [], [], min(left, 0.05))
        if readable:
            try:
                if not connection.recv(1, socket.MSG_PEEK):
                    return  # the sender closed the connection
            except OSError:
                return
            time.sleep(min(left, 0.05))  # bytes of a next request: not a hang-up


class Receiver:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.script: list[tuple[int, float]] = []  # (status, delay) per request; then `default`
        self.default: tuple[int, float] = (200, 0.0)
        self.body = b'{"ok": true}'  # the body of every answer
        self.in_flight = 0  # requests read but not yet answered
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with receiver._lock:
                    status, delay = receiver.script.pop(0) if receiver.script else receiver.default
                    receiver.in_flight += 1
                if delay:
                    _wait_unless_abandoned(self.connection, delay)
                with receiver._lock:
                    receiver.in_flight -= 1
                payload = receiver.body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the sender gave up waiting
                with receiver._arrived:
                    receiver.requests.append(Received(self.path, dict(self.headers), body))
                    receiver._arrived.notify_all()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "Receiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"expected {count} requests, got {len(self.requests)}")
                self._arrived.wait(remaining)
            return list(self.requests)
