"""Failed sign-ins with a password: two budgets, django-axes' and the e-mail's, on the rate-limit
counters (apps/api/ratelimit.py), and the answer to a refused one (`login_throttled`).

Failed sign-ins (Django's user_login_failed, sent wherever a password is checked with a request: the
admin's login, the web sign-in, the step-up's password confirmation) are counted in two budgets:
- per client address, by axes: an address with ADMIN_LOGIN_FAILURE_LIMIT of them is refused until
  ADMIN_LOGIN_WINDOW after its last counted failure;
- per e-mail, from any address, beside axes: an e-mail with SIGN_IN_FAILURE_LIMIT_PER_EMAIL of them in
  a clock hour is refused until the hour ends, and the people who look after its user are told once
  (apps.users.services.sign_in_pause_report). An e-mail that is no user's is counted and refused
  alike, so the answers do not tell which e-mails exist.
axes' backend, first in AUTHENTICATION_BACKENDS, asks the handler's is_locked() before the password is
checked; its middleware answers a refused attempt with 429 (login_throttled, below).
Refused attempts are counted in neither budget, so they do not prolong a pause. See the AXES_* settings.

The e-mail is not one of axes' lockout parameters (AXES_LOCKOUT_PARAMETERS = [..., "username"]): axes
compares the largest of its counters with one limit and one cool-off for every parameter, and keys a
counter by the bare hash of its value, so a "username" spelt like an address would count against
that address.
"""

import ipaddress
import logging
import math
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from hashlib import sha256

from axes.backends import AxesStandaloneBackend
from axes.handlers.cache import AxesCacheHandler
from axes.helpers import get_client_cache_keys, get_client_username
from django.conf import settings
from django.contrib import admin
from django.core.cache.backends.redis import RedisCache
from django.db import connections
from django.template.response import TemplateResponse

from apps.api import ratelimit
from apps.api.ratelimit import HOUR, Budget, CounterStore, client_address
from apps.core import threads
from apps.core.coherence import shared
from apps.users.services import sign_in_pause_report

logger = logging.getLogger(__name__)

# Failed logins of an address are remembered this long after its last one (AXES_COOLOFF_TIME).
ADMIN_LOGIN_WINDOW = 15 * 60

# The e-mail's window; its latest distinct addresses kept for the report (all of them while its limit is
# at most that many); threads that send reports.
EMAIL_WINDOW = HOUR
ADDRESSES_KEPT = 100
REPORT_POOL, REPORT_THREADS = "sign-in-reports", 2
# The attribute of the Django request that says which budgets refused its sign-in (a SignInPause).
PAUSE_ATTRIBUTE = "sign_in_pause"


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
        result = self.counters.run(operation, key, now=ratelimit.clock())
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
                ttl = shared.client().ttl(full_key)
                return ttl if ttl > 0 else None  # -2: no such key, -1: no expiry
            expiry = getattr(backend, "_expire_info", {}).get(full_key)  # LocMemCache
            return None if expiry is None else math.ceil(expiry - time.time())

        return self._run(read, key, None)


class LoginThrottleBackend(AxesStandaloneBackend):
    """First in AUTHENTICATION_BACKENDS: refuses a sign-in whose address or e-mail has used up its failed
    logins (LoginFailureHandler.is_locked). authenticate() without a request (the test client's login(),
    management code) is no login from an address: there is nothing to throttle, and axes' own backend
    would raise instead."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


@dataclass(frozen=True)
class SignInPause:
    """Which budgets refused a sign-in: its address's, and its e-mail's (the budget, when used up)."""

    by_address: bool
    email: Budget | None


class LoginFailureHandler(AxesCacheHandler):
    """AXES_HANDLER: axes' cache handler, counting in LoginFailureCounters, with the e-mail's budget
    checked and counted beside the address's."""

    def __init__(self) -> None:
        pass  # no cache of its own: `store` is looked up on each use (tests give each test its own)

    @property
    def cache(self) -> LoginFailureCounters:
        return LoginFailureCounters(ratelimit.store)

    def is_locked(self, request, credentials=None) -> bool:
        email = sign_in_email(request, credentials)
        email_budget = email_failures(email) if email else None
        pause = SignInPause(
            by_address=super().is_locked(request, credentials),
            email=email_budget if email_budget is not None and email_budget.exhausted else None,
        )
        setattr(request, PAUSE_ATTRIBUTE, pause)
        return pause.by_address or pause.email is not None

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        # Set by axes' backend when is_locked() refused the attempt: no password was checked.
        refused = getattr(request, "axes_locked_out", False)
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is not None and not refused:
            count_email_failure(request, credentials)


