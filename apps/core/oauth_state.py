"""The one-time `state` of an OAuth 2.0 authorization started from the Settings area, kept in the
admin's session: an answer a provider sends to a callback is taken only from the session that asked
for it, only once, and only within STATE_TTL. Each destination keeps its authorizations under its own
session key, each state with what its callback needs (the channel, the instance it asked...)."""

import hmac
import secrets
import time

# An authorization started longer ago than this is refused at the callback (start again).
STATE_TTL = 900
# Authorizations a session may have under way at once (tabs); older ones are dropped.
PENDING_LIMIT = 5


def begin(request, *, key: str, **entry) -> str:
    """A new state for an authorization, kept under `key` in the session with `entry`."""
    state = secrets.token_urlsafe(32)
    pending = request.session.get(key)
    pending = pending if isinstance(pending, dict) else {}
    pending[state] = {**entry, "at": time.time()}
    request.session[key] = dict(list(pending.items())[-PENDING_LIMIT:])
    return state


def take(request, *, key: str) -> dict | None:
    """The entry of the authorization the request's `state` answers, taken out of the session (used
    once); None for a state this session did not start, used already or too old."""
    given = request.GET.get("state", "")
    pending = request.session.get(key)
    if not given or not isinstance(pending, dict):
        return None
    # In constant time: the comparison says nothing of how much of a guessed state was right.
    match = next((state for state in pending if hmac.compare_digest(state, given)), None)
    if match is None:
        return None
    entry = pending.pop(match)
    request.session[key] = pending
    if not isinstance(entry, dict) or time.time() - entry.get("at", 0) > STATE_TTL:
        return None
    return entry
