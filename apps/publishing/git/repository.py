"""A remote git repository reached with dulwich (pure Python; no git binary at run time): which
remotes are allowed, how each is reached, and one commit pushed on top of a branch.

Each worker keeps a bare copy of every repository it publishes to (GIT_CACHE_DIR), so a job
fetches only what is new. A push is never forced: when the branch moved since the fetch (someone
else pushed), the commit is made again on top of the new head.
"""

import base64
import binascii
import hashlib
import os
import re
import shlex
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from dulwich.client import (
    GitClient,
    HttpGitClient,
    HTTPUnauthorized,
    LocalGitClient,
    SSHGitClient,
    SubprocessSSHVendor,
    SubprocessWrapper,
)
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit, Tree
from dulwich.pack import pack_objects_to_data
from dulwich.repo import Repo
from urllib3.util import Retry

from apps.publishing.destinations import PublishError
from apps.webhooks import transport

USER_AGENT = "ContentPublishingService-Git/1.0"
FILE_MODE = stat.S_IFREG | 0o644
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/\s]+)@)?(?P<host>[A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\]):(?P<path>[^/].*|/.*)$")


@dataclass(frozen=True)
class Remote:
    kind: str  # "https", "http", "ssh" or "local"
    url: str
    host: str = ""
    port: int | None = None
    user: str = ""
    path: str = ""


def parse_remote(url: str) -> Remote:
    """The remote a repository URL names, or PublishError (permanent) saying what is wrong with it."""
    url = url.strip()
    if not url:
        raise PublishError("Enter the repository's URL.", permanent=True)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in {"https", "http"}:
        if parts.username or parts.password:
            raise PublishError(
                "Put the token in the token field, not in the URL (a URL is shown and logged; the token is "
                "stored encrypted).",
                permanent=True,
            )
        if not parts.hostname or not parts.path.strip("/"):
            raise PublishError(f"{url!r} names no repository: use https://host/owner/repo.git.", permanent=True)
        if scheme == "http" and not settings.GIT_ALLOW_LOCAL_REPOSITORIES:
            raise PublishError(
                "Use https://: plain http:// would send the token unencrypted (allowed only with "
                "GIT_ALLOW_LOCAL_REPOSITORIES=true, for development and tests).",
                permanent=True,
            )
        return Remote(kind=scheme, url=url, host=parts.hostname, port=parts.port, path=parts.path)
    if scheme == "ssh":
        if not parts.hostname or not parts.path.strip("/"):
            raise PublishError(f"{url!r} names no repository: use ssh://git@host/owner/repo.git.", permanent=True)
        return Remote(kind="ssh", url=url, host=parts.hostname, port=parts.port, user=parts.username or "git",
                      path=parts.path)  # fmt: skip
    if scheme == "file" or (not scheme and url.startswith(("/", "./", "../", "~"))):
        if not settings.GIT_ALLOW_LOCAL_REPOSITORIES:
            raise PublishError(
                "Local repositories are allowed only with GIT_ALLOW_LOCAL_REPOSITORIES=true (development and "
                "tests); use an https:// or ssh:// URL.",
                permanent=True,
            )
        path = parts.path if scheme == "file" else os.path.expanduser(url)
        return Remote(kind="local", url=url, path=path)
    scp = _SCP_LIKE.match(url) if not scheme or len(scheme) > 1 else None
    if scp and "://" not in url:
        return Remote(kind="ssh", url=url, host=scp["host"].strip("[]"), user=scp["user"] or "git", path=scp["path"])
    raise PublishError(
        f"{url!r} is not a repository URL this service can reach: use https://host/owner/repo.git, "
        "ssh://git@host/owner/repo.git or git@host:owner/repo.git.",
        permanent=True,
    )


def check_host(remote: Remote) -> str | None:
    """Why the remote's host may not be reached (the webhook sender's address guard), or None."""
    if remote.kind == "local":
        return None
    if remote.kind in {"https", "http"}:
        return transport.check_url(remote.url)
    return transport.check_host(remote.host, remote.port or 22)


