"""Sending deliveries: claimed under a lease, attempted in batches (one per endpoint, in order, over
its pooled connection), and their outcomes recorded with the one retry policy (Delivery.record_failure,
apps.core.outbox.retry_delay) and the consequences apps/webhooks/outcomes.py gives each verdict."""

import logging
import time
from collections.abc import Callable
from concurrent.futures import wait
from datetime import datetime
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.core import crypto
from apps.core.lookups import AnyOf
from apps.core.outbox import lease_end, unleased
from apps.core.threads import WorkerThreads
from apps.webhooks import breaker, outbox, transport
from apps.webhooks.models import Attempt, AttemptTrigger, Delivery, DeliveryStatus, WebhookEndpoint
from apps.webhooks.outcomes import Outcome

logger = logging.getLogger(__name__)

UNSIGNABLE = (
    "Not sent: the endpoint's signing secret cannot be read with the keys in FERNET_KEYS. "
    "Rotate the secret on the endpoint's page to give it a new one."
)

# Where deliveries go on to the broker (services.enqueue).
HandOver = Callable[[list[str]], None]

# What recording an attempt changes on the delivery.
_OUTCOME_FIELDS = (
    "status",
    "attempts",
    "next_attempt_at",
    "locked_until",
    "enqueued_at",
    "last_status_code",
    "last_error",
    "delivered_at",
    "updated_at",
)


def deliveries_attempt(
    *,
    delivery_ids: list[str],
    hand_over: HandOver,
    manual: bool = False,
    pool: WorkerThreads | None = None,
    patience: float | None = None,
) -> list[Attempt]:
    """Make one attempt of each due delivery among `delivery_ids` that no other worker holds and
    whose endpoint may be sent to now, record them, and schedule the next attempts or finish;
    return the attempts made.

    Each endpoint's deliveries are a batch, sent one after the other over the process's pooled
    connection to it. Without a `pool` the batches are sent here, one after the other; with one,
    on its threads at the same time, and this waits for them at most `patience` seconds: a batch
    still running then (a receiver that hangs) records its own outcome when it ends, and only the
    attempts of the batches that ended are returned. Each batch, once recorded, passes what waited
    for its endpoint to `hand_over` (services.enqueue: this module does not reach the tasks).
    """
    started = time.monotonic()
    batches = _claim(delivery_ids, manual=manual, now=timezone.now())
    send = partial(_send_batch, manual=manual, started=started, hand_over=hand_over)
    if pool is None:
        return [attempt for endpoint, batch in batches for attempt in send(endpoint, batch)]
    futures = [pool.submit(partial(send, endpoint, batch)) for endpoint, batch in batches]
    done, _ = wait(futures, timeout=patience)
    return [attempt for future in futures if future in done for attempt in future.result()]


# --- claiming --------------------------------------------------------------------------------------


