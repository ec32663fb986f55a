"""The threads a worker process makes its webhook attempts on (see apps/core/threads.py), which the
tasks hand to sending.py: a receiver that hangs holds one thread, never a worker process."""

from django.conf import settings

from apps.core.threads import WorkerThreads, process_pool
from apps.core.threads import finish as finish_pool

POOL = "webhook-sender"


def pool() -> WorkerThreads:
    return process_pool(POOL, settings.WEBHOOK_SENDERS)


def finish() -> None:
    """Let the attempts in flight end and record their outcomes (a worker process shutting down)."""
    finish_pool(POOL)
