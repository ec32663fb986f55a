"""A remote git repository reached with dulwich (pure Python; no git binary at run time): how
each remote is reached, this worker's copy of it, and one commit pushed on top of a branch.
Which remotes are allowed is remote.py; the ssh:// client, ssh.py; what a failure means, failures.py.

Each worker keeps a bare copy of every repository it publishes to (cache.py), so a job fetches
only what is new. A push is
never forced: when the branch moved since the fetch (someone else pushed), the commit is made again
on top of the new head.
"""

import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from dulwich.client import GitClient, HttpGitClient, LocalGitClient
from dulwich.errors import NotTreeError
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit, Tree
from dulwich.pack import pack_objects_to_data
from dulwich.repo import Repo
from urllib3.util import Retry

from apps.core import addresses
from apps.core.destinations import PublishError
from apps.publishing.git.paths import path_problem
from apps.publishing.git.remote import Credentials, Remote
from apps.publishing.git.ssh import ssh_client

USER_AGENT = "ContentPublishingService-Git/1.0"
FILE_MODE = stat.S_IFREG | 0o644


def check_host(remote: Remote) -> str | None:
    """Why the remote's host may not be reached (the webhook sender's address guard), or None."""
    if remote.kind == "local":
        return None
    if remote.kind in {"https", "http"}:
        return addresses.check_url(remote.url)
    return addresses.check_host(remote.host, remote.port or 22)


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
    elif remote.kind in {"https", "http"}:
        yield _http_client(remote, credentials, timeout), ""
    else:
        with ssh_client(remote, credentials, timeout=timeout) as client_and_path:
            yield client_and_path


def _http_client(remote: Remote, credentials: Credentials, timeout: float) -> HttpGitClient:
    return HttpGitClient(
        remote.url.rstrip("/"),
        # The webhook sender's guarded pools: every address the host resolves to is checked
        # before any is dialled (no private address, no DNS rebinding).
        pool_manager=_SingleAttempt(addresses.pool_manager()),
        username=(credentials.token_username or "x-access-token") if credentials.token else None,
        password=credentials.token or None,
        timeout=timeout,
        extra_headers={"User-Agent": USER_AGENT},
    )


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


def has_file(repo: Repo, commit: bytes | None, path: str) -> bool:
    """Whether `path` names a file at `commit` (without reading it)."""
    if commit is None:
        return False
    try:
        mode, _ = tree_lookup_path(repo.object_store.__getitem__, repo[commit].tree, path.encode())
    except (KeyError, NotTreeError):
        return False
    return stat.S_ISREG(mode)


# How far back along the branch a later attempt of a job looks for its own commit: past one batch
# of the channel's jobs (what a crash leaves unrecorded) and what others pushed meanwhile.
LOOKBACK = 1000


def commit_of_job(repo: Repo, head: bytes | None, job_id: int) -> bytes | None:
    """The commit of the branch (its first parents, the latest LOOKBACK) whose message names the
    job (commit_message's trailer), or None."""
    marker = f"\nPublication-Job-Id: {job_id}\n".encode()
    commit_id = head
    for _ in range(LOOKBACK):
        if commit_id is None:
            return None
        commit = repo[commit_id]
        if marker in commit.message:
            return commit_id
        commit_id = commit.parents[0] if commit.parents else None
    return None


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
    commit, blobs = _commit(repo, parent=parent, changes=changes, message=message, author=author)
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
    _check_push_status((result.ref_status or {}).get(ref))
    repo.refs[ref] = commit.id
    return commit.id


def _commit(
    repo: Repo, *, parent: bytes | None, changes: dict[str, bytes | None], message: str, author: bytes
) -> tuple[Commit, list[Blob]]:
    """The commit of `changes` on top of `parent`, and the blobs it added, in the copy's store."""
    store = repo.object_store
    base_tree = store[parent].tree if parent else _empty_tree(repo)
    entries, blobs = [], []
    for file_path, content in changes.items():
        if content is None:
            # Taking a file away never adds a name git refuses (and clears one made before the check).
            entries.append((file_path.encode(), None, None))
            continue
        refused = path_problem(file_path)
        if refused is not None:
            # The last guard: a commit git itself would refuse is never made, whoever asked for it.
            raise PublishError(
                f"No commit was made: the path {file_path!r} has a part git refuses, {refused[0]!r}: {refused[1]}.",
                permanent=True,
            )
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
    return commit, blobs


_MOVED = ("fast-forward", "fetch first", "stale", "lock")
_REFUSED_FOR_GOOD = ("protected", "denied", "hook")


def _check_push_status(status: str | None) -> None:
    """BranchMoved or PublishError for a ref the remote did not update (None: it did)."""
    if status is None:
        return
    if any(word in status for word in _MOVED):
        raise BranchMoved
    raise PublishError(
        f"The repository refused the push: {status}.", permanent=any(word in status for word in _REFUSED_FOR_GOOD)
    )


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