@dataclass(frozen=True)
class Credentials:
    token: str = ""
    token_username: str = ""
    ssh_key: str = ""
    known_hosts: str = ""


class _SingleAttempt:
    """The guarded pools with each request sent once: urllib3 retries an idempotent request three
    times by default, so a host that never answers would hold the job for four timeouts (past its
    lease). Redirects are still followed (a renamed repository)."""

    def __init__(self, manager) -> None:
        self._manager = manager
        self.headers = manager.headers

    def request(self, method: str, url: str, **kwargs):
        retries = Retry(total=None, connect=0, read=0, status=0, other=0, redirect=5)
        return self._manager.request(method, url, retries=retries, **kwargs)


@contextmanager
def connect(remote: Remote, credentials: Credentials, *, timeout: float) -> Iterator[tuple[GitClient, str]]:
    """A dulwich client for the remote and the path to give it."""
    problem = check_host(remote)
    if problem and "does not resolve" in problem:
        # A name that does not resolve now may again in a minute (a DNS outage): tried again.
        raise PublishError(f"The repository's host could not be looked up: {problem}")
    if problem:
        raise PublishError(f"The repository's host is not allowed: {problem}", permanent=True)
    if remote.kind == "local":
        yield LocalGitClient(), remote.path
        return
    if remote.kind in {"https", "http"}:
        client = HttpGitClient(
            remote.url.rstrip("/"),
            # The webhook sender's guarded pools: every address the host resolves to is checked
            # before any is dialled (no private address, no DNS rebinding).
            pool_manager=_SingleAttempt(transport.pool_manager()),
            username=(credentials.token_username or "x-access-token") if credentials.token else None,
            password=credentials.token or None,
            timeout=timeout,
            extra_headers={"User-Agent": USER_AGENT},
        )
        yield client, ""
        return
    if not credentials.ssh_key:
        raise PublishError("An ssh:// repository needs a private key (a deploy key) in the channel's git settings.",
                           permanent=True)  # fmt: skip
    if not credentials.known_hosts.strip():
        raise PublishError(
            f"An ssh:// repository needs the host's public key: add the output of `{keyscan_command(remote)}` "
            "(checked against the host's published fingerprints) to the known hosts field.",
            permanent=True,
        )
    if _passphrase_protected(credentials.ssh_key):
        raise PublishError(
            "The private key is protected by a passphrase, and ssh runs here with no one to type it: use a deploy "
            "key made without one (ssh-keygen -t ed25519 -N '').",
            permanent=True,
        )
    with tempfile.TemporaryDirectory(prefix="cps-ssh-") as folder:
        key_file, hosts_file = Path(folder) / "key", Path(folder) / "known_hosts"
        # Plain \n line ends: a browser's form sends \r\n, and ssh cannot read a key with them.
        key_file.write_text(_lines(credentials.ssh_key))
        key_file.chmod(0o600)
        hosts_file.write_text(_lines(credentials.known_hosts))
        seconds = max(1, int(timeout))
        # The host's key must be the one given: never accept-new, never the machine's own files.
        command = " ".join(
            shlex.quote(part)
            for part in (
                "ssh", "-F", "/dev/null", "-i", str(key_file), "-o", "IdentitiesOnly=yes",
                "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={hosts_file}",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={seconds}",
                "-o", f"ServerAliveInterval={seconds}", "-o", "ServerAliveCountMax=1",
            )
        )  # fmt: skip
        vendor = _SSHUntilDeadline(time.monotonic() + timeout)
        try:
            yield SSHGitClient(remote.host, port=remote.port, username=remote.user, ssh_command=command,
                               vendor=vendor), remote.path  # fmt: skip
        except Exception as exc:
            if vendor.expired.is_set():
                raise PublishError(did_not_answer()) from exc
            raise
        finally:
            vendor.cancel()


def _lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines()) + "\n"


