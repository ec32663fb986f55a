"""Fixed-window request budgets, counted in the shared cache.

Two budgets exist. Every request authenticated by a valid key is charged to its **account**, with
a limit per plan and per clock hour (settings.RATE_LIMITS). Every 401 is charged to the client
**address** (settings.RATE_LIMIT_AUTH_FAILURES per hour); once an address has used that budget up,
its requests that fail authentication get 429 until the hour ends, so a key-guessing loop is
slowed, while its requests with a valid key are served (many clients can share one address).
Failed sign-ins with a password have two budgets of their own, per address and per e-mail, on
these counters (apps/users/sign_in_limits.py).

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

from apps.core.coherence import shared
from apps.core.fail_open import FailOpen

logger = logging.getLogger(__name__)

HOUR = 3600
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


class FailOpenStore(FailOpen):
    """Calls into the default cache that fail open (apps.core.fail_open): when the cache cannot be
    reached, a call answers None, the outage is logged with its cause, and the cache is not asked
    again for STORE_RETRY_AFTER seconds."""

    outage = "Cache unreachable"  # the log's words, before "for the next Ns"
    retry_after = STORE_RETRY_AFTER
    traceback = True
    logger = logger

    def _call(self, operation, key: str, *args, now: float):
        return self.attempt(lambda: operation(caches["default"], key, *args), now=now)[1]


class CounterStore(FailOpenStore):
    """Per-window counters in the default cache. `namespace` keeps separate sets of counters apart."""

    outage = "Rate-limit counters unreachable; serving without limits"

    def __init__(self, namespace: str = "ratelimit") -> None:
        super().__init__()
        self.namespace = namespace

    def run(self, operation, name: str, *, now: float):
        """operation(cache, key) on the default cache, `name` keyed in this store's namespace; None
        when the cache is unreachable. For counters kept in a shape of their own (django-axes')."""
        return self._call(operation, f"{self.namespace}:{name}", now=now)

    def hit(self, name: str, reset: int, now: float) -> int | None:
        """Count one request in `name`'s window ending at `reset`; the new count, or None when unreachable."""
        key = f"{self.namespace}:{name}:{reset}"
        return self._call(self._increment, key, reset - int(now) + EXPIRY_GRACE, now=now)

    def counter_key(self, name: str, reset: int) -> str | None:
        """The Redis key of `name`'s counter of the window ending at `reset`; None without Redis."""
        backend = caches["default"]
        if not isinstance(backend, RedisCache):
            return None
        return backend.make_and_validate_key(f"{self.namespace}:{name}:{reset}")

    def peek(self, name: str, reset: int, now: float) -> int | None:
        return self._call(self._read, f"{self.namespace}:{name}:{reset}", None, now=now)

    def remember(self, name: str, item: str, reset: int, now: float, keep: int) -> list[str] | None:
        """Add `item` last to `name`'s list of the window ending at `reset` (distinct, the `keep` latest);
        the new list, or None when unreachable. Not atomic: two processes at once may drop each
        other's item, which is good enough for what only informs a person."""

        def add(backend, key: str, ttl: int) -> list[str]:
            items = [*(kept for kept in backend.get(key) or [] if kept != item), item][-keep:]
            backend.set(key, items, ttl)
            return items

        return self._call(add, f"{self.namespace}:{name}:{reset}", reset - int(now) + EXPIRY_GRACE, now=now)

    @staticmethod
    def _increment(backend, key: str, ttl: int) -> int:
        if isinstance(backend, RedisCache):
            full_key = backend.make_and_validate_key(key)
            client = shared.client()
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
            return int(shared.client().get(backend.make_and_validate_key(key)) or 0)
        return int(backend.get(key) or 0)


store = CounterStore()

# The attribute of the Django request that holds the budget the request was charged to.
REQUEST_ATTRIBUTE = "rate_limit"


def window_budget(name: str, limit: int | None, *, count: bool, period: int = HOUR) -> Budget:
    now = clock()
    reset = window_end(now, period)
    if limit is None:
        return Budget(limit=None, used=None, reset=reset)
    operation = store.hit if count else store.peek
    return Budget(limit=limit, used=operation(name, reset, now), reset=reset)


def account_budget_name(account_id: int) -> str:
    return f"account:{account_id}"


def enforce_account_budget(http_request, account) -> Budget:
    """Count one request against the account's hourly budget; raise 429 when it is used up."""
    budget = window_budget(account_budget_name(account.pk), settings.RATE_LIMITS[account.plan], count=True)
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
    return window_budget(f"auth-failures:{address}", settings.RATE_LIMIT_AUTH_FAILURES, count=count)
