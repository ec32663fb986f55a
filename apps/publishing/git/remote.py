"""Which repository URLs are allowed, and what each names: https://, ssh:// (or scp-like
git@host:path), and local folders for development and tests."""

import os
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from django.conf import settings

from apps.core.destinations import PublishError

_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/\s]+)@)?(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):(?P<path>[^/].*|/.*)$")


@dataclass(frozen=True)
class Remote:
    kind: str  # "https", "http", "ssh" or "local"
    url: str
    host: str = ""
    port: int | None = None
    user: str = ""
    path: str = ""


@dataclass(frozen=True)
class Credentials:
    token: str = ""
    token_username: str = ""
    ssh_key: str = ""
    known_hosts: str = ""


def _wrong(message: str) -> PublishError:
    # A URL that is wrong stays wrong: no retry.
    return PublishError(message, permanent=True)


def parse_remote(url: str) -> Remote:
    """The remote a repository URL names, or PublishError (permanent) saying what is wrong with it."""
    url = url.strip()
    if not url:
        raise _wrong("Enter the repository's URL.")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"https", "http"}:
        return _web_remote(url, parts, scheme)
    if scheme == "ssh":
        return _ssh_remote(url, parts)
    if scheme == "file" or (not scheme and url.startswith(("/", "./", "../", "~"))):
        return _local_remote(url, parts, scheme)
    scp = _SCP_LIKE.match(url) if not scheme or len(scheme) > 1 else None
    if scp and "://" not in url:
        return Remote(kind="ssh", url=url, host=scp["host"].strip("[]"), user=scp["user"] or "git", path=scp["path"])
    raise _wrong(
        f"{url!r} is not a repository URL this service can reach: use https://host/owner/repo.git, "
        "ssh://git@host/owner/repo.git or git@host:owner/repo.git."
    )


def _web_remote(url: str, parts: SplitResult, scheme: str) -> Remote:
    if parts.username or parts.password:
        raise _wrong(
            "Put the token in the token field, not in the URL (a URL is shown and logged; the token is "
            "stored encrypted)."
        )
    if not parts.hostname or not parts.path.strip("/"):
        raise _wrong(f"{url!r} names no repository: use https://host/owner/repo.git.")
    if scheme == "http" and not settings.GIT_ALLOW_LOCAL_REPOSITORIES:
        raise _wrong(
            "Use https://: plain http:// would send the token unencrypted (allowed only with "
            "GIT_ALLOW_LOCAL_REPOSITORIES=true, for development and tests)."
        )
    return Remote(kind=scheme, url=url, host=parts.hostname, port=parts.port, path=parts.path)


def _ssh_remote(url: str, parts: SplitResult) -> Remote:
    if not parts.hostname or not parts.path.strip("/"):
        raise _wrong(f"{url!r} names no repository: use ssh://git@host/owner/repo.git.")
    return Remote(
        kind="ssh", url=url, host=parts.hostname, port=parts.port, user=parts.username or "git", path=parts.path
    )


def _local_remote(url: str, parts: SplitResult, scheme: str) -> Remote:
    if not settings.GIT_ALLOW_LOCAL_REPOSITORIES:
        raise _wrong(
            "Local repositories are allowed only with GIT_ALLOW_LOCAL_REPOSITORIES=true (development and "
            "tests); use an https:// or ssh:// URL."
        )
    path = parts.path if scheme == "file" else os.path.expanduser(url)
    return Remote(kind="local", url=url, path=path)


def keyscan_command(remote: Remote) -> str:
    """The command that prints the host's keys as known_hosts lines (`[host]:port` off port 22)."""
    port = f"-p {remote.port} " if remote.port and remote.port != 22 else ""
    return f"ssh-keyscan {port}{remote.host}"
