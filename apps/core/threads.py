"""Threads that a worker process runs outside work on (webhook attempts, publishing jobs).

A Celery worker has few processes (the Procfile's two). Were outside work done on them, a party
that hangs would hold a whole process for its timeout, and two would stop everyone's work. On
these threads it holds one thread; the task that started the work returns after a short wait, and
the thread records the outcome itself when the work ends. Each worker process has its own pools,
made on first use, so a forked child never shares its parent's threads.
"""

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import close_old_connections

logger = logging.getLogger(__name__)


class WorkerThreads:
    def __init__(self, size: int, name: str) -> None:
        self.name = name
        self.executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)
        # Submitting waits for a free thread (or, with block=False, declines): work never queues up
        # in memory behind busy threads, where its lease would run out before it started.
        self.free = threading.BoundedSemaphore(size)

    def submit(self, work: Callable, *args, block: bool = True) -> Future | None:
        """Run `work(*args)` on a free thread; None when `block` is false and every thread is busy."""
        if not self.free.acquire(blocking=block):
            return None
        try:
            return self.executor.submit(self._run, work, *args)
        except BaseException:
            self.free.release()
            raise

    def _run(self, work: Callable, *args):
        # Each thread has its own database connection: checked as around a request (CONN_MAX_AGE,
        # CONN_HEALTH_CHECKS), so a connection the database dropped is replaced, not reused.
        close_old_connections()
        try:
            return work(*args)
        except Exception:
            # The task that started it may be gone; the work's lease runs out and a sweeper hands
            # it over again.
            logger.exception("%s: work failed", self.name)
            raise
        finally:
            close_old_connections()
            self.free.release()

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)


_lock = threading.Lock()
_pools: dict[str, tuple[int, WorkerThreads]] = {}


def process_pool(name: str, size: int) -> WorkerThreads:
    """This process's pool called `name` (made with `size` threads on first use in the process)."""
    with _lock:
        current = _pools.get(name)
        if current is None or current[0] != os.getpid():
            current = _pools[name] = (os.getpid(), WorkerThreads(size, name))
        return current[1]


def finish(name: str) -> None:
    """Let the work in flight on this process's pool `name` end (a worker process shutting down)."""
    with _lock:
        current = _pools.get(name)
    if current is not None and current[0] == os.getpid():
        current[1].shutdown()