def sign_in_pause(request) -> SignInPause:
    """Why the request's sign-in was refused; by its address when nothing else says (axes alone)."""
    return getattr(request, PAUSE_ATTRIBUTE, None) or SignInPause(by_address=True, email=None)


def sign_in_email(request, credentials) -> str:
    """The e-mail a sign-in names, as its budget counts it: stripped and lower-case ('' for none)."""
    return str(get_client_username(request, credentials) or "").strip().lower()


def _email_counter(email: str) -> str:
    # Hashed: a key of fixed length and alphabet whatever was typed, and nobody's e-mail in the store.
    return f"sign-in-failures:{sha256(email.encode()).hexdigest()}"


def email_failures(email: str, *, count: bool = False) -> Budget:
    """The e-mail's budget of failed sign-ins from any address, per clock hour; `count=True` records one more."""
    limit = settings.SIGN_IN_FAILURE_LIMIT_PER_EMAIL
    return ratelimit.window_budget(_email_counter(email), limit, count=count, period=EMAIL_WINDOW)


def _printable_address(address: str) -> str:
    """An address as a report shows it: whatever else a forwarded-for header carried is not repeated."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return "(not an IP address)"


def count_email_failure(request, credentials) -> None:
    """Count a failed sign-in in its e-mail's budget; the failure that uses the budget up reports it."""
    email = sign_in_email(request, credentials)
    if not email:
        return
    budget = email_failures(email, count=True)
    if budget.used is None:  # no limit, or the store is unreachable
        return
    address = _printable_address(client_address(request))
    addresses = ratelimit.store.remember(
        f"{_email_counter(email)}:addresses", address, budget.reset, ratelimit.clock(), ADDRESSES_KEPT
    )
    if budget.used == budget.limit:
        _report_pause(email, budget, addresses or [address])


def _report_pause(email: str, budget: Budget, addresses: list[str]) -> None:
    until = datetime.fromtimestamp(budget.reset, tz=UTC)
    logger.warning(
        "Password sign-ins for e-mail %r paused until %s: %s failed from %s address(es), latest %s",
        email,
        f"{until:%Y-%m-%d %H:%M} UTC",
        budget.used,
        len(addresses),
        addresses[-1],
    )
    since = until - timedelta(seconds=EMAIL_WINDOW)
    report = partial(
        sign_in_pause_report, email=email, failures=budget.used, addresses=addresses, since=since, until=until
    )
    # On a thread of its own: were the mail sent in this request, the time its answer takes would tell
    # that the e-mail belongs to someone.
    if threads.process_pool(REPORT_POOL, REPORT_THREADS).submit(_on_own_connection, report, block=False) is None:
        logger.warning("The report of paused sign-ins for e-mail %r was not sent: its threads are busy", email)


def login_lockout_seconds(request, credentials=None) -> int:
    """Seconds until a refused sign-in may be tried again: until each budget that refused it has room."""
    pause = sign_in_pause(request)
    waits = [pause.email.retry_after()] if pause.email is not None else []
    if pause.by_address:
        counters = LoginFailureCounters(ratelimit.store)
        left = [counters.seconds_left(key) for key in get_client_cache_keys(request, credentials)]
        known = [seconds for seconds in left if seconds]
        waits.append(max(1, min(max(known), ADMIN_LOGIN_WINDOW)) if known else ADMIN_LOGIN_WINDOW)
    return max(waits)


def login_throttled(request, original_response, credentials):
    """AXES_LOCKOUT_CALLABLE: the answer to a login attempt (admin site, web sign-in, step-up) whose
    address or e-mail has used up its failed logins. It says which, and never whether the e-mail
    belongs to anyone."""
    if getattr(request, "axes_failures_since_start", None) is not None:
        # This attempt's password was checked and its failure is the one that reached the limit: it
        # gets the form with its error, like the failures before it; the next attempt is refused.
        return original_response
    retry_after = login_lockout_seconds(request, credentials)
    pause = sign_in_pause(request)
    context = {
        **admin.site.each_context(request),
        "retry_minutes": -(-retry_after // 60),
        "by_address": pause.by_address,
        "by_email": pause.email is not None,
    }
    response = TemplateResponse(
        request, "admin/login_throttled.html", context, status=429, headers={"Retry-After": str(retry_after)}
    )
    return response.render()


def _on_own_connection(work) -> None:
    try:
        work()
    finally:
        # A report is rare: the thread keeps no database connection open in between (CONN_MAX_AGE would).
        connections.close_all()
