"""Step-up ("sudo mode", as GitHub calls it) for sessions started by a single sign-on link.

An SSO token is made by an API key, so whoever holds a key with `write:sso` could otherwise sign in
as the account's admin and, in that session, make keys with every scope, read the webhook signing
secrets or read the people channels mail (their addresses, which the API gives only to a key with
`read:subscribers`). A session that an SSO link started is therefore marked; the parts of the
Settings area that hand out or change access, or show personal data (ModelAdmin `step_up`), stay
closed to it until the person types their password in that session, and a confirmation lasts
STEP_UP_TTL seconds. A session started with a password has just had it typed, and is never limited.
"""

import time
from enum import Enum

from django.conf import settings

# Session keys: set by the SSO sign-in, removed by a password sign-in (Django's login() keeps a
# session's keys when the same user signs in again).
STARTED_BY_SSO = "step_up.started_by_sso"
CONFIRMED_AT = "step_up.confirmed_at"


class StepUp(Enum):
    """Which of a ModelAdmin's pages an SSO session reaches only after confirming its password."""

    EVERY_PAGE = "every page"
    # The list (GET of the changelist) shows nothing secret; its actions, the forms, buttons and
    # deletions need the password.
    ALL_BUT_THE_LIST = "all but the list"


def not_needed(view):
    """Marks one page of a ModelAdmin as outside its `step_up`: a page of the model admin's that
    shows none of what the policy guards (a post's e-mail preview names no reader) and that people
    other than the policy's own may use (editors)."""
    view.step_up_not_needed = True
    return view


def clock() -> float:
    """Unix time; the one clock of this module, replaced by tests that move time."""
    return time.time()


def mark_started_by_sso(session) -> None:
    session[STARTED_BY_SSO] = True
    session.pop(CONFIRMED_AT, None)


def mark_started_with_password(session) -> None:
    session.pop(STARTED_BY_SSO, None)
    session.pop(CONFIRMED_AT, None)


def is_limited(session) -> bool:
    """True when the session was started by an SSO link and has no fresh password confirmation."""
    if not session.get(STARTED_BY_SSO):
        return False
    confirmed_at = session.get(CONFIRMED_AT)
    return not isinstance(confirmed_at, int | float) or clock() - confirmed_at >= settings.STEP_UP_TTL


def confirm(session) -> None:
    """The person typed their password in this session."""
    session[CONFIRMED_AT] = clock()
    # A new session key for the raised session, as at a sign-in: one copied before is not raised.
    session.cycle_key()


def applies(policy: StepUp | None, view, method: str) -> bool:
    """Whether a page (`view` is the ModelAdmin's bound method, e.g. its changelist_view) needs the step-up."""
    if getattr(view, "step_up_not_needed", False):
        return False
    view_name = getattr(view, "__name__", "")
    if policy is StepUp.EVERY_PAGE:
        return True
    if policy is StepUp.ALL_BUT_THE_LIST:
        return not (view_name == "changelist_view" and method in {"GET", "HEAD"})
    return False
