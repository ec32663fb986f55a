"""Entries in the shared cache (Redis) that stand for rows of the database, so that a request can
trust them without asking the database, kept exact by the database itself.

The rule: a trigger on every table whose rows an entry stands for calls `cps_cache_invalidate`
(channels 0007, accounts 0006), which NOTIFYs the writing session, on a channel named after that
session's own backend process, with the entry's name (`c:<channel id>`, `k:<key prefix>`, ...).
PostgreSQL delivers a notification only when its transaction commits, and to the writing session
itself before the COMMIT returns, so the writer deletes the entry after its change is visible and
before it answers anyone: every process of the service (web, worker, beat, commands) listens on its
own connections (`listen`, on Django's `connection_created`), and a change made through any of
them, by any path (services, the Settings area, bulk statements, cascades, raw SQL), removes the
entries it makes stale. A rolled-back transaction notifies nobody.

A reader that misses puts a lease (a random token) in the entry's place, then reads the database,
then stores what it read only if its lease is still there (one Lua compare-and-set). A change
committed after the lease deletes the lease with the entry, so what the reader read before that
change is never stored; a change committed before the read is in what it read.

Where this cannot hold, entries are not used and the database is asked as before:
- without PostgreSQL and Redis (the embedded SQLite default, a LocMem cache in each process);
- inside a transaction (`in_atomic_block`): a reader there must see its own uncommitted writes;
- while Redis is unreachable: reads go to the database (fail open), and the deletions that
  failed are retried at the next call that reaches Redis. Until then, or if the writing process
  died first, an entry can be stale for at most API_LOOKUP_CACHE_SECONDS (its time to live).
Changes written by other clients of the database (psql, another program) notify nobody and are
seen when the entries expire. A pooler in transaction mode (PgBouncer) would separate LISTEN from
the writes: connect directly or in session mode (docs/operations.md).
"""

import logging
import pickle
import secrets
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import redis
from django.conf import settings
from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.backends.signals import connection_created
from redis.backoff import NoBackoff
from redis.retry import Retry

from apps.core.fail_open import FailOpen

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL = "cps_inval_{pid}"
LEASE = b"\x00lease:"
LEASE_SECONDS = 10
RETRY_AFTER = 5.0  # seconds without Redis after a failed call (one socket timeout per pause)

# The Lua compare-and-set of a filled lease: the entry is stored only where this reader's lease
# still stands.
_FILL = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
end
return 0
"""


def redis_location() -> str | None:
    """The Redis server of the default cache (config/settings/database.py: REDIS_URL), or None when the
    cache is another kind (each process's memory, without REDIS_URL)."""
    cache = settings.CACHES["default"]
    if not cache["BACKEND"].endswith(".RedisCache"):
        return None
    location = cache["LOCATION"]
    # Django's RedisCache writes to the first of several servers; so do we.
    return location[0] if isinstance(location, list | tuple) else location.split(",")[0]


def configured() -> bool:
    """Whether entries are used at all: PostgreSQL (its notifications) and Redis (one cache for
    every process), and a time to live."""
    return bool(settings.IS_POSTGRES and settings.API_LOOKUP_CACHE_SECONDS and redis_location())


def connect(url: str) -> redis.Redis:
    """A client of the Redis at `url` with the default cache's timeouts that tries each call once:
    the pause after a failure (fail_open) is the retry policy. Said here rather than left to
    redis-py, whose `Redis(host=...)` retries ten times with a backoff (four seconds for a refused
    connection, eleven timeouts for a hung server) where `from_url` does not."""
    options = settings.CACHES["default"].get("OPTIONS", {})
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=options.get("socket_connect_timeout"),
        socket_timeout=options.get("socket_timeout"),
        retry=Retry(NoBackoff(), 0),
    )


class Shared(FailOpen):
    """The process's client of the shared Redis (redis-py's public client; its pool is per process
    and is made anew after a fork), failing open (apps.core.fail_open): a failed call pauses its use
    for RETRY_AFTER seconds, and the deletions that could not be made are kept to be made first
    thereafter."""

    retry_after = RETRY_AFTER
    errors = (redis.RedisError,)
    logger = logger

    def __init__(self) -> None:
        super().__init__()
        self._client: redis.Redis | None = None
        self._fill: Any = None
        self.pending: set[str] = set()
        self._lock = threading.Lock()
        # Keeps separate sets of entries apart (the tests use one each).
        self.namespace = "rows"

    def client(self) -> redis.Redis:
        """The client of the default cache's server (`connect`)."""
        if self._client is None:
            self._client = connect(redis_location())
            self._fill = self._client.register_script(_FILL)
        return self._client

    def reset(self, *, setting: str, **kwargs) -> None:
        """A changed cache setting (tests) names another server: connect again, afresh."""
        if setting == "CACHES":
            self._client = None
            self.paused_until = 0.0

    def call(self, operation: Callable[[redis.Redis], Any], what: str) -> tuple[bool, Any]:
        """(True, result), or (False, None) when Redis could not be reached."""
        return self.attempt(self._run, operation, outage=f"Shared cache unreachable ({what}); asking the database")

    def _run(self, operation: Callable[[redis.Redis], Any]) -> Any:
        client = self.client()
        if self.pending:
            self._flush(client)
        return operation(client)

    def fill(self, key: str, lease: bytes, value: bytes, ttl: int) -> None:
        self.call(lambda client: self._fill(keys=[key], args=[lease, value, ttl], client=client), "fill")

    def delete(self, keys: list[str]) -> None:
        ok, _ = self.call(lambda client: client.delete(*keys), "invalidate")
        if not ok:
            with self._lock:
                self.pending.update(keys)

    def _flush(self, client: redis.Redis) -> None:
        with self._lock:
            keys, self.pending = list(self.pending), set()
        try:
            client.delete(*keys)
        except redis.RedisError:
            with self._lock:
                self.pending.update(keys)
            raise