def _claim(delivery_ids: list[str], *, manual: bool, now: datetime) -> list[tuple[WebhookEndpoint, list[Delivery]]]:
    """Take the deliveries for one attempt each; those not due, or held by another worker, are
    left out, and so are those their endpoint may not be sent now (see `_within_limits`). They come
    back as one batch per endpoint, each in the order given, with their event's kind and body
    (`event_kind`, `event_body`), their number of attempts logged, and `locked_until` set to the
    lease now held on them."""
    # Long enough for the slowest attempt (connect timeout plus read timeout), with a margin; a
    # batch starts no attempt after WEBHOOK_TIMEOUT, so its last one ends within the lease too.
    lease = lease_end(now, timeout=settings.WEBHOOK_TIMEOUT, margin=5)
    claimable = Delivery.objects.filter(unleased(now), AnyOf("id", delivery_ids))
    with transaction.atomic():
        # A conditional UPDATE is atomic, so of two workers with the same message only one wins.
        # A manual retry is an operator's request: it goes out whatever the endpoint's state.
        if manual:
            taken, endpoints = claimable.update(locked_until=lease), None
        else:
            taken, endpoints = _within_limits(claimable, delivery_ids, lease, now)
    if not taken:
        return []
    attempts_logged = (
        Attempt.objects.filter(delivery=OuterRef("pk"))
        .order_by()
        .values("delivery")
        .annotate(n=Count("pk"))
        .values("n")
    )
    claimed = {
        str(delivery.pk): delivery
        # What an attempt and its record read of the event, its kind and body, as two values of
        # the delivery's row rather than an Event instance each.
        for delivery in Delivery.objects.defer("created_at")
        .annotate(
            event_kind=F("event__kind"),
            event_body=F("event__body"),
            attempts_logged=Coalesce(Subquery(attempts_logged), 0),
        )
        .filter(AnyOf("id", delivery_ids), locked_until=lease)
    }
    # Their endpoints as the claim read them (one instance per endpoint, not one per delivery).
    if endpoints is None:
        endpoints = WebhookEndpoint.objects.in_bulk({delivery.endpoint_id for delivery in claimed.values()})
    batches: dict[int, list[Delivery]] = {}
    for pk in delivery_ids:
        delivery = claimed.get(str(pk))
        if delivery is not None and delivery.endpoint_id in endpoints:  # not deleted meanwhile
            batches.setdefault(delivery.endpoint_id, []).append(delivery)
    return [(endpoints[endpoint_id], batch) for endpoint_id, batch in batches.items()]


def _within_limits(
    claimable, delivery_ids: list[str], lease: datetime, now: datetime
) -> tuple[int, dict[int, WebhookEndpoint]]:
    """Lease the due deliveries whose endpoint may be sent to now; return how many were leased,
    and their endpoints by id.

    An endpoint has at most WEBHOOK_ENDPOINT_CONCURRENCY batches in flight; one held back by its
    breaker gets a single probe once its back-off has passed; a disabled one gets nothing. What is
    left out waits with no task at the broker: the endpoint's batch in flight, or its successful
    probe, hands it over when it ends (the sweeper too, unless the endpoint is held back)."""
    claimable = claimable.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
    position = {str(pk): index for index, pk in enumerate(delivery_ids)}
    by_endpoint: dict[int, list] = {}
    for pk, endpoint_id in sorted(claimable.values_list("pk", "endpoint_id"), key=lambda row: position[str(row[0])]):
        by_endpoint.setdefault(endpoint_id, []).append(pk)
    if not by_endpoint:
        return 0, {}
    # One claim at a time per endpoint, so its count of batches in flight is exact; locked in one
    # order, so claims over several endpoints never deadlock.
    endpoints = list(WebhookEndpoint.objects.select_for_update().filter(pk__in=by_endpoint).order_by("pk"))
    in_flight = dict(
        Delivery.objects.filter(endpoint__in=by_endpoint, status=DeliveryStatus.PENDING, locked_until__gt=now)
        .order_by()
        .values("endpoint")
        .annotate(batches=Count("locked_until", distinct=True))
        .values_list("endpoint", "batches")
    )
    take, waiting = [], []
    for endpoint in endpoints:
        pks = by_endpoint[endpoint.pk]
        if endpoint.holds_deliveries(now) or in_flight.get(endpoint.pk, 0) >= settings.WEBHOOK_ENDPOINT_CONCURRENCY:
            waiting.extend(pks)
        elif endpoint.held_back:
            probe, rest = breaker.take_probe(endpoint, pks, lease=lease, now=now)
            take.extend(probe)
            waiting.extend(rest)
        else:
            take.extend(pks)
    if waiting:
        claimable.filter(AnyOf("id", waiting)).update(enqueued_at=None)
    taken = claimable.filter(AnyOf("id", take)).update(locked_until=lease) if take else 0
    return taken, {endpoint.pk: endpoint for endpoint in endpoints}


# --- attempting ------------------------------------------------------------------------------------


