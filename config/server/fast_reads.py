"""Cached API reads and cached blog pages answered in the event loop, before Django, when Redis
alone makes the answer certain (WEB_FAST_READS, on by default).

Why it exists: a cached read costs Django's whole stack and the hand-over to a thread (about a
millisecond of CPU) to send bytes that were already in Redis. Here a request is answered from a
*recorded answer*: what Django answered to exactly this request (its method, scheme, path, query
and every header but X-Request-ID, hashed into the entry's key), written by config/server/recording.py
once Django answered it from a cached representation, with what that answer depended on:

- the API key's entry in the shared cache (`rows:k:<prefix>`: the key, its account and its user,
  deleted by the database's notifications when any of them changes: a revocation, a new scope, a
  deactivated user, another plan) and the channel's version entry (`rows:c:<id>`), each as the
  SHA-1 of the bytes Django's answer was made from;
- the stored representation's ETag (the bytes sent, so also whether If-None-Match still matches);
- the key's expiry, and when its last use is due to be written again (API_KEY_LAST_USED_RESOLUTION);
- the account's limit and its counter.

A blog page read from the page cache (apps/blog/pages.py) depends on less: the entry its blog was
found by (`rows:h:<handle>`, or `rows:d:<domain>` on its own domain; deleted at every change of the
channel or of what its pages show, since each gives the channel a new version) and the stored page,
whose first line (its headers: ETag, Last-Modified, ...) must be the one Django sent. No key, no
limit, no expiry; a request with a cookie or an Authorization header is never answered here.

One Lua script (fast_reads.lua) checks all of it and counts the request in the account's window,
atomically, in one round trip. Anything it cannot confirm (no recorded answer, an entry changed or
gone, an expired or due key, a budget this request would exceed) answers nothing and counts nothing:
Django answers and counts the request, once. The answer is the recorded one with this request's
X-Request-ID and rate-limit figures, logged as RequestLogMiddleware logs. Redis unreachable: the
fast path is left alone for a few seconds and Django answers (failing open as it always did).
"""

import logging
import time
from pathlib import Path

import redis
import redis.asyncio

from config.server.answers import PAGES, REMAINING, REQUEST_ID, RESET, parse

log = logging.getLogger("cps.web")

# How many keys of recorded answers a process remembers.
MAX_REMEMBERED = 100_000
# How long the fast path is left alone after Redis failed it.
RETRY_AFTER = 5.0

# The one round trip: the checks, the count and the bytes (KEYS[1]: the recorded answer).
ANSWER = (Path(__file__).parent / "fast_reads.lua").read_text()


class FastReads:
    """The fast path of one worker process. `clock`, `window(now)` -> (its end, a counter's time to
    live), `request_id_of` and `log_request`: the rate limit's and the request log's (apps.api), so
    that both paths count and log alike."""

    def __init__(
        self, *, namespace: str, location: str, options: dict, clock, window, request_id_of, log_request
    ) -> None:
        self.namespace = namespace
        self.clock = clock
        self.location = location
        self.options = options
        self.window = window
        self.request_id_of = request_id_of
        self.log_request = log_request
        self.paused_until = 0.0
        self._script = None
        self.answered = 0  # requests answered here, for the tests and the bench
        # The recorded answers this process wrote: only their requests are looked up, so a request
        # that is never recorded (an uncached endpoint) costs no round trip.
        self.recorded: set[str] = set()
        # The public pages' requests seen once: their answers are recorded from their second on.
        self.pages_seen: set[str] = set()
        self.pages = f"{namespace}:{PAGES}:"

    def remember(self, key: str) -> None:
        """Called once this process recorded the answer to `key` (from the application's threads)."""
        if len(self.recorded) >= MAX_REMEMBERED:
            self.recorded.clear()  # each key is recorded again at its next request
        self.recorded.add(key)

    def to_record(self, key: str) -> bool:
        """Whether Django's answer to `key` is to be recorded: an API read's always (its clients
        ask again and again); a public page's from the second time the very same request comes:
        readers' browsers send headers of their own, many a request is never made again, and the
        recording would cost it about a third more CPU (the entry read, the answer written)."""
        if not key.startswith(self.pages) or key in self.pages_seen:
            return True
        if len(self.pages_seen) >= MAX_REMEMBERED:
            self.pages_seen.clear()
        self.pages_seen.add(key)
        return False

    @property
    def script(self):
        # Made in the worker, in its event loop: connections do not survive the fork.
        if self._script is None:
            client = redis.asyncio.Redis.from_url(
                self.location,
                socket_connect_timeout=self.options.get("socket_connect_timeout"),
                socket_timeout=self.options.get("socket_timeout"),
            )
            self._script = client.register_script(ANSWER)
        return self._script

    async def answer(self, environ: dict, key: str) -> list[dict] | None:
        """The ASGI messages of the recorded answer, or None: Django answers."""
        started = time.monotonic()
        if started < self.paused_until or key not in self.recorded:
            return None
        now = self.clock()
        reset, ttl = self.window(now)
        try:
            found = await self.script(keys=[key], args=[repr(now), reset, ttl])
        except redis.RedisError:
            log.warning("Fast reads: Redis unreachable; Django answers for the next %ss", RETRY_AFTER, exc_info=True)
            self.paused_until = started + RETRY_AFTER
            return None
        if not found:
            return None
        entry, representation, used = found
        fields, status, recorded = parse(entry)
        head_lines = int(fields["head_lines"])
        body = representation.split(b"\n", head_lines)[head_lines] if status == 200 else b""
        request_id = self.request_id_of(environ.get("HTTP_X_REQUEST_ID", ""))
        own = {REQUEST_ID: request_id.encode(), RESET: str(reset).encode()}
        if used:
            own[REMAINING] = str(max(0, int(fields["limit"]) - int(used))).encode()
        headers = [(name, own.get(value, value)) for name, value in recorded]
        self.answered += 1
        self.log_request(
            "GET",
            environ["PATH_INFO"],
            status,
            (time.monotonic() - started) * 1000,
            int(fields["account"]) if fields["account"] else None,
            request_id,
        )
        return [
            {"type": "http.response.start", "status": status, "headers": headers},
            {"type": "http.response.body", "body": body},
        ]
