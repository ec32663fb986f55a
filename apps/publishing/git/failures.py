"""What went wrong reaching a repository, as a sentence a user can act on. Each rule looks at
what dulwich, ssh or the network raised; the first that recognises it says what to do."""

import re
from collections.abc import Callable

from django.conf import settings
from dulwich.client import HTTPUnauthorized
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository

from apps.core import addresses
from apps.core.destinations import PublishError
from apps.publishing.git.remote import Remote, keyscan_command

_SSH_LOAD_KEY = re.compile(r'Load key "[^"]*": ([^\r\n]+)')
_SSH_FINGERPRINT = re.compile(r"key sent by the remote host is\s+(SHA256:[A-Za-z0-9+/=]+)")

Rule = Callable[[BaseException, str, Remote], PublishError | None]


def did_not_answer() -> str:
    return f"The repository did not answer in time (PUBLISH_TIMEOUT, {settings.PUBLISH_TIMEOUT} s)."


def _refused_credentials(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if not (isinstance(exc, HTTPUnauthorized) or "resp 403" in text):
        return None
    return PublishError(
        "The repository refused the credentials (HTTP 401/403): check that the token is valid, not expired, and "
        "may write to the repository (the publishing guide lists the least scope that works for each host).",
        permanent=True,
    )


def _no_repository(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if not (isinstance(exc, NotGitRepository) or "resp 404" in text):
        return None
    return PublishError(
        f"No git repository at {remote.url} (or the token may not see it): check the URL.", permanent=True
    )


def _host_key_mismatch(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if "Host key verification failed" not in text and "REMOTE HOST IDENTIFICATION HAS CHANGED" not in text:
        return None
    if "host key is known for" in text:  # ssh: "No ED25519 host key is known for [host]:port and ..."
        return PublishError(
            f"The host key of {remote.host} does not match the known hosts given: they hold no key of this host"
            f"{f' on port {remote.port}' if remote.port and remote.port != 22 else ''}. Add the output of "
            f"{keyscan_command(remote)}, checked against the host's published fingerprints.",
            permanent=True,
        )
    presented = _SSH_FINGERPRINT.search(text)
    return PublishError(
        f"The host key of {remote.host} does not match the known hosts given"
        f"{f' (it presented {presented[1]})' if presented else ''}: if the host really changed its key, check "
        "its new fingerprint and replace the known hosts; otherwise someone may be in between.",
        permanent=True,
    )


def _unreadable_key(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    unreadable = _SSH_LOAD_KEY.search(text) if remote.kind == "ssh" else None
    if not unreadable:
        return None
    # The key file's path is left out: it is a temporary file of no use to anyone.
    return PublishError(
        f"ssh could not read the private key ({unreadable[1].strip()}): paste the whole private key as "
        "ssh-keygen wrote it (-----BEGIN OPENSSH PRIVATE KEY----- to its END line).",
        permanent=True,
    )


def _key_refused(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if "Permission denied" not in text or remote.kind != "ssh":
        return None
    return PublishError(
        f"{remote.host} refused the private key: add its public half as a deploy key with write access.",
        permanent=True,
    )


def _blocked_address(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if not (isinstance(exc, addresses.BlockedAddress) or "not allowed (not a public address" in text):
        return None
    return PublishError(f"The repository's host is not allowed: {text}", permanent=True)


def _timed_out(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if "timed out" in text.lower() or isinstance(exc, TimeoutError):
        return PublishError(did_not_answer())
    return None


def _unreachable(exc: BaseException, text: str, remote: Remote) -> PublishError | None:
    if not isinstance(exc, GitProtocolError | HangupException | OSError):
        return None
    where = f"{remote.host}:{remote.port}" if remote.port else remote.host or remote.url
    return PublishError(f"The repository could not be reached at {where}: {_innermost(exc)}.")


# In this order: the first rule that recognises the failure describes it.
RULES: tuple[Rule, ...] = (
    _refused_credentials,
    _no_repository,
    _host_key_mismatch,
    _unreadable_key,
    _key_refused,
    _blocked_address,
    _timed_out,
    _unreachable,
)


def describe_failure(exc: BaseException, remote: Remote, branch: str) -> PublishError:
    """A sentence a user can act on for what dulwich (or the network) raised."""
    if isinstance(exc, PublishError):
        return exc
    text = str(exc)
    for rule in RULES:
        described = rule(exc, text, remote)
        if described is not None:
            return described
    return PublishError(f"{type(exc).__name__}: {text}")


def _innermost(exc: BaseException) -> str:
    """The reason at the bottom of a chain of wrapped errors (urllib3's pool and retry wrappers
    name their own internals): "[Errno 111] Connection refused", not "HTTPConnectionPool(...)"."""
    seen, cause = set(), exc
    while (inner := cause.__cause__ or cause.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        cause = inner
    text = str(cause).rstrip(".")
    if "Max retries exceeded" in text or "Pool(" in text:
        text = text.rsplit(": ", 1)[-1].strip("()'\"") or type(cause).__name__
    return text or type(cause).__name__
