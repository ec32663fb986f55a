"""This worker's copies of the repositories it publishes to (GIT_CACHE_DIR), so a job fetches only
what is new. A copy is shared by the worker's processes: one at a time uses it, holding an flock on
the copy's lock file, which the kernel releases when its holder dies; what a holder killed in the
middle of a write left behind is cleared by the next one.
"""

import fcntl
import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked
from dulwich.repo import Repo

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
    """This worker's bare copy of the repository at `url`, used by one thread of one process at a
    time; what a holder killed in the middle of a write left behind is cleared first."""
    name = hashlib.sha256(url.encode()).hexdigest()[:24]
    folder = Path(settings.GIT_CACHE_DIR) / f"{name}.git"
    with _cache_locks_guard:
        lock = _cache_locks.setdefault(name, threading.Lock())
    with lock, _held(folder.with_suffix(".flock")) as holder:
        if holder.interrupted:
            _recover(folder)
        repo = _open_copy(folder)
        try:
            yield repo
            if repo.object_store.count_pack_files() > PACK_LIMIT:
                repo.object_store.repack()
        except Exception as exc:
            repo.close()  # an error half-way: the next job opens the copy afresh
            # An error unwinds git's writes (their lock files removed), except a lock file found in
            # the way: no live process holds it (this one holds the copy), the next holder clears it.
            if not isinstance(exc, FileLocked):
                holder.ended()
            raise
        except BaseException:
            repo.close()
            raise
        holder.ended()
        _keep_open(folder, repo)


class _Holder:
    """This process's hold of a copy: whether the one before was interrupted, and the end of the hold."""

    IN_USE, ENDED = b"1", b"0"

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.interrupted = os.pread(fd, 1, 0) == self.IN_USE
        os.pwrite(fd, self.IN_USE, 0)

    def ended(self) -> None:
        """The copy is left as a clean end leaves it: the next holder need not clear up."""
        os.pwrite(self.fd, self.ENDED, 0)


@contextmanager
def _held(lock_file: Path) -> Iterator[_Holder]:
    """Hold the copy's lock file (an flock: other processes wait; the kernel lets go of it when its
    holder dies, however it dies). The file's one byte says whether the copy is in use: a holder
    sets it, and sets it back once it has ended cleanly, so one that was killed leaves it set and its
    successor knows to clear up. The file is opened anew each time, so a process forked from a
    holder never shares its lock."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield _Holder(fd)
    finally:
        os.close(fd)  # releases the flock


def _recover(folder: Path) -> None:
    """Clear what an interrupted holder left in the copy. No other process uses it now (this one
    holds its lock), so every git lock file in it is stale (a ref's, a loose object's, a pack
    index's: git's own locks are files made with O_EXCL that only their maker removes), and so are
    half-written packs. A copy that no longer opens is made again (one full fetch)."""
    with _cache_locks_guard:
        kept = _open_copies.pop(folder, None)
    if kept is not None and kept[0] == os.getpid():
        kept[1].close()  # its view of the packs may name what is removed here
    for stale in folder.rglob("*.lock"):
        stale.unlink(missing_ok=True)
    if not (folder / "objects").is_dir():
        return
    try:
        with Repo(str(folder)) as repo:
            repo.object_store.prune(grace_period=0)
    except (NotGitRepository, OSError, ValueError):
        shutil.rmtree(folder)


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
