"""What a mail error means for the record whose send raised it: every backend's errors (smtplib's,
django-anymail's) are interpreted here, once, as a Verdict the sender acts on."""

import re
from dataclasses import dataclass
from smtplib import SMTPHeloError, SMTPRecipientsRefused, SMTPResponseException, SMTPSenderRefused

from anymail.exceptions import (
    AnymailAPIError,
    AnymailConfigurationError,
    AnymailRecipientsRefused,
)
from requests import ConnectTimeout
from urllib3.exceptions import NewConnectionError

UNCERTAIN_ERROR = "The sender stopped while this message was being sent: it may or may not have arrived."
# RFC 3463 enhanced status codes that say the address itself is bad.
ADDRESS_STATUS = re.compile(r"5\.1\.\d+|5\.2\.1\b")


@dataclass(frozen=True)
class Verdict:
    """What a refused or broken send means for its record."""

    kind: str  # "bounce" (failed, address suppressed), "failed", "retry", "uncertain" or "halt"
    error: str


def verdict_of(exc: Exception) -> Verdict:
    """The one place each mail error is interpreted. A permanent refusal of the address bounces
    it; a temporary one is retried; an error that says nothing was sent for reasons not of this
    address (the sender refused, a misconfigured backend) halts the send, to be retried; anything
    else (a timeout, a dropped connection) may have happened after the server took the message."""
    verdict = _smtp_verdict(exc) or _anymail_verdict(exc)
    if verdict is not None:
        return verdict
    if isinstance(exc, ValueError):  # AnymailInvalidAddress too
        # Raised while the message was built, before anything was sent (an address no server takes).
        return Verdict("failed", f"Not sent: {_describe(exc)}")
    return Verdict("uncertain", f"{UNCERTAIN_ERROR} ({type(exc).__name__}: {_describe(exc)})")


def _smtp_verdict(exc: Exception) -> Verdict | None:
    if isinstance(exc, SMTPSenderRefused):
        return Verdict(
            "halt", f"The mail server refused the sender {exc.sender}: {exc.smtp_code} {_text(exc.smtp_error)}"
        )
    if isinstance(exc, SMTPHeloError):
        return Verdict("halt", f"The mail server refused our greeting: {exc.smtp_code} {_text(exc.smtp_error)}")
    if isinstance(exc, SMTPRecipientsRefused):
        code, text = next(iter(exc.recipients.values()), (550, b""))
        return Verdict("bounce" if code >= 500 else "retry", f"{code} {_text(text)}")
    if isinstance(exc, SMTPResponseException):
        # Refused after the recipient was taken (at DATA): a 5xx there is most often about the message
        # (content, size, policy: 5.7.x), and suppressing every address of a list the server refuses
        # the edition for would be a disaster. Only the address statuses (5.1.x, 5.2.1: no such or a
        # disabled mailbox) bounce; other permanent refusals fail the record alone.
        text = _text(exc.smtp_error)
        if exc.smtp_code < 500:
            return Verdict("retry", f"{exc.smtp_code} {text}")
        return Verdict("bounce" if ADDRESS_STATUS.match(text) else "failed", f"{exc.smtp_code} {text}")
    return None


def _anymail_verdict(exc: Exception) -> Verdict | None:
    if isinstance(exc, AnymailRecipientsRefused):
        return Verdict("bounce", _describe(exc))
    if isinstance(exc, AnymailAPIError):
        status = exc.status_code
        if status is None and _never_connected(exc):
            # Nothing was sent, and the next message would fare no better: the send waits.
            return Verdict("halt", f"The e-mail provider could not be reached: {_describe(exc)}")
        if status is None:  # the request may have reached the provider before it failed
            return Verdict("uncertain", f"{UNCERTAIN_ERROR} ({_describe(exc)})")
        return Verdict("retry" if status == 429 or status >= 500 else "failed", _describe(exc))
    if isinstance(exc, AnymailConfigurationError):
        return Verdict("halt", f"The e-mail provider is not set up: {_describe(exc)}")
    return None


def _never_connected(exc: Exception) -> bool:
    """A provider's request that failed before a connection was made (refused, or its connect timed out)."""
    if isinstance(exc, ConnectTimeout):
        return True
    cause = exc.__cause__
    reason = getattr(cause.args[0], "reason", None) if cause is not None and cause.args else None
    return isinstance(reason, NewConnectionError)


def _describe(exc: Exception) -> str:
    try:
        return str(exc)
    except Exception:  # an error whose message cannot be rendered must not stop the send
        return type(exc).__name__


def _text(value) -> str:
    return (value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)).strip()
