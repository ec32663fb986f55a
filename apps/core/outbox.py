"""What the service's outboxes share (webhook deliveries, publication jobs, a destination's own records):
rows written in the transaction of the change that calls for them, taken by a worker under a lease
(`locked_until`), and tried again on a schedule of delays (a setting: WEBHOOK_RETRY_DELAYS,
PUBLISH_RETRY_DELAYS)."""

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import models


def unleased(now: datetime) -> models.Q:
    """Rows no worker holds: never taken, or their holder's lease has run out."""
    return models.Q(locked_until__isnull=True) | models.Q(locked_until__lt=now)


def leased(locked_until: datetime | None, now: datetime) -> bool:
    """Whether a worker still holds a row whose lease ends at `locked_until` (the converse of `unleased`)."""
    return locked_until is not None and locked_until >= now


def lease_end(now: datetime, *, timeout: float, margin: float) -> datetime:
    """Until when a worker holds what it takes now. It starts nothing new after `timeout`, and
    each step it starts times out after `timeout`: so twice that, and a margin."""
    return now + timedelta(seconds=timeout * 2 + margin)


def retry_delay(
    failed: int, delays: Sequence[float], *, at_least: float | None = None, capped: bool = False
) -> float | None:
    """The retry policy: seconds before the next try after `failed` counted failures (1: the first
    try failed), one delay of the schedule per retry; None once the schedule is used up.

    `at_least`: a pause the other side asked for (Retry-After), when it is the longer. `capped`:
    never give up, keep to the schedule's last delay (an endpoint's breaker probes)."""
    failed = max(failed, 1)
    if capped:
        failed = min(failed, len(delays))
    if not delays or failed > len(delays):
        return None
    return max(delays[failed - 1], at_least or 0)