shared = Shared()


def readable(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether a request may trust entries now: configured, Redis not paused, and not inside a
    transaction (which may hold writes the entries cannot know of yet)."""
    return configured() and shared.available() and not connections[using].in_atomic_block


class Stored(NamedTuple):
    """An entry as it stands in the shared cache: its Redis key, its bytes and what they hold."""

    key: str
    raw: bytes
    value: Any


class Entries:
    """Entries of one kind (`kind`, the prefix of the notifications that invalidate them), keyed by
    an identifier, holding what `load(identifier)` returns (None is never stored)."""

    def __init__(
        self,
        kind: str,
        load: Callable[[Any], Any],
        *,
        dump: Callable[[Any], bytes] = pickle.dumps,
        parse: Callable[[bytes], Any] = pickle.loads,
    ) -> None:
        self.kind = kind
        self.load = load
        self.dump = dump
        self.parse = parse

    def key(self, identifier) -> str:
        return entry_key(self.kind, identifier)

    def get(self, identifier):
        """What `load(identifier)` returns, from the entry when one stands."""
        if not readable():
            return self.load(identifier)
        key = self.key(identifier)
        ok, raw = shared.call(lambda client: client.get(key), "read")
        if raw is not None and not raw.startswith(LEASE):
            return self.parse(raw)
        if not ok:
            return self.load(identifier)
        lease = LEASE + secrets.token_bytes(12)
        ok, leased = shared.call(lambda client: client.set(key, lease, nx=True, ex=LEASE_SECONDS), "lease")
        value = self.load(identifier)
        if leased and value is not None:
            shared.fill(key, lease, self.dump(value), settings.API_LOOKUP_CACHE_SECONDS)
        return value

    def stored(self, identifier) -> Stored | None:
        """The entry of `identifier` as it stands now, or None when none does (never stored, deleted,
        being filled, or not to be trusted now: see `readable`). Neither loads nor fills: for a
        caller that must know what a request read from the entry is still there (the web process's
        recorded answers, config/server/recording.py)."""
        if not readable():
            return None
        key = self.key(identifier)
        ok, raw = shared.call(lambda client: client.get(key), "read")
        if not ok or raw is None or raw.startswith(LEASE):
            return None
        return Stored(key, raw, self.parse(raw))


class Columns:
    """Some columns of a model (those `keep(field)` accepts), in the order Model.from_db takes values:
    an instance to the tuple an entry stores, and back to an instance as the ORM would load it (the
    columns left out are deferred, read from the database if ever asked for)."""

    def __init__(self, model: type, keep: Callable[[Any], bool] = lambda field: True) -> None:
        self.model = model
        self.names = tuple(field.attname for field in model._meta.concrete_fields if keep(field))

    def values(self, instance) -> tuple:
        return tuple(getattr(instance, name) for name in self.names)

    def instance(self, values: tuple):
        return self.model.from_db(router.db_for_read(self.model), self.names, values)


def entry_key(kind: str, identifier) -> str:
    """The Redis key of an entry; every kind's entries are named alike, so a notification needs no
    knowledge of the code that reads them (a worker forgets blog entries it never reads)."""
    return f"{shared.namespace}:{kind}:{identifier}"


def forget(payload: str) -> None:
    """Delete the entry a notification names (`kind:identifier`)."""
    kind, _, identifier = payload.partition(":")
    if configured() and identifier:
        shared.delete([entry_key(kind, identifier)])


def claim(name: str, seconds: int) -> bool:
    """Whether this caller is the first to claim `name` in `seconds` (one SET NX). True when entries
    are not in use or Redis cannot be reached: claims only spare repeated work."""
    if not readable():
        return True
    key = f"claims:{name}"
    ok, won = shared.call(lambda client: client.set(key, b"1", nx=True, ex=seconds), "claim")
    return bool(won) or not ok


def _notified(notify) -> None:
    # Called by psycopg while it reads the COMMIT's answer: never raise into it.
    try:
        forget(notify.payload)
    except Exception:
        logger.exception("Cache invalidation %r failed", notify.payload)


def listen(sender, connection, **kwargs) -> None:
    """On each new PostgreSQL connection: LISTEN on the channel its own triggers notify."""
    if connection.vendor != "postgresql" or not configured():
        return
    raw = connection.connection
    with raw.cursor() as cursor:
        cursor.execute(f"LISTEN {NOTIFY_CHANNEL.format(pid=raw.info.backend_pid)}")
    raw.add_notify_handler(_notified)


def install() -> None:
    connection_created.connect(listen, dispatch_uid="apps.core.coherence.listen")
    setting_changed.connect(shared.reset, dispatch_uid="apps.core.coherence.reset")
