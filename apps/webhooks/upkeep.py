"""The webhook sender's upkeep, run by Celery beat: the sweep, which hands the broker what it
does not hold (never handed over, retries come due, leases run out, lost messages), sends the
probes of endpoints held back and fails deliveries held back too long; and the pruning of old
history. (The e-mail to an account's admins when an endpoint is disabled goes with the disabling,
in breaker.py.)"""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.core.outbox import unleased
from apps.webhooks import breaker, outbox
from apps.webhooks.models import Delivery, DeliveryStatus, Event, WebhookEndpoint, held_back_endpoints
from apps.webhooks.outbox import SWEEP_BATCH

logger = logging.getLogger(__name__)


def deliveries_sweep(*, hand_over: Callable[[list[str]], None], limit: int = SWEEP_BATCH) -> int:
    """Hand the broker every due delivery it does not hold: never handed over (broker down at
    commit), retries whose time has come, ones whose holder died (lease run out), and ones handed
    over too long ago (lost messages); and one probe for each endpoint held back whose back-off
    has passed. Deliveries of endpoints held back or disabled wait; those held back longer than
    WEBHOOK_MAX_AGE are failed. What is handed over goes to `hand_over` (services.enqueue), after
    the commit of its round."""
    now = timezone.now()
    _expire_held(now)
    stale = now - timedelta(seconds=settings.WEBHOOK_REQUEUE_AFTER)
    total = 0
    while True:
        with transaction.atomic():
            # skip_locked: two sweepers (or a sweeper and a worker) never claim the same rows. Only
            # the deliveries are locked, not their endpoints (joined for the filter), which
            # workers lock while they claim and record batches.
            ids = list(
                Delivery.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(unleased(now), status=DeliveryStatus.PENDING, next_attempt_at__lte=now, endpoint__enabled=True)
                .exclude(held_back_endpoints("endpoint__"))
                .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale) | Q(locked_until__lt=now))
                .order_by("next_attempt_at")
                .values_list("pk", flat=True)[:limit]
            )
            if not ids:
                break
            handed_over = outbox.mark_handed_over(ids, now)
        hand_over(handed_over)
        total += len(ids)
        if len(ids) < limit:
            break
    total += _send_probes(now, hand_over)
    if total:
        logger.info("webhook sweep enqueued=%d", total)
    return total


def _expire_held(now: datetime) -> int:
    """Fail the deliveries that have waited for their endpoint's breaker longer than WEBHOOK_MAX_AGE
    (an endpoint paused by hand keeps its deliveries: they go out when it is enabled)."""
    held_back = WebhookEndpoint.objects.filter(held_back_endpoints(), enabled=True)
    expired = Delivery.objects.filter(
        unleased(now),
        endpoint__in=held_back,
        status=DeliveryStatus.PENDING,
        created_at__lt=now - settings.WEBHOOK_MAX_AGE,
    ).update(
        status=DeliveryStatus.FAILED,
        next_attempt_at=None,
        enqueued_at=None,
        updated_at=now,
        last_error=f"Not sent: the endpoint failed every attempt for longer than {settings.WEBHOOK_MAX_AGE} "
        "(WEBHOOK_MAX_AGE) after it was made.",
    )
    if expired:
        logger.warning("webhook deliveries expired=%d (held back longer than WEBHOOK_MAX_AGE)", expired)
    return expired


def _send_probes(now: datetime, hand_over: Callable[[list[str]], None]) -> int:
    """Hand over the oldest waiting delivery of each endpoint held back whose probe is due (due now
    whatever retry time it had: the breaker's back-off, not the retry delays, times a probe; its
    attempt counts, so after its fifth the next oldest is the probe)."""
    probe_due = WebhookEndpoint.objects.filter(
        held_back_endpoints(), Q(next_probe_at__isnull=True) | Q(next_probe_at__lte=now), enabled=True
    )
    ids = []
    for endpoint_id in probe_due.values_list("pk", flat=True):
        oldest = breaker.oldest_waiting(endpoint_id, now)
        if oldest is not None:
            ids.append(oldest)
    Delivery.objects.filter(pk__in=ids, next_attempt_at__gt=now).update(next_attempt_at=now)
    handed_over = outbox.mark_handed_over(ids, now)
    if handed_over:
        hand_over(handed_over)
    return len(handed_over)


def history_prune(*, older_than_days: int | None = None) -> int:
    """Delete events (with deliveries and attempts) older than the history window once none of
    their deliveries is still pending."""
    days = older_than_days if older_than_days is not None else settings.WEBHOOK_HISTORY_DAYS
    cutoff = timezone.now() - timedelta(days=days)
    old = Event.objects.filter(created_at__lt=cutoff).exclude(deliveries__status=DeliveryStatus.PENDING)
    _, per_model = Event.objects.filter(pk__in=old.values("pk")).delete()
    return per_model.get(Event._meta.label, 0)
