"""The threads a worker process sends webhook attempts on.

A Celery worker has few processes (the Procfile's two). Were attempts made on them, a receiver that
hangs would hold a whole process for the timeout, and two would stop every account's webhooks. On
these threads it holds one thread; the task that started the attempt returns after a short wait,
and the thread records the outcome itself when the attempt ends. Each worker process has its own
pool, made on first use, so a forked child never shares its parent's threads.
"""

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)


class SenderPool:
    def __init__(self, size: int) -> None:
        self.executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="webhook-sender")
        # Submitting waits for a free thread: work never queues up in memory behind busy threads,
        # where its lease would run out before it started.
        self.free = threading.BoundedSemaphore(size)

    def submit(self, work: Callable, *args) -> Future:
        self.free.acquire()
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
            # The task that started it may be gone; its deliveries' leases run out and the sweeper
            # hands them over again.
            logger.exception("webhook batch failed")
            raise
        finally:
            close_old_connections()
            self.free.release()

    def shutdown(self) -> None:
        self.executor.shutdown(wait=True)


_lock = threading.Lock()
_pool: tuple[int, SenderPool] | None = None


def pool() -> SenderPool:
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), SenderPool(settings.WEBHOOK_SENDERS))
        return _pool[1]


def finish() -> None:
    """Let the attempts in flight end and record their outcomes (a worker process shutting down)."""
    with _lock:
        current = _pool
    if current is not None and current[0] == os.getpid():
        current[1].shutdown()
