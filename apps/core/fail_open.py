"""The one rule of every store the service can do without (the shared cache's counters, entries,
rendered responses and anchors): fail open. A call that cannot reach the store answers as if the
store held nothing, the outage is logged once, and the store is left alone for a short pause, so
a hung server costs at most one socket timeout per process per pause instead of one per request."""

import logging
import time
from collections.abc import Callable
from typing import Any


class FailOpen:
    """Calls into a store, failing open. Subclasses set how long the pause lasts, which errors mean
    the store is unreachable, and what the log says (`outage`, followed by "for the next Ns")."""

    retry_after: float = 5.0
    errors: tuple[type[BaseException], ...] = (Exception,)
    outage = "Cache unreachable"
    traceback = False  # whether the warning carries the exception (redis-py's names the cause)
    logger = logging.getLogger(__name__)

    def __init__(self) -> None:
        self.paused_until = 0.0

    def available(self, now: float | None = None) -> bool:
        """Whether the store may be asked: no failure in the last `retry_after` seconds. `now` is
        the caller's clock (time.monotonic() by default; tests that move time give their own)."""
        return (time.monotonic() if now is None else now) >= self.paused_until

    def pause(self, outage: str | None = None, now: float | None = None) -> None:
        """Log the outage and leave the store alone for `retry_after` seconds."""
        self.paused_until = (time.monotonic() if now is None else now) + self.retry_after
        self.logger.warning("%s for the next %ss", outage or self.outage, self.retry_after, exc_info=self.traceback)

    def attempt(
        self, operation: Callable[..., Any], *args, now: float | None = None, outage: str | None = None
    ) -> tuple[bool, Any]:
        """(True, operation(*args)), or (False, None) when the store is paused or could not be reached."""
        if not self.available(now):
            return False, None
        try:
            return True, operation(*args)
        except self.errors:
            self.pause(outage, now)
            return False, None
