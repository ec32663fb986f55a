"""Fixed-window request budgets, counted in the shared cache.

Two budgets exist. Every request authenticated by a valid key is charged to its **account**, with
a limit per plan and per clock hour (settings.RATE_LIMITS). Every 401 is charged to the client
**address** (settings.RATE_LIMIT_AUTH_FAILURES per hour); once an address has used that budget up,
its requests that fail authentication get 429 until the hour ends, so a key-guessing loop is
slowed, while its requests with a valid key are served (many clients can share one address).

Counters live in the default cache: Redis when REDIS_URL is set, so every gunicorn worker on every
machine shares them; the local-memory cache otherwise. When the cache cannot be reached the API
keeps serving (fail open): the outage is logged, and for a short while the store is not asked
again, so a hung Redis costs at most one socket timeout per process per pause.
"""

import logging
import math
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.handlers.cache import AxesCacheHandler
from axes.helpers import get_client_cache_keys
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from rest_framework import exceptions
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

HOUR = 3600
# Failed logins of an address are remembered this long after its last one (AXES_COOLOFF_TIME).
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


class FailOpenStore:
    """Calls into the default cache that fail open: when the cache cannot be reached, a call
    answers None and the outage is logged, and the cache is not asked again for
    STORE_RETRY_AFTER seconds, so a hung Redis costs one socket timeout per process per pause."""

    outage = "Cache unreachable"  # the log's words, before "for the next Ns"

    def __init__(self) -> None:
        self.paused_until = 0.0

    def _call(self, operation, key: str, *args, now: float):
        if now < self.paused_until:
            return None
        try:
            return operation(caches["default"], key, *args)
        except Exception:
            self.paused_until = now + STORE_RETRY_AFTER
            logger.warning("%s for the next %ss", self.outage, STORE_RETRY_AFTER, exc_info=True)
            return None


class CounterStore(FailOpenStore):
    """Per-window counters in the default cache. `namespace` keeps separate sets of counters apart."""

    outage = "Rate-limit counters unreachable; serving without limits"

    def __init__(self, namespace: str = "ratelimit") -> None:
        super().__init__()
        self.namespace = namespace

    def hit(self, name: str, reset: int, now: float) -> int | None:
        """Count one request in `name`'s window ending at `reset`; the new count, or None when unreachable."""
        key = f"{self.namespace}:{name}:{reset}"
        return self._call(self._increment, key, reset - int(now) + EXPIRY_GRACE, now=now)

    def peek(self, name: str, reset: int, now: float) -> int | None:
        return self._call(self._read, f"{self.namespace}:{name}:{reset}", None, now=now)

    @staticmethod
    def _increment(backend, key: str, ttl: int) -> int:
        if isinstance(backend, RedisCache):
            full_key = backend.make_and_validate_key(key)
            client = redis_client(backend)
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
            return int(redis_client(backend).get(backend.make_and_validate_key(key)) or 0)
        return int(backend.get(key) or 0)


def redis_client(backend: RedisCache):
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


# --- Failed logins: django-axes, on the counters above ---
#
# axes counts failed logins (Django's user_login_failed, sent wherever a password is checked with a
# request: the admin's and the web sign-in) by client address, and its authentication backend, first
# in AUTHENTICATION_BACKENDS, refuses an address that has ADMIN_LOGIN_FAILURE_LIMIT of them before the
# password is checked; its middleware answers that attempt with 429 (apps.api.middleware.login_throttled).
# The count ends ADMIN_LOGIN_WINDOW after the address's last counted failure; refused attempts are not
# counted, so they do not prolong it. See the AXES_* settings.


def admin_login_failure_limit(request, credentials) -> int:
    """AXES_FAILURE_LIMIT: ADMIN_LOGIN_FAILURE_LIMIT, read on each attempt; None (no limit) never locks."""
    limit = settings.ADMIN_LOGIN_FAILURE_LIMIT
    return sys.maxsize if limit is None else limit


def admin_login_cool_off(request) -> timedelta:
    """AXES_COOLOFF_TIME: how long an address's failed logins are remembered after the last one."""
    return timedelta(seconds=ADMIN_LOGIN_WINDOW)


class LoginFailureCounters:
    """The part of Django's cache API that axes' cache handler uses, on this module's store: the default
    cache, keys in the store's namespace, and failing open like the other counters (an unreachable
    store counts nothing and locks no one out, instead of failing the login page)."""

    def __init__(self, counters: CounterStore) -> None:
        self.counters = counters

    def _run(self, operation, key: str, default):
        """operation(backend, key) on the store; `default` when the store is unreachable."""
        result = self.counters._call(operation, f"{self.counters.namespace}:{key}", now=clock())
        return default if result is None else result

    def get(self, key: str, default=None):
        return self._run(lambda backend, key: backend.get(key, default), key, default)

    def add(self, key: str, value, timeout) -> bool:
        # Unreachable: reported as added, so axes takes this failure for the first one.
        return self._run(lambda backend, key: backend.add(key, value, timeout), key, True)

    def incr(self, key: str, delta: int = 1) -> int:
        def increment(backend, key: str) -> int:
            try:
                return backend.incr(key, delta)
            except ValueError:  # expired since axes' add(); axes' touch() sets its expiry again
                backend.add(key, delta)
                return delta

        return self._run(increment, key, 0)

    def touch(self, key: str, timeout) -> bool:
        return self._run(lambda backend, key: backend.touch(key, timeout), key, False)

    def delete(self, key: str) -> bool:
        return self._run(lambda backend, key: backend.delete(key), key, False)

    def seconds_left(self, key: str) -> int | None:
        """Seconds until the counter expires; None when it does not exist or the cache cannot tell."""

        def read(backend, key: str) -> int | None:
            full_key = backend.make_and_validate_key(key)
            if isinstance(backend, RedisCache):
                ttl = redis_client(backend).ttl(full_key)
                return ttl if ttl > 0 else None  # -2: no such key, -1: no expiry
            expiry = getattr(backend, "_expire_info", {}).get(full_key)  # LocMemCache
            return None if expiry is None else math.ceil(expiry - time.time())

        return self._run(read, key, None)


class LoginFailureHandler(AxesCacheHandler):
    """AXES_HANDLER: axes' cache handler, counting in LoginFailureCounters."""

    def __init__(self) -> None:
        pass  # no cache of its own: `store` is looked up on each use (tests give each test its own)

    @property
    def cache(self) -> LoginFailureCounters:
        return LoginFailureCounters(store)


class LoginThrottleBackend(AxesStandaloneBackend):
    """First in AUTHENTICATION_BACKENDS: refuses an address that has used up its failed logins.
    authenticate() without a request (the test client's login(), management code) is no login from an
    address: there is nothing to throttle, and axes' own backend would raise instead."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def login_lockout_seconds(request, credentials=None) -> int:
    """Seconds until a throttled address may try again: until its failed logins expire."""
    counters = LoginFailureCounters(store)
    left = [counters.seconds_left(key) for key in get_client_cache_keys(request, credentials)]
    known = [seconds for seconds in left if seconds]
    return max(1, min(max(known), ADMIN_LOGIN_WINDOW)) if known else ADMIN_LOGIN_WINDOW