_OPENSSH_KEY_MAGIC = b"openssh-key-v1\0"


def _passphrase_protected(key: str) -> bool:
    """Whether the private key is encrypted: PEM says so in its header; the OpenSSH format names
    its cipher ("none" when it is not) right after its magic."""
    if "ENCRYPTED" in key:  # "Proc-Type: 4,ENCRYPTED", "BEGIN ENCRYPTED PRIVATE KEY"
        return True
    if "BEGIN OPENSSH PRIVATE KEY" not in key:
        return False
    try:
        data = base64.b64decode("".join(line.strip() for line in key.splitlines() if "-----" not in line))
    except (binascii.Error, ValueError):
        return False  # ssh says what it cannot read (describe_failure)
    if not data.startswith(_OPENSSH_KEY_MAGIC):
        return False
    start = len(_OPENSSH_KEY_MAGIC) + 4
    size = int.from_bytes(data[len(_OPENSSH_KEY_MAGIC) : start], "big")
    return data[start : start + size] not in (b"none", b"")


_SSH_LOAD_KEY = re.compile(r'Load key "[^"]*": ([^\r\n]+)')
_SSH_FINGERPRINT = re.compile(r"key sent by the remote host is\s+(SHA256:[A-Za-z0-9+/=]+)")


def keyscan_command(remote: Remote) -> str:
    """The command that prints the host's keys as known_hosts lines (`[host]:port` off port 22)."""
    port = f"-p {remote.port} " if remote.port and remote.port != 22 else ""
    return f"ssh-keyscan {port}{remote.host}"


class _SSHUntilDeadline(SubprocessSSHVendor):
    """The `ssh` client, killed when the job's time is up. ServerAlive* only notices a host that
    stops answering altogether: one that keeps the connection alive and sends nothing (a hung git
    on the other side) would otherwise hold the job forever."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = threading.Event()
        self._timers: list[threading.Timer] = []

    def run_command(self, *args, **kwargs) -> SubprocessWrapper:
        wrapper = super().run_command(*args, **kwargs)
        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self._expire, args=(wrapper.proc,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return wrapper

    def _expire(self, proc) -> None:
        if proc.poll() is None:
            self.expired.set()
            proc.kill()

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()


def describe_failure(exc: BaseException, remote: Remote, branch: str) -> PublishError:
    """A sentence a user can act on for what dulwich (or the network) raised."""
    text = str(exc)
    if isinstance(exc, PublishError):
        return exc
    if isinstance(exc, HTTPUnauthorized) or "resp 403" in text:
        return PublishError(
            "The repository refused the credentials (HTTP 401/403): check that the token is valid, not "
            "expired, and may write to the repository (see docs/publishing.md for the least scope that works).",
            permanent=True,
        )
    if isinstance(exc, NotGitRepository) or "resp 404" in text:
        return PublishError(
            f"No git repository at {remote.url} (or the token may not see it): check the URL.", permanent=True
        )
    if "Host key verification failed" in text or "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        if "host key is known for" in text:  # ssh: "No ED25519 host key is known for [host]:port and ..."
            return PublishError(
                f"The host key of {remote.host} does not match the known hosts given: they hold no key of this host"
                f"{f' on port {remote.port}' if remote.port and remote.port != 22 else ''}. Add the output of "
                f"`{keyscan_command(remote)}`, checked against the host's published fingerprints.",
                permanent=True,
            )
        presented = _SSH_FINGERPRINT.search(text)
        return PublishError(
            f"The host key of {remote.host} does not match the known hosts given"
            f"{f' (it presented {presented[1]})' if presented else ''}: if the host really changed its key, check "
            "its new fingerprint and replace the known hosts; otherwise someone may be in between.",
            permanent=True,
        )
    unreadable = _SSH_LOAD_KEY.search(text) if remote.kind == "ssh" else None
    if unreadable:  # the key file's path is left out: it is a temporary file of no use to anyone
        return PublishError(
            f"ssh could not read the private key ({unreadable[1].strip()}): paste the whole private key as "
            "ssh-keygen wrote it (-----BEGIN OPENSSH PRIVATE KEY----- to its END line).",
            permanent=True,
        )
    if "Permission denied" in text and remote.kind == "ssh":
        return PublishError(
            f"{remote.host} refused the private key: add its public half as a deploy key with write access.",
            permanent=True,
        )
    if isinstance(exc, transport.BlockedAddress) or "not allowed (not a public address" in text:
        return PublishError(f"The repository's host is not allowed: {text}", permanent=True)
    if "timed out" in text.lower() or isinstance(exc, TimeoutError):
        return PublishError(did_not_answer())
    if isinstance(exc, GitProtocolError | HangupException | OSError):
        where = f"{remote.host}:{remote.port}" if remote.port else remote.host or remote.url
        return PublishError(f"The repository could not be reached at {where}: {_innermost(exc)}.")
    return PublishError(f"{type(exc).__name__}: {text}")


def did_not_answer() -> str:
    return f"The repository did not answer in time (PUBLISH_TIMEOUT, {settings.PUBLISH_TIMEOUT} s)."


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


_cache_locks: dict[str, threading.Lock] = {}
_cache_locks_guard = threading.Lock()
# Copies kept open between jobs (opening one reads the index of each of its packs), the most
# recently used last; past OPEN_COPIES the least recently used is closed.
_open_copies: OrderedDict[Path, tuple[int, Repo]] = OrderedDict()
OPEN_COPIES = 32
# As git's gc.autoPackLimit: past this many packs (each fetch adds one) the copy is repacked, so
# a lookup does not go through more and more packs.
PACK_LIMIT = 50


@contextmanager
def cached_copy(url: str) -> Iterator[Repo]:
    """This worker's bare copy of the repository at `url` (one thread at a time uses it)."""
    name = hashlib.sha256(url.encode()).hexdigest()[:24]
    folder = Path(settings.GIT_CACHE_DIR) / f"{name}.git"
    with _cache_locks_guard:
        lock = _cache_locks.setdefault(name, threading.Lock())
    with lock:
        repo = _open_copy(folder)
        try:
            yield repo
            if repo.object_store.count_pack_files() > PACK_LIMIT:
                repo.object_store.repack()
        except BaseException:
            repo.close()  # an error half-way: the next job opens the copy afresh
            raise
        _keep_open(folder, repo)


