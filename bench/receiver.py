"""The webhook receiver of the benchmark, run in its own process: a threaded HTTP/1.1 server with
keep-alive that checks every signature, answers 200 at once and counts what it got.

    python bench/receiver.py PORT SECRET

`GET /stats` answers {"received", "bad_signatures", "unique_deliveries", "first_at", "last_at"}
(Unix times of the first and last 2xx sent); `POST /reset` clears them.
"""

import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.received = 0
        self.bad_signatures = 0
        self.deliveries: set[str] = set()
        self.first_at = None
        self.last_at = None

    def as_dict(self) -> dict:
        return {
            "received": self.received,
            "bad_signatures": self.bad_signatures,
            "unique_deliveries": len(self.deliveries),
            "first_at": self.first_at,
            "last_at": self.last_at,
        }


def make_handler(secret: bytes, stats: Stats):
    ok = b'{"ok":true}'

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave in separate writes: with Nagle's algorithm the body would wait for
        # the client's delayed ACK (tens of milliseconds per request).
        disable_nagle_algorithm = True

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/reset":
                with stats.lock:
                    stats.reset()
                self._answer(200, ok)
                return
            timestamp = self.headers.get("X-Service-Timestamp", "")
            expected = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            valid = hmac.compare_digest(expected, self.headers.get("X-Service-Signature", ""))
            self._answer(200 if valid else 401, ok)
            now = time.time()
            with stats.lock:
                if valid:
                    stats.received += 1
                    stats.deliveries.add(self.headers.get("X-Service-Delivery", ""))
                    stats.first_at = stats.first_at or now
                    stats.last_at = now
                else:
                    stats.bad_signatures += 1

        def do_GET(self):
            with stats.lock:
                body = json.dumps(stats.as_dict()).encode()
            self._answer(200, body)

        def log_message(self, *args):
            pass

    return Handler


def main() -> None:
    port, secret = int(sys.argv[1]), sys.argv[2].encode()
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(secret, Stats()))
    server.daemon_threads = True
    server.request_queue_size = 128
    print(f"receiver listening on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