def _send_batch(
    endpoint: WebhookEndpoint, deliveries: list[Delivery], *, manual: bool, started: float, hand_over: HandOver
) -> list[Attempt]:
    """Attempt one endpoint's deliveries in order, then record the outcomes.

    No further attempt is started once WEBHOOK_TIMEOUT has passed since the claim, after an
    attempt that got no answer (the endpoint hangs or refuses: the rest would only wait behind
    it), or once the endpoint's failures in a row reach the breaker's threshold. The rest go back
    unattempted. The outcomes are written together at the end (so `delivered_at` and the next
    attempt's time count from then); a worker that dies before that leaves them to be sent again
    once their lease runs out (receivers deduplicate by delivery id).
    """
    failures = endpoint.consecutive_failures
    sent = []
    for delivery in deliveries:
        if sent and (
            time.monotonic() - started > settings.WEBHOOK_TIMEOUT
            or not sent[-1][1].consequence.answered
            or failures >= settings.WEBHOOK_BREAKER_THRESHOLD
        ):
            break
        started_at = timezone.now()
        outcome = _attempt(endpoint, delivery, started_at)
        sent.append((delivery, outcome, started_at))
        failures = 0 if outcome.ok else failures + 1
    rest, lease = deliveries[len(sent) :], deliveries[0].locked_until
    handover, attempts = _record_batch(endpoint.pk, sent, rest, manual=manual, lease=lease)
    if handover:
        hand_over(handover)
    return attempts


def _attempt(endpoint: WebhookEndpoint, delivery: Delivery, started_at: datetime) -> Outcome:
    """Send one delivery, signed. A secret no key of FERNET_KEYS opens (the key that encrypted it
    was dropped from FERNET_KEYS too early) signs nothing: the attempt fails without a request, and
    counts, so the delivery ends like any other that cannot be delivered instead of being taken up
    again after every lease."""
    try:
        signing = endpoint.signing(started_at)
    except crypto.CredentialUnreadable:
        return Outcome(request_headers={}, error=UNSIGNABLE)
    return transport.send(
        url=endpoint.url,
        body=delivery.event_body.encode(),
        event=delivery.event_kind,
        delivery_id=str(delivery.id),
        **signing,
    )


# --- recording -------------------------------------------------------------------------------------


def _record_batch(
    endpoint_id: int, sent: list, rest: list[Delivery], *, manual: bool, lease: datetime
) -> tuple[list[str], list[Attempt]]:
    """Write a batch's attempts and outcomes and the endpoint's health; return the deliveries
    that waited for the endpoint, now marked as handed over, and the attempts."""
    now = timezone.now()
    with transaction.atomic():
        # The endpoint's lock orders this after any claim that left deliveries waiting on this
        # batch, so the hand-over below sees them.
        endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        if endpoint is None:  # deleted meanwhile, with its deliveries
            return [], []
        health_before, was_held_back = breaker.health(endpoint), endpoint.held_back
        # The claim of a probe marks the endpoint with its lease (breaker.take_probe): a batch
        # claimed before the breaker opened, still in flight then, is no probe.
        probe = not manual and endpoint.next_probe_at == lease
        endpoint.record_results([(outcome.ok, at) for _, outcome, at in sent], now, probe=probe)
        attempts = [_record(d, outcome, started_at=at, manual=manual, now=now) for d, outcome, at in sent]
        outbox.insert_rows(Attempt, attempts)
        held = _write_outcomes([delivery for delivery, _, _ in sent], rest, lease)
        breaker.judge(endpoint, [outcome for _, outcome, _ in sent], health_before, now)
        if was_held_back and not endpoint.held_back:
            breaker.release_backlog(endpoint, now)
        handover = [] if endpoint.holds_deliveries(now) else _take_waiting(endpoint, now)
    if held < len(sent):
        logger.warning("%d webhook attempts outlived their lease; their outcomes are not recorded", len(sent) - held)
    for attempt in attempts:
        _log(attempt)
    return handover, attempts


