"""Which Celery worker incarnation this process belongs to, written on the jobs it claims, and the
release of the jobs a dead former incarnation of it left running (so they do not wait out their
leases)."""

import logging
import os
import uuid

from django.utils import timezone

from apps.publishing.models import JobState, PublicationJob

logger = logging.getLogger(__name__)


# Which worker this process belongs to: "<node name> <main process id> <start id>", set when a
# Celery worker starts (tasks.py), before it forks its pool; empty outside a worker. Written on
# the jobs it claims (PublicationJob.locked_by).
_worker = {"identity": ""}


def worker_identity() -> str:
    return _worker["identity"]


def worker_started(*, node_name: str) -> str:
    """Name this worker incarnation (called in its main process, before the pool starts)."""
    _worker["identity"] = f"{node_name} {os.getpid()} {uuid.uuid4().hex[:12]}"
    return _worker["identity"]


def _former_self(holder: str, *, pid: str) -> bool:
    """Whether the worker incarnation `holder` is dead: it ran in this very process id (its place
    taken by us, as in a restarted container) or its process is gone."""
    held_by = holder.split(" ")[1] if holder.count(" ") == 2 else ""
    if held_by == pid or not held_by.isdigit():
        return True
    try:
        os.kill(int(held_by), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, and is someone else's
        return False
    return False


def jobs_release_former(*, identity: str) -> int:
    """Release the jobs a dead former incarnation of this worker (the same node name) was running:
    queued again and due at once, instead of held until their leases run out (2x PUBLISH_TIMEOUT +
    10 s, more than an edition's "resumes within a minute" allows). A crashed worker that comes
    back is the usual way such jobs are found. Node names are unique among running workers; a
    holder whose process still runs on this host (two workers started with the same name) keeps
    its jobs all the same. Returns how many were released."""
    if identity.count(" ") != 2:
        return 0  # not a worker
    node, pid, _ = identity.split(" ")
    holders = (
        PublicationJob.objects.filter(state=JobState.RUNNING, locked_by__startswith=f"{node} ")
        .exclude(locked_by=identity)
        .values_list("locked_by", flat=True)
        .distinct()
    )
    dead = [holder for holder in set(holders) if _former_self(holder, pid=pid)]
    if not dead:
        return 0
    released = PublicationJob.objects.filter(state=JobState.RUNNING, locked_by__in=dead).update(
        state=JobState.QUEUED, locked_until=None, updated_at=timezone.now()
    )
    logger.warning("publication jobs of a dead former worker %s released: %d", node, released)
    return released