def _open_copy(folder: Path) -> Repo:
    """The copy kept open by an earlier job of this process, or the copy opened (made) now. A
    copy in use is out of the kept ones, so it is never closed under its user."""
    with _cache_locks_guard:
        kept = _open_copies.pop(folder, None)
    if kept is not None and kept[0] == os.getpid() and (folder / "objects").is_dir():
        return kept[1]
    if not (folder / "objects").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        return Repo.init_bare(str(folder))
    return Repo(str(folder))


def _keep_open(folder: Path, repo: Repo) -> None:
    with _cache_locks_guard:
        _open_copies[folder] = (os.getpid(), repo)
        while len(_open_copies) > OPEN_COPIES:
            _, (pid, oldest) = _open_copies.popitem(last=False)
            if pid == os.getpid():
                oldest.close()


def branch_ref(branch: str) -> bytes:
    return b"refs/heads/" + branch.encode()


@dataclass
class Head:
    commit: bytes | None  # None: the branch does not exist (yet)
    refs: dict


def fetch_head(client: GitClient, path: str, repo: Repo, branch: str) -> Head:
    """Fetch the branch's head into `repo`. An empty repository has no head (the branch is made by
    the first push); a repository with branches but not this one is an error."""
    ref = branch_ref(branch)

    def wants(refs, depth=None):
        head = refs.get(ref)
        return [head] if head and head not in repo.object_store else []

    result = client.fetch(path, repo, determine_wants=wants)
    refs = {name: value for name, value in result.refs.items() if value}
    head = refs.get(ref)
    if head is not None:
        # The copy names what it holds, so the next fetch offers it and receives only what is new.
        repo.refs[ref] = head
    if head is None and any(name.startswith(b"refs/heads/") for name in refs):
        branches = sorted(
            name[len(b"refs/heads/") :].decode(errors="replace") for name in refs if name.startswith(b"refs/heads/")
        )
        raise PublishError(
            f"The branch {branch!r} does not exist in the repository (it has: {', '.join(branches[:10])}): create it "
            "or choose one of those in the channel's git settings.",
            permanent=True,
        )
    return Head(commit=head, refs=refs)


