"""The threads a worker process makes its webhook attempts on, and records them on (see
apps/core/threads.py), which the tasks hand to sending.py: a receiver that hangs holds one thread,
never a worker process."""

from django.conf import settings

from apps.core.threads import WorkerThreads, process_pool
from apps.core.threads import finish as finish_pool

POOL = "webhook-sender"
RECORDERS = "webhook-recorder"


def pool() -> WorkerThreads:
    return process_pool(POOL, settings.WEBHOOK_SENDERS)


def recorders() -> WorkerThreads:
    """The threads that write a batch's outcomes while its next attempts are sent: as many as the
    senders, so a batch never waits for a recorder that another batch holds."""
    return process_pool(RECORDERS, settings.WEBHOOK_SENDERS)


def finish() -> None:
    """Let the attempts in flight end and record their outcomes (a worker process shutting down):
    the senders first, which hand the recorders their last work."""
    finish_pool(POOL)
    finish_pool(RECORDERS)
