"""What Django answered from a cached representation, recorded for config/server/fast_reads.py to
answer again before Django, with what the answer depended on. Why it exists: only Django knows what
an answer was made of (the key it authenticated, the version it read, the budget it charged).

Runs on the application's thread once Django answered. Recorded only when the API key's entry holds
the very values the request was authenticated with, and the channel's version entry the version the
representation was stored under (a change committed meanwhile deleted one: nothing is recorded); a
later change deletes one, and the fast path finds it gone (apps/core/coherence.py).
"""

import hashlib
import pickle
import re

from django.conf import settings

from apps.api import observability, ratelimit, representations
from apps.api.representations import ANSWERED_FROM, Answered
from apps.channels.selectors import channel_version
from apps.core.coherence import LEASE, configured, entry_key, readable, redis_location, shared
from apps.users.selectors import api_key_entry_values
from config.server.answers import FIELDS, REMAINING, REQUEST_ID, RESET
from config.server.fast_reads import FastReads

# The entry each version is read from, by the function reading it; others (a post's by its id alone) are not recorded.
VERSION_ENTRIES = {channel_version: "c"}

# Where asgi.py notes the request's key for the recorder.
ANSWER_KEY = "cps.answer_key"


def fast_reads() -> FastReads | None:
    """The fast path of this process, or None when it is off (WEB_FAST_READS) or cannot be certain:
    without cached representations, or without Redis and PostgreSQL's notifications (the entries)."""
    location = redis_location()
    if not (settings.WEB_FAST_READS and settings.API_CACHE_SECONDS and configured() and location):
        return None

    def window(now: float) -> tuple[int, int]:
        reset = ratelimit.window_end(now)
        return reset, reset - int(now) + ratelimit.EXPIRY_GRACE

    return FastReads(
        namespace=f"answers:{representations.code_digest()}:{settings_digest()}",
        location=location,
        options=settings.CACHES["default"].get("OPTIONS", {}),
        clock=ratelimit.clock,
        window=window,
        request_id_of=observability.request_id_of,
        log_request=observability.log_request,
    )


def settings_digest() -> str:
    """Changes with any setting (a limit, a security header's): a restart with other settings never
    gives an answer recorded under the old ones. Addresses and sets' orders differ between processes."""
    values = [(name, getattr(settings, name)) for name in sorted(dir(settings)) if name.isupper()]
    values = [(name, sorted(map(repr, v)) if isinstance(v, set | frozenset) else v) for name, v in values]
    return hashlib.sha256(re.sub(r" at 0x[0-9a-f]+", "", repr(values)).encode()).hexdigest()[:16]


def record(environ: dict, messages: list[dict]) -> bool:
    """Record Django's answer to the request of `environ` (its ASGI messages) when it may be given
    again without Django; whether it was."""
    key = environ.get(ANSWER_KEY)
    answered = environ.get(ANSWERED_FROM)
    if key is None or answered is None or len(messages) != 2 or messages[0]["status"] not in (200, 304):
        return False
    entry = recorded(answered, messages[0]["status"], messages[0]["headers"])
    if entry is None:
        return False
    ok, _ = shared.call(lambda client: client.set(key, entry, ex=settings.API_CACHE_SECONDS), "record an answer")
    return ok


def recorded(answered: Answered, status: int, headers: list) -> bytes | None:
    """The recorded answer (fast_reads.FIELDS, the status, the headers), or None when it is not certain."""
    api_key, budget = answered.api_key, answered.budget
    if budget is None or api_key.last_used_at is None:
        return None
    depends_on, counted = depends_on_as_read(answered), counter(api_key, budget)
    head = recorded_headers(headers, budget)
    etag = dict(headers).get(b"etag")
    representation = representations.store.redis_key(answered.key)
    if None in (depends_on, counted, head, etag, representation):
        return None
    touch_due = api_key.last_used_at.timestamp() + settings.API_KEY_LAST_USED_RESOLUTION
    fields = {
        "expires": repr(api_key.expires_at.timestamp()),
        "touch_due": repr(touch_due),
        "limit": counted[1],
        "counter": counted[0],
        "representation": representation,
        "etag": etag.decode("latin-1"),
        "depends_on": depends_on,
        "account": str(api_key.account_id),
    }
    lines = [fields[name].encode("latin-1") for name in FIELDS]
    return b"\n".join([*lines, str(status).encode(), *head])


def depends_on_as_read(answered: Answered) -> str | None:
    """The entries of the key and of the version (`name sha1` pairs), when they still hold what the
    answer was made from; None otherwise (one changed meanwhile, or is being filled)."""
    kind = VERSION_ENTRIES.get(answered.version_of)
    if kind is None or not readable():
        return None
    entries = (entry_key("k", answered.api_key.prefix), entry_key(kind, answered.identifier))
    ok, values = shared.call(lambda client: client.mget(entries), "read what an answer depends on")
    if not ok or any(value is None or value.startswith(LEASE) for value in values):
        return None
    # The service's own entries (apps/core/coherence.py's Entries store them pickled).
    key_values, version = (pickle.loads(value) for value in values)  # noqa: S301
    if key_values != api_key_entry_values(answered.api_key) or version != answered.version:
        return None
    return " ".join(f"{entry} {sha1(value)}" for entry, value in zip(entries, values, strict=True))


def counter(api_key, budget) -> tuple[str, str] | None:
    """The account's counter (its key in Redis but the window's end) and limit; empty for an
    unlimited plan; None when the request was not counted (the counters unreachable)."""
    if budget.limit is None:
        return "", ""
    full = ratelimit.store.counter_key(ratelimit.account_budget_name(api_key.account_id), budget.reset)
    if budget.used is None or full is None or not full.endswith(str(budget.reset)):
        return None
    return full.removesuffix(str(budget.reset)), str(budget.limit)


def sha1(value: bytes) -> str:
    """What Redis's Lua `redis.sha1hex` gives: the fast path compares entries to this, not a secret."""
    return hashlib.sha1(value).hexdigest()  # noqa: S324


def recorded_headers(headers: list, budget) -> list[bytes] | None:
    """The answer's headers, the request's own values in their places; None when one of them is not
    what this request's budget says, or when the answer sets a cookie (a session's: not a cached read)."""
    own = {b"x-request-id": None, b"x-ratelimit-remaining": budget.remaining, b"x-ratelimit-reset": budget.reset}
    placeholder = {b"x-request-id": REQUEST_ID, b"x-ratelimit-remaining": REMAINING, b"x-ratelimit-reset": RESET}
    lines = []
    for name, value in headers:
        if name == b"set-cookie" or b"\n" in value:
            return None
        if name in own:
            if own[name] is not None and value != str(own[name]).encode():
                return None
            value = placeholder[name]
        lines.append(b"%s: %s" % (name, value))
    return lines