def _record(delivery: Delivery, outcome: Outcome, *, started_at: datetime, manual: bool, now: datetime) -> Attempt:
    """Set the delivery's state after an attempt with this outcome; return the attempt (both unsaved).

    Every automatic attempt counts against the delivery, a probe's too (the spec's five): it is the
    breaker that spares an outage's other deliveries, by not attempting them. A manual retry counts
    for nothing, and leaves the schedule (and a failed delivery's verdict) as it was."""
    counted = not manual
    if counted:
        delivery.attempts += 1
    delivery.locked_until = None
    delivery.enqueued_at = None
    delivery.updated_at = now
    if outcome.ok:
        delivery.record_success(now, outcome.status)
    else:
        delivery.last_status_code = outcome.status
        delivery.last_error = outcome.error or f"HTTP {outcome.status}"
        delivery.record_failure(now, settings.WEBHOOK_RETRY_DELAYS, automatic=counted)
        if outcome.consequence.gone:
            # The receiver says the URL is gone for good: stop sending to it (shown in the admin).
            delivery.status, delivery.next_attempt_at = DeliveryStatus.FAILED, None
    return Attempt(
        delivery=delivery,
        number=delivery.attempts_logged + 1,
        trigger=AttemptTrigger.MANUAL if manual else AttemptTrigger.AUTOMATIC,
        counted=counted,
        started_at=started_at,
        request_headers=outcome.request_headers,
        request_body=delivery.event_body,
        response_status=outcome.status,
        response_headers=outcome.headers,
        response_body=outcome.body,
        duration_ms=outcome.duration_ms,
        error=outcome.error,
    )


def _write_outcomes(recorded: list[Delivery], rest: list[Delivery], lease: datetime) -> int:
    """Write the recorded deliveries' new state, and let the unattempted ones go; return how many
    were written (those whose lease still held)."""
    # Deliveries with the same outcome get the same new values: one UPDATE for each group (a batch
    # that went well is one group), where bulk_update's CASE per row and field cost more CPU than
    # the attempts themselves.
    groups: dict[tuple, list] = {}
    for delivery in recorded:
        groups.setdefault(tuple(getattr(delivery, name) for name in _OUTCOME_FIELDS), []).append(delivery.pk)
    held = 0
    for values, pks in groups.items():
        # The lease is the lock: only its holder writes the outcome (no second locking read). A
        # holder that overran its lease finds the row taken over and leaves it to the new holder,
        # keeping the record of the attempt it made.
        held += Delivery.objects.filter(AnyOf("id", pks), locked_until=lease).update(
            **dict(zip(_OUTCOME_FIELDS, values, strict=True))
        )
    if rest:
        Delivery.objects.filter(AnyOf("id", [d.pk for d in rest]), locked_until=lease).update(
            locked_until=None, enqueued_at=None
        )
    return held


def _take_waiting(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The endpoint's due deliveries that wait with no task at the broker, oldest first, marked as
    handed over."""
    waiting = Delivery.objects.filter(
        endpoint_id=endpoint.pk,
        status=DeliveryStatus.PENDING,
        next_attempt_at__lte=now,
        enqueued_at__isnull=True,
        locked_until__isnull=True,
    ).order_by("created_at", "event_id")
    return outbox.mark_handed_over(list(waiting.values_list("pk", flat=True)[: outbox.SWEEP_BATCH]), now)


def _log(attempt: Attempt) -> None:
    delivery = attempt.delivery
    logger.info(
        "webhook attempt delivery=%s endpoint=%s event=%s number=%d status=%s duration_ms=%d%s",
        delivery.id,
        delivery.endpoint_id,
        delivery.event_kind,
        attempt.number,
        attempt.response_status if attempt.response_status is not None else "-",
        attempt.duration_ms,
        f" error={attempt.error!r}" if attempt.error else "",
    )
