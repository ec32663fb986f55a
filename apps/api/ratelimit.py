"""Fixed-window request budgets, counted in the shared cache.

Two budgets exist. Every request authenticated by a valid key is charged to its **account**, with
a limit per plan and per clock hour (settings.RATE_LIMITS). Every 401 is charged to the client
**address** (settings.RATE_LIMIT_AUTH_FAILURES per hour), and an address that has used that budget
up gets 429 for everything under /v1 until the hour ends, so a key-guessing loop is slowed.

Counters live in the default cache: Redis when REDIS_URL is set, so every gunicorn worker on every
machine shares them; the local-memory cache otherwise. When the cache cannot be reached the API
keeps serving (fail open): the outage is logged, and for a short while the store is not asked
again, so a hung Redis costs at most one socket timeout per process per pause.
"""

import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework import exceptions
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

HOUR = 3600
ADMIN_LOGIN_WINDOW = 15 * 60
# Counters outlive their window by this much, so a machine whose clock runs a little behind still
# finds the counter of the window it thinks it is in.
EXPIRY_GRACE = 60
# After a failure the store is left alone for this long before it is tried again.
STORE_RETRY_AFTER = 10.0


def clock() -> float:
    """Unix time; the one clock of this module, replaced by tests that move time."""
    return time.time()


def window_end(now: float, period: int = HOUR) -> int:
    """Unix time at which the fixed window containing `now` ends (windows are aligned to the epoch)."""
    return (int(now // period) + 1) * period


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or the X-Forwarded-For entry NUM_PROXIES hops from the right."""
    return BaseThrottle().get_ident(request) or "unknown"


@dataclass(frozen=True)
class Budget:
    """One budget as a response reports it. `limit` None: unlimited; `used` None: the store was unreachable."""

    limit: int | None
    used: int | None
    reset: int

    @property
    def remaining(self) -> int | None:
        if self.limit is None or self.used is None:
            return None
        return max(0, self.limit - self.used)

    @property
    def exhausted(self) -> bool:
        return self.remaining == 0

    @property
    def exceeded(self) -> bool:
        """True when the request that was just counted went over the limit."""
        return self.limit is not None and self.used is not None and self.used > self.limit

    def retry_after(self) -> int:
        return max(1, math.ceil(self.reset - clock()))

    def headers(self) -> dict[str, str]:
        if self.limit is None:
            return {"X-RateLimit-Limit": "unlimited"}
        headers = {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Reset": str(self.reset)}
        if self.remaining is not None:
            headers["X-RateLimit-Remaining"] = str(self.remaining)
        return headers


class CounterStore:
    """Per-window counters in the default cache. `namespace` keeps separate sets of counters apart."""

    def __init__(self, namespace: str = "ratelimit") -> None:
        self.namespace = namespace
        self.paused_until = 0.0

    def hit(self, name: str, reset: int, now: float) -> int | None:
        """Count one request in `name`'s window ending at `reset`; the new count, or None when unreachable."""
        return self._call(self._increment, f"{self.namespace}:{name}:{reset}", reset - int(now) + EXPIRY_GRACE, now)

    def peek(self, name: str, reset: int, now: float) -> int | None:
        return self._call(self._read, f"{self.namespace}:{name}:{reset}", None, now)

    def _call(self, operation, key: str, ttl: int | None, now: float) -> int | None:
        if now < self.paused_until:
            return None
        try:
            return operation(caches["default"], key, ttl)
        except Exception:
            self.paused_until = now + STORE_RETRY_AFTER
            logger.warning(
                "Rate-limit counters unreachable; serving without limits for the next %ss",
                STORE_RETRY_AFTER,
                exc_info=True,
            )
            return None

    @staticmethod
    def _increment(backend, key: str, ttl: int) -> int:
        if isinstance(backend, RedisCache):
            full_key = backend.make_and_validate_key(key)
            client = _redis_client(backend)
            # INCR and EXPIRE in one MULTI: one round trip, atomic across processes, and no counter
            # is ever left without an expiry.
            count, _ = client.pipeline(transaction=True).incr(full_key).expire(full_key, ttl).execute()
            return count
        # The window is part of the key and outlives its window, so the key cannot vanish between
        # add and incr; incr is atomic in the local-memory cache.
        backend.add(key, 0, ttl)
        return backend.incr(key)

    @staticmethod
    def _read(backend, key: str, ttl: None) -> int:
        if isinstance(backend, RedisCache):
            # The counters are INCR's plain integers: no need for the cache's unpickling.
            return int(_redis_client(backend).get(backend.make_and_validate_key(key)) or 0)
        return int(backend.get(key) or 0)


def _redis_client(backend: RedisCache):
    """The client of the backend's primary server, made once per backend instance (Django's own
    cache calls build a new client object, with its table of response callbacks, each time, a
    sizeable part of a request that only peeks at a counter). Backends are per thread, like
    this client; the connection pool behind it is the backend's."""
    client = backend.__dict__.get("_ratelimit_client")
    if client is None:
        client = backend.__dict__["_ratelimit_client"] = backend._cache.get_client(write=True)
    return client


store = CounterStore()

# The attribute of the Django request that holds the budget the request was charged to.
REQUEST_ATTRIBUTE = "rate_limit"


def _budget(name: str, limit: int | None, *, count: bool, period: int = HOUR) -> Budget:
    now = clock()
    reset = window_end(now, period)
    if limit is None:
        return Budget(limit=None, used=None, reset=reset)
    operation = store.hit if count else store.peek
    return Budget(limit=limit, used=operation(name, reset, now), reset=reset)


def enforce_account_budget(http_request, account) -> Budget:
    """Count one request against the account's hourly budget; raise 429 when it is used up."""
    budget = _budget(f"account:{account.pk}", settings.RATE_LIMITS[account.plan], count=True)
    setattr(http_request, REQUEST_ATTRIBUTE, budget)
    if budget.exceeded:
        raise exceptions.Throttled(
            wait=budget.retry_after(),
            detail=f"This account's limit of {budget.limit} requests per hour is used up.",
            code="rate_limit_exceeded",
        )
    return budget


def auth_failures(address: str, *, count: bool = False) -> Budget:
    """The address's hourly budget of 401s; `count=True` records one more."""
    return _budget(f"auth-failures:{address}", settings.RATE_LIMIT_AUTH_FAILURES, count=count)


def admin_login_failures(address: str, *, count: bool = False) -> Budget:
    """The address's budget of failed logins per ADMIN_LOGIN_WINDOW; `count=True` records one more."""
    return _budget(
        f"admin-login-failures:{address}", settings.ADMIN_LOGIN_FAILURE_LIMIT, count=count, period=ADMIN_LOGIN_WINDOW
    )
