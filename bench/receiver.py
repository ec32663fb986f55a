"""The webhook receiver of the benchmark, run in its own process: a threaded HTTP/1.1 server with
keep-alive that checks every signature, answers 200 at once and counts what it got.

    python bench/receiver.py PORT SECRET [--status CODE] [--hang SECONDS]

`--status 500` answers every signed request with that status instead of 200 (a failing endpoint).
`--hang 60` reads each request and then neither answers nor closes the connection for that long
(a hanging endpoint; the sender gives up first). `GET /stats` answers {"received", "bad_signatures",
"unique_deliveries", "first_at", "last_at"}: requests with a good signature (counted as they
arrive) and the Unix times of the first and last 2xx sent. `GET /arrivals` answers
{X-Service-Delivery id: Unix time of its first arrival}. `POST /reset` clears them all.
"""

import argparse
import hashlib
import hmac
import json
import select
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
        self.arrivals: dict[str, float] = {}
        self.first_at = None
        self.last_at = None

    def as_dict(self) -> dict:
        return {
            "received": self.received,
            "bad_signatures": self.bad_signatures,
            "unique_deliveries": len(self.arrivals),
            "first_at": self.first_at,
            "last_at": self.last_at,
        }


def make_handler(secret: bytes, stats: Stats, status: int = 200, hang: float = 0):
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
            # Taken before anything else, so the latency measured ends when the request was in.
            arrived = time.time()
            if self.path == "/reset":
                with stats.lock:
                    stats.reset()
                self._answer(200, ok)
                return
            timestamp = self.headers.get("X-Service-Timestamp", "")
            expected = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            valid = hmac.compare_digest(expected, self.headers.get("X-Service-Signature", ""))
            with stats.lock:
                if valid:
                    stats.received += 1
                    stats.arrivals.setdefault(self.headers.get("X-Service-Delivery", ""), arrived)
                else:
                    stats.bad_signatures += 1
            if hang and valid:
                # Wait for the sender to give up (its socket becomes readable at EOF) or the hang to
                # run out, whichever comes first, so no thread outlives the request's sender by long.
                select.select([self.connection], [], [], hang)
                self.close_connection = True
                return
            self._answer(status if valid else 401, ok)
            if valid and 200 <= status < 300:
                now = time.time()
                with stats.lock:
                    stats.first_at = stats.first_at or now
                    stats.last_at = now

        def do_GET(self):
            with stats.lock:
                body = json.dumps(stats.arrivals if self.path == "/arrivals" else stats.as_dict()).encode()
            self._answer(200, body)

        def log_message(self, *args):
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("secret")
    parser.add_argument("--status", type=int, default=200, help="status of every answer to a signed request")
    parser.add_argument("--hang", type=float, default=0, help="seconds to hold each signed request unanswered")
    args = parser.parse_args()
    handler = make_handler(args.secret.encode(), Stats(), status=args.status, hang=args.hang)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    print(f"receiver listening on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