def read_file(repo: Repo, commit: bytes | None, path: str) -> bytes | None:
    if commit is None:
        return None
    tree = repo[commit].tree
    try:
        _, sha = tree_lookup_path(repo.object_store.__getitem__, tree, path.encode())
    except KeyError:
        return None
    obj = repo.object_store[sha]
    return obj.data if isinstance(obj, Blob) else None


class BranchMoved(Exception):
    """Someone else pushed between our fetch and our push."""


def commit_and_push(
    client: GitClient,
    path: str,
    repo: Repo,
    *,
    branch: str,
    parent: bytes | None,
    changes: dict[str, bytes | None],
    message: str,
    author: bytes,
) -> bytes:
    """Commit `changes` (path -> new content, None to delete) on top of `parent` and push it as the
    branch's new head, only if the branch is still at `parent` (BranchMoved otherwise)."""
    store = repo.object_store
    base_tree = store[parent].tree if parent else _empty_tree(repo)
    entries, blobs = [], []
    for file_path, content in changes.items():
        if content is None:
            entries.append((file_path.encode(), None, None))
            continue
        blob = Blob.from_string(content)
        store.add_object(blob)
        blobs.append(blob)
        entries.append((file_path.encode(), FILE_MODE, blob.id))
    commit = Commit()
    commit.tree = commit_tree_changes(store, base_tree, entries)
    commit.parents = [parent] if parent else []
    commit.author = commit.committer = author
    commit.commit_time = commit.author_time = int(time.time())
    commit.commit_timezone = commit.author_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = message.encode()
    store.add_object(commit)
    ref = branch_ref(branch)

    def update_refs(refs):
        if refs.get(ref) != parent:
            raise BranchMoved
        return {ref: commit.id}

    # What the commit made: its blobs, the trees along the changed paths, itself. update_refs has
    # made sure the remote is at `parent`, so it has everything else; dulwich's own pack generation
    # would walk the whole history to find that out, at a cost that grows with every commit.
    made = {obj.id: obj for obj in blobs} | {commit.id: commit}
    for file_path in changes:
        for tree_id in _trees_along(store, commit.tree, file_path.encode()):
            made.setdefault(tree_id, store[tree_id])

    def pack_of_what_was_made(have, want, *, ofs_delta=True, progress=None, **options):
        return pack_objects_to_data(list(made.values()), ofs_delta=ofs_delta)

    result = client.send_pack(path, update_refs, generate_pack_data=pack_of_what_was_made)
    status = (result.ref_status or {}).get(ref)
    if status is not None:
        if "fast-forward" in status or "fetch first" in status or "stale" in status or "lock" in status:
            raise BranchMoved
        raise PublishError(f"The repository refused the push: {status}.", permanent="protected" in status or
                           "denied" in status or "hook" in status)  # fmt: skip
    repo.refs[ref] = commit.id
    return commit.id


def _trees_along(store, root: bytes, path: bytes) -> list[bytes]:
    """The ids of the trees from `root` down to the folder of `path`, as far as they exist."""
    ids, tree = [root], store[root]
    for part in path.split(b"/")[:-1]:
        try:
            _, sha = tree[part]
        except KeyError:
            break
        ids.append(sha)
        tree = store[sha]
    return ids


def _empty_tree(repo: Repo) -> bytes:
    tree = Tree()
    repo.object_store.add_object(tree)
    return tree.id
