"""What Django answered from a cached representation or a cached blog page, recorded for
config/server/fast_reads.py to answer again before Django, with what the answer depended on.
Why it exists: only Django knows what an answer was made of (the key it authenticated, the version
it read, the budget it charged, the page and the channel it read).

Runs on the application's thread once Django answered. An API read is recorded only when the API
key's entry holds the very values the request was authenticated with, and the channel's version
entry the version the representation was stored under; a page only when the entry its blog was
found by (its handle's or its domain's) holds the channel the page was read under. A change
committed meanwhile deleted one: nothing is recorded; a later change deletes one, and the fast path
finds it gone (apps/core/coherence.py). The entries are read by the selectors of the apps that own
them, which say whether they still hold what the request read.
"""

import hashlib
import re

from django.conf import settings

from apps.api import observability, ratelimit, representations
from apps.api.representations import ANSWERED_FROM, Answered
from apps.blog import pages
from apps.channels.selectors import channel_version, channel_version_entry
from apps.core.coherence import configured, redis_location, shared
from apps.users.selectors import api_key_entry
from config.server.answers import entry_of, recorded_headers, sha1
from config.server.fast_reads import FastReads
from config.server.page_recording import recorded_page

# The entry each version is read from, by the function reading it; others (a post's by its id alone) are not recorded.
VERSION_ENTRIES = {channel_version: channel_version_entry}

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
        namespace=f"answers:{representations.code_digest()}:{pages.code_digest()}:{settings_digest()}",
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
    if key is None or len(messages) != 2:
        return False
    status, headers = messages[0]["status"], messages[0]["headers"]
    if (answered := environ.get(ANSWERED_FROM)) is not None and status in (200, 304):
        entry = recorded(answered, status, headers)
    elif (served := environ.get(pages.ANSWERED_FROM)) is not None and status == 200:
        # A 304 of a page (its validators matched) is Django's to answer each time.
        entry = recorded_page(served, headers)
    else:
        return False
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
        "head": etag.decode("latin-1"),
        "depends_on": depends_on,
        "account": str(api_key.account_id),
        # The stored representation: its ETag, its content type, then its body.
        "head_lines": "2",
    }
    return entry_of(fields, status, head)


def depends_on_as_read(answered: Answered) -> str | None:
    """The entries of the key and of the version (`name sha1` pairs), when they still hold what the
    answer was made from; None otherwise (one changed meanwhile, or is being filled)."""
    version_entry = VERSION_ENTRIES.get(answered.version_of)
    if version_entry is None:
        return None
    entries = (api_key_entry(answered.api_key), version_entry(answered.identifier, answered.version))
    if None in entries:
        return None
    return " ".join(f"{entry.key} {sha1(entry.raw)}" for entry in entries)


def counter(api_key, budget) -> tuple[str, str] | None:
    """The account's counter (its key in Redis but the window's end) and limit; empty for an
    unlimited plan; None when the request was not counted (the counters unreachable)."""
    if budget.limit is None:
        return "", ""
    full = ratelimit.store.counter_key(ratelimit.account_budget_name(api_key.account_id), budget.reset)
    if budget.used is None or full is None or not full.endswith(str(budget.reset)):
        return None
    return full.removesuffix(str(budget.reset)), str(budget.limit)
