"""The webhooks outbox.

Services that change state call `event_emit` (or `events_emit`) inside their own transaction: the
event and its deliveries are written with the change, and handed to the broker only after commit.
A rolled-back change sends nothing; a committed one is never lost, because the due time lives in
the database and `deliveries_sweep` (Celery beat) hands over whatever the broker never got.
"""

import logging
import time
from collections.abc import Iterable
from concurrent.futures import wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.accounts.models import Account
from apps.core.errors import Conflict
from apps.core.mail import tell_account_admins
from apps.core.validation import field_error
from apps.webhooks import transport
from apps.webhooks.models import (
    SUBSCRIBABLE_EVENTS,
    Attempt,
    AttemptTrigger,
    Delivery,
    DeliveryStatus,
    Event,
    EventKind,
    SignatureFormat,
    WebhookEndpoint,
    held_back_endpoints,
    new_secret,
    new_standard_secret,
    standard_key,
    unleased,
)
from apps.webhooks.senders import SenderPool
from apps.webhooks.serializers import delivery_body

logger = logging.getLogger(__name__)

SWEEP_BATCH = 1000


@dataclass(frozen=True)
class EventInput:
    account: Account
    data: dict
    post_id: int | None = None


# From this many rows on, PostgreSQL gets them with COPY: bulk_create's INSERT ... UNNEST has
# psycopg quote every value of its arrays in Python (event bodies are kilobytes of JSON), several
# times slower. Fewer rows take the ordinary path, which query counts and tests see.
COPY_MIN_ROWS = 100
# Fields whose Python values PostgreSQL takes as they are (models with others use bulk_create).
_COPIED_AS_IS = frozenset({
    "AutoField", "BigAutoField", "UUIDField", "ForeignKey", "CharField", "TextField", "BooleanField", "DateTimeField",
    "IntegerField", "BigIntegerField", "SmallIntegerField", "PositiveIntegerField", "PositiveSmallIntegerField",
})  # fmt: skip


def _insert(model: type, objs: list) -> list:
    """Insert new rows (as bulk_create does: defaults and auto_now filled in, primary keys set)."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql" or len(objs) < COPY_MIN_ROWS:
        return model.objects.bulk_create(objs)
    meta = model._meta
    fields = meta.concrete_fields
    if any(field.get_internal_type() not in _COPIED_AS_IS for field in fields):
        return model.objects.bulk_create(objs)
    table = connection.ops.quote_name(meta.db_table)
    with connection.cursor() as cursor:
        if getattr(meta.pk, "db_returning", False):  # the database numbers the rows: take the numbers first
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [meta.db_table, meta.pk.column, len(objs)],
            )
            for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
                obj.pk = pk
        # pre_save where a field sets its own value (auto_now); the rest as psycopg adapts them.
        names = [(field.attname, field if getattr(field, "auto_now", False) else None) for field in fields]
        columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for obj in objs:
                copy.write_row([field.pre_save(obj, True) if field else getattr(obj, name) for name, field in names])
    for obj in objs:
        obj._state.adding, obj._state.db = False, connection.alias
    return objs


def events_emit(*, kind: str, items: Iterable[EventInput], endpoint: WebhookEndpoint | None = None) -> list[Event]:
    """Write events and one delivery per subscribed, enabled endpoint; enqueue after commit.

    Must run inside the caller's transaction. `endpoint` sends to that endpoint only (test events).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events_emit must run inside the transaction of the change it reports")
    now = timezone.now()
    events = _insert(
        Event,
        [
            Event(
                account=item.account,
                kind=kind,
                body=delivery_body(kind, item.account, item.data, now),
                post_id=item.post_id,
            )
            for item in items
        ],
    )
    endpoints_by_account: dict[int, list[WebhookEndpoint]] = {}
    deliveries = []
    for event in events:
        if endpoint is not None:
            targets = [endpoint]
        else:
            if event.account_id not in endpoints_by_account:
                endpoints_by_account[event.account_id] = [
                    e for e in WebhookEndpoint.objects.filter(account_id=event.account_id, enabled=True)
                    if e.subscribes_to(kind)
                ]  # fmt: skip
            targets = endpoints_by_account[event.account_id]
        # An endpoint held back by its breaker gets no task for them: they wait for its probe.
        deliveries.extend(
            Delivery(
                event_id=event.pk, endpoint_id=target.pk, next_attempt_at=now, created_at=now,
                enqueued_at=None if target.holds_deliveries(now) else now,
            )
            for target in targets
        )  # fmt: skip
    _insert(Delivery, deliveries)
    ids = [str(d.id) for d in deliveries if d.enqueued_at is not None]
    if ids:
        transaction.on_commit(lambda: enqueue(ids))
    return events


def event_emit(*, account: Account, kind: str, data: dict, post_id: int | None = None) -> Event:
    return events_emit(kind=kind, items=[EventInput(account=account, data=data, post_id=post_id)])[0]


def enqueue(delivery_ids: list[str], *, manual: bool = False) -> None:
    """Hand deliveries to the broker, WEBHOOK_BATCH_SIZE to a task (manual retries one each). A
    broker that is down loses nothing: the deliveries are marked as not handed over, and the
    sweeper hands them over once it is back."""
    from apps.webhooks.tasks import deliver_webhook, deliver_webhooks

    size = 1 if manual else settings.WEBHOOK_BATCH_SIZE
    chunks = [delivery_ids[start : start + size] for start in range(0, len(delivery_ids), size)]
    failed, sent = [], 0
    try:
        # One producer for all the messages (Celery would take one from its pool for each), and
        # without the headers' copy of the arguments for monitoring tools, which cost as much as
        # the rest of a message.
        with deliver_webhook.app.producer_or_acquire() as producer:
            options = {"retry": False, "argsrepr": "", "kwargsrepr": "", "producer": producer}
            for chunk in chunks:
                try:
                    if len(chunk) == 1:
                        deliver_webhook.apply_async((chunk[0],), {"manual": manual}, **options)
                    else:
                        deliver_webhooks.apply_async((chunk,), **options)
                except Exception as exc:  # the broker's errors vary by transport; none may fail the caller
                    failed.extend(chunk)
                    error = exc
                sent += 1
    except Exception as exc:  # no producer to be had: what was not tried yet stays for the sweeper
        failed.extend(delivery_id for chunk in chunks[sent:] for delivery_id in chunk)
        error = exc
    if failed:
        logger.warning("broker unavailable, %d deliveries left for the sweeper: %s", len(failed), error)
        Delivery.objects.filter(pk__in=failed).update(enqueued_at=None)


# What recording an attempt changes on the delivery.
_OUTCOME_FIELDS = ("status", "attempts", "next_attempt_at", "locked_until", "enqueued_at", "last_status_code",
                   "last_error", "delivered_at", "updated_at")  # fmt: skip
_HEALTH_FIELDS = ("consecutive_failures", "failing_since", "next_probe_at", "enabled", "disabled_reason")


def _claim(delivery_ids: list[str], *, manual: bool, now: datetime) -> list[Delivery]:
    """Take the deliveries for one attempt each; those not due, or held by another worker, are
    left out, and so are those their endpoint may not be sent now (see `_within_limits`). They come
    back in the order given, with their event (body, account), endpoint and number of attempts
    logged, and `locked_until` set to the lease now held on them."""
    # Long enough for the slowest attempt (connect timeout plus read timeout), with a margin; a
    # batch starts no attempt after WEBHOOK_TIMEOUT, so its last one ends within the lease too.
    lease = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT * 2 + 5)
    claimable = Delivery.objects.filter(unleased(now), pk__in=delivery_ids)
    with transaction.atomic():
        # A conditional UPDATE is atomic, so of two workers with the same message only one wins.
        # A manual retry is an operator's request: it goes out whatever the endpoint's state.
        taken = claimable.update(locked_until=lease) if manual else _within_limits(claimable, delivery_ids, lease, now)
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
        for delivery in Delivery.objects.select_related("event__account", "endpoint")
        .annotate(attempts_logged=Coalesce(Subquery(attempts_logged), 0))
        .filter(pk__in=delivery_ids, locked_until=lease)
    }
    return [claimed[str(pk)] for pk in delivery_ids if str(pk) in claimed]


def _within_limits(claimable, delivery_ids: list[str], lease: datetime, now: datetime) -> int:
    """Lease the due deliveries whose endpoint may be sent to now; return how many were leased.

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
        return 0
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
    take, wait = [], []
    for endpoint in endpoints:
        pks = by_endpoint[endpoint.pk]
        if endpoint.holds_deliveries(now) or in_flight.get(endpoint.pk, 0) >= settings.WEBHOOK_ENDPOINT_CONCURRENCY:
            wait.extend(pks)
        elif endpoint.held_back:
            # The probe is the endpoint's oldest waiting delivery, so that what waited goes out in
            # order once one succeeds; a message without it waits for the sweeper's probe.
            probe = _oldest_waiting(endpoint.pk, now)
            take.extend(pk for pk in pks if pk == probe)
            wait.extend(pk for pk in pks if pk != probe)
            if probe in pks:
                # No second probe while this one is out; should its worker die, the next comes after the lease.
                WebhookEndpoint.objects.filter(pk=endpoint.pk).update(next_probe_at=lease)
        else:
            take.extend(pks)
    if wait:
        claimable.filter(pk__in=wait).update(enqueued_at=None)
    return claimable.filter(pk__in=take).update(locked_until=lease) if take else 0


def _record(
    delivery: Delivery, outcome: transport.Outcome, *, started_at: datetime, manual: bool, outage: bool, now: datetime
) -> Attempt:
    """Set the delivery's state after an attempt with this outcome; return the attempt (both unsaved).

    `outage`: the endpoint's breaker holds it back after this attempt. Its failure is then the
    endpoint's, not the delivery's: it uses up none of the delivery's attempts, and the delivery
    waits for the breaker to close (or for WEBHOOK_MAX_AGE) with its schedule untouched."""
    counted = not manual and not (outage and not outcome.ok)
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
        if outage and not manual:
            delivery.next_attempt_at = now  # first in line when the breaker closes
        delivery.record_failure(now, settings.WEBHOOK_RETRY_DELAYS, automatic=counted)
        if outcome.status == 410:
            # The receiver says the URL is gone for good: stop sending to it (shown in the admin).
            delivery.status, delivery.next_attempt_at = DeliveryStatus.FAILED, None
    return Attempt(
        delivery=delivery,
        number=delivery.attempts_logged + 1,
        trigger=AttemptTrigger.MANUAL if manual else AttemptTrigger.AUTOMATIC,
        counted=counted,
        started_at=started_at,
        request_headers=outcome.request_headers,
        request_body=delivery.event.body,
        response_status=outcome.status,
        response_headers=outcome.headers,
        response_body=outcome.body,
        duration_ms=outcome.duration_ms,
        error=outcome.error,
    )


def deliveries_attempt(
    *, delivery_ids: list[str], manual: bool = False, pool: SenderPool | None = None, patience: float | None = None
) -> list[Attempt]:
    """Make one attempt of each due delivery among `delivery_ids` that no other worker holds and
    whose endpoint may be sent to now, record them, and schedule the next attempts or finish;
    return the attempts made.

    Each endpoint's deliveries are a batch, sent one after the other over the process's pooled
    connection to it. Without a `pool` the batches are sent here, one after the other; with one,
    on its threads at the same time, and this waits for them at most `patience` seconds: a batch
    still running then (a receiver that hangs) records its own outcome when it ends, and only the
    attempts of the batches that ended are returned.
    """
    started = time.monotonic()
    deliveries = _claim(delivery_ids, manual=manual, now=timezone.now())
    batches: dict[int, list[Delivery]] = {}
    for delivery in deliveries:
        batches.setdefault(delivery.endpoint_id, []).append(delivery)
    if pool is None:
        return [a for batch in batches.values() for a in _send_batch(batch, manual=manual, started=started)]
    futures = [pool.submit(partial(_send_batch, batch, manual=manual, started=started)) for batch in batches.values()]
    done, _ = wait(futures, timeout=patience)
    return [attempt for future in futures if future in done for attempt in future.result()]


def _send_batch(deliveries: list[Delivery], *, manual: bool, started: float) -> list[Attempt]:
    """Attempt one endpoint's deliveries in order, then record the outcomes.

    No further attempt is started once WEBHOOK_TIMEOUT has passed since the claim, after an
    attempt that got no answer (the endpoint hangs or refuses: the rest would only wait behind
    it), or once the endpoint's failures in a row reach the breaker's threshold. The rest go back
    unattempted. The outcomes are written together at the end (so `delivered_at` and the next
    attempt's time count from then); a worker that dies before that leaves them to be sent again
    once their lease runs out (receivers deduplicate by delivery id).
    """
    endpoint = deliveries[0].endpoint
    failures = endpoint.consecutive_failures
    sent = []
    for delivery in deliveries:
        if sent and (
            time.monotonic() - started > settings.WEBHOOK_TIMEOUT
            or sent[-1][1].status is None
            or failures >= settings.WEBHOOK_BREAKER_THRESHOLD
        ):
            break
        event = delivery.event
        started_at = timezone.now()
        outcome = transport.send(
            url=endpoint.url, body=event.body.encode(), event=event.kind, delivery_id=str(delivery.id),
            **endpoint.signing(started_at),
        )  # fmt: skip
        sent.append((delivery, outcome, started_at))
        failures = 0 if outcome.ok else failures + 1
    return _record_batch(endpoint.pk, sent, deliveries[len(sent) :], manual=manual, lease=deliveries[0].locked_until)


def _record_batch(
    endpoint_id: int, sent: list, rest: list[Delivery], *, manual: bool, lease: datetime
) -> list[Attempt]:
    now = timezone.now()
    held, handover = 0, []
    with transaction.atomic():
        # The endpoint's lock orders this after any claim that left deliveries waiting on this
        # batch, so the hand-over below sees them.
        endpoint = WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
        if endpoint is None:  # deleted meanwhile, with its deliveries
            return []
        health_before = [getattr(endpoint, name) for name in _HEALTH_FIELDS]
        was_held_back = endpoint.held_back
        endpoint.record_results([(outcome.ok, at) for _, outcome, at in sent], now)
        attempts = [
            _record(d, outcome, started_at=at, manual=manual, outage=endpoint.held_back, now=now)
            for d, outcome, at in sent
        ]
        # Deliveries with the same outcome get the same new values: one UPDATE for each group (a
        # batch that went well is one group), where bulk_update's CASE per row and field cost more
        # CPU than the attempts themselves.
        groups: dict[tuple, list] = {}
        for delivery, _, _ in sent:
            groups.setdefault(tuple(getattr(delivery, name) for name in _OUTCOME_FIELDS), []).append(delivery.pk)
        Attempt.objects.bulk_create(attempts)
        for values, pks in groups.items():
            # The lease is the lock: only its holder writes the outcome (no second locking read). A
            # holder that overran its lease finds the row taken over and leaves it to the new
            # holder, keeping the record of the attempt it made.
            held += Delivery.objects.filter(pk__in=pks, locked_until=lease).update(
                **dict(zip(_OUTCOME_FIELDS, values, strict=True))
            )
        if rest:
            Delivery.objects.filter(pk__in=[d.pk for d in rest], locked_until=lease).update(
                locked_until=None, enqueued_at=None
            )
        _judge(endpoint, [outcome for _, outcome, _ in sent], health_before, now)
        if was_held_back and not endpoint.held_back:
            _release_backlog(endpoint, now)
        if not endpoint.holds_deliveries(now):
            handover = _take_waiting(endpoint, now)
    if held < len(sent):
        logger.warning("%d webhook attempts outlived their lease; their outcomes are not recorded", len(sent) - held)
    for (delivery, _, _), attempt in zip(sent, attempts, strict=True):
        logger.info(
            "webhook attempt delivery=%s endpoint=%s event=%s number=%d status=%s duration_ms=%d%s",
            delivery.id,
            delivery.endpoint_id,
            delivery.event.kind,
            attempt.number,
            attempt.response_status if attempt.response_status is not None else "-",
            attempt.duration_ms,
            f" error={attempt.error!r}" if attempt.error else "",
        )
    if handover:
        enqueue(handover)
    return attempts


def _judge(endpoint: WebhookEndpoint, outcomes: list[transport.Outcome], before: list, now: datetime) -> None:
    """Save the endpoint's health once a batch's outcomes are counted into it (the lock on it held,
    after its deliveries are written); disable it after 410 Gone, or once every attempt has failed
    for WEBHOOK_DISABLE_AFTER."""
    if any(outcome.status == 410 for outcome in outcomes):
        endpoint.enabled = False
        endpoint.disabled_reason = f"Disabled after 410 Gone at {now:%Y-%m-%d %H:%M} UTC"
    elif endpoint.enabled and endpoint.consecutive_failures and endpoint.failing_too_long(now):
        _disable_failing(endpoint, now)
    if [getattr(endpoint, name) for name in _HEALTH_FIELDS] != before:
        endpoint.save(update_fields=[*_HEALTH_FIELDS, "updated_at"])


def _disable_failing(endpoint: WebhookEndpoint, now: datetime) -> None:
    """Disable an endpoint that has failed every attempt for too long, and tell its account's admins.

    Its pending deliveries are marked failed, not kept pending: enabling it again sends nothing by
    itself, and "Re-send failed deliveries" sends them on request."""
    endpoint.enabled = False
    endpoint.disabled_reason = (
        f"Disabled at {now:%Y-%m-%d %H:%M} UTC: every attempt failed since "
        f"{endpoint.failing_since:%Y-%m-%d %H:%M} UTC ({endpoint.consecutive_failures} attempts)."
    )
    endpoint.deliveries.filter(status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED, next_attempt_at=None, locked_until=None, enqueued_at=None,
        last_error=f"Not sent: the endpoint was disabled. {endpoint.disabled_reason}", updated_at=now,
    )  # fmt: skip
    logger.warning("webhook endpoint=%s disabled: %s", endpoint.pk, endpoint.disabled_reason)
    transaction.on_commit(partial(_tell_admins_disabled, endpoint.pk))


def _tell_admins_disabled(endpoint_id: int) -> None:
    endpoint = WebhookEndpoint.objects.select_related("account").get(pk=endpoint_id)
    tell_account_admins(
        account=endpoint.account, template="webhooks/endpoint_disabled_email", context={"endpoint": endpoint},
        page=("admin:webhooks_webhookendpoint_change", endpoint.pk),
    )  # fmt: skip


def _release_backlog(endpoint: WebhookEndpoint, now: datetime) -> None:
    """The breaker has closed: what waited for it is due now, whatever retry time it had, so that
    it all goes out oldest first."""
    Delivery.objects.filter(
        unleased(now), endpoint=endpoint, status=DeliveryStatus.PENDING, next_attempt_at__gt=now
    ).update(next_attempt_at=now)


def _oldest_waiting(endpoint_id: int, now: datetime):
    """The pk of the endpoint's oldest pending delivery no worker holds, due or not (a probe's choice)."""
    pending = Delivery.objects.filter(unleased(now), endpoint_id=endpoint_id, status=DeliveryStatus.PENDING)
    return pending.order_by("created_at", "event_id").values_list("pk", flat=True).first()


def _due_oldest_first(endpoint_id: int, now: datetime):
    return Delivery.objects.filter(
        endpoint_id=endpoint_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
    ).order_by("created_at", "event_id")


def _mark_handed_over(ids: list, now: datetime) -> list[str]:
    """Note that the broker gets a task for these deliveries (the caller enqueues them, after its commit)."""
    if ids:
        Delivery.objects.filter(pk__in=ids).update(enqueued_at=now)
    return [str(pk) for pk in ids]


def _take_waiting(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The endpoint's due deliveries that wait with no task at the broker, oldest first, marked as
    handed over."""
    waiting = _due_oldest_first(endpoint.pk, now).filter(enqueued_at__isnull=True, locked_until__isnull=True)
    return _mark_handed_over(list(waiting.values_list("pk", flat=True)[:SWEEP_BATCH]), now)


def delivery_attempt(*, delivery_id: str, manual: bool = False, **sending) -> Attempt | None:
    """Make one attempt of a delivery (None when it is not due, another worker holds it, or it
    did not end within the `patience` given with a `pool`)."""
    attempts = deliveries_attempt(delivery_ids=[str(delivery_id)], manual=manual, **sending)
    return attempts[0] if attempts else None


def deliveries_sweep(*, limit: int = SWEEP_BATCH) -> int:
    """Hand the broker every due delivery it does not hold: never handed over (broker down at
    commit), retries whose time has come, ones whose holder died (lease run out), and ones handed
    over too long ago (lost messages); and one probe for each endpoint held back whose back-off
    has passed. Deliveries of endpoints held back or disabled wait; those held back longer than
    WEBHOOK_MAX_AGE are failed."""
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
            handed_over = _mark_handed_over(ids, now)
        enqueue(handed_over)
        total += len(ids)
        if len(ids) < limit:
            break
    total += _send_probes(now)
    if total:
        logger.info("webhook sweep enqueued=%d", total)
    return total


def _expire_held(now: datetime) -> int:
    """Fail the deliveries that have waited for their endpoint's breaker longer than WEBHOOK_MAX_AGE
    (an endpoint paused by hand keeps its deliveries: they go out when it is enabled)."""
    held_back = WebhookEndpoint.objects.filter(held_back_endpoints(), enabled=True)
    expired = Delivery.objects.filter(
        unleased(now), endpoint__in=held_back, status=DeliveryStatus.PENDING,
        created_at__lt=now - settings.WEBHOOK_MAX_AGE,
    ).update(
        status=DeliveryStatus.FAILED, next_attempt_at=None, enqueued_at=None, updated_at=now,
        last_error=f"Not sent: the endpoint failed every attempt for longer than {settings.WEBHOOK_MAX_AGE} "
        "(WEBHOOK_MAX_AGE) after it was made.",
    )  # fmt: skip
    if expired:
        logger.warning("webhook deliveries expired=%d (held back longer than WEBHOOK_MAX_AGE)", expired)
    return expired


def _send_probes(now: datetime) -> int:
    """Hand over the oldest waiting delivery of each endpoint held back whose probe is due (due now
    whatever retry time it had: a failed probe costs it none of its attempts)."""
    probe_due = WebhookEndpoint.objects.filter(
        held_back_endpoints(), Q(next_probe_at__isnull=True) | Q(next_probe_at__lte=now), enabled=True
    )
    ids = []
    for endpoint_id in probe_due.values_list("pk", flat=True):
        oldest = _oldest_waiting(endpoint_id, now)
        if oldest is not None:
            ids.append(oldest)
    Delivery.objects.filter(pk__in=ids, next_attempt_at__gt=now).update(next_attempt_at=now)
    handed_over = _mark_handed_over(ids, now)
    if handed_over:
        enqueue(handed_over)
    return len(handed_over)


@transaction.atomic
def delivery_retry_now(*, delivery: Delivery) -> Delivery:
    """Send again now, keeping the delivery id; works on failed deliveries and records a manual attempt."""
    delivery = Delivery.objects.select_for_update().get(pk=delivery.pk)
    delivery.enqueued_at = timezone.now()
    delivery.save(update_fields=["enqueued_at", "updated_at"])
    transaction.on_commit(lambda: enqueue([str(delivery.pk)], manual=True))
    return delivery


def endpoint_resend_failed(*, endpoint: WebhookEndpoint, since: datetime) -> int:
    failed = list(endpoint.deliveries.filter(status=DeliveryStatus.FAILED, created_at__gte=since))
    for delivery in failed:
        delivery_retry_now(delivery=delivery)
    return len(failed)


def _validate(url: str, events: list[str]) -> None:
    problem = transport.check_url(url)
    if problem:
        raise field_error("url", "webhook_target", problem)
    unknown = sorted(set(events) - set(SUBSCRIBABLE_EVENTS))
    if unknown:
        raise field_error("events", "choice", f"Unknown events: {', '.join(unknown)}")


@transaction.atomic
def endpoint_save(
    *,
    endpoint: WebhookEndpoint | None = None,
    account: Account,
    url: str,
    events: list[str] | None = None,
    enabled: bool = True,
    description: str = "",
    signature_format: str | None = None,
) -> WebhookEndpoint:
    """Create or change an endpoint; `signature_format` None keeps its format (a new one's: the
    specification's headers)."""
    events = list(events or [])
    _validate(url, events)
    if signature_format is not None and signature_format not in SignatureFormat.values:
        raise field_error(
            "signature_format", "choice", f"Unknown signature format {signature_format!r}: use service or standard."
        )
    endpoint = endpoint or WebhookEndpoint()
    endpoint.account, endpoint.url, endpoint.events = account, url, [e for e in SUBSCRIBABLE_EVENTS if e in events]
    endpoint.description = description
    if signature_format is not None:
        _set_signature_format(endpoint, signature_format)
    if enabled and not endpoint.enabled:
        endpoint.clear_health()  # a fresh start: what failed before is re-sent only on request
    endpoint.enabled = enabled
    endpoint.save()
    return endpoint


def _set_signature_format(endpoint: WebhookEndpoint, signature_format: str) -> None:
    """A switch of format keeps the secret (and a rotation's overlap): both formats verify with
    the secret shown, so a receiver can be made to accept the new format before the switch. Only a
    secret that Standard Webhooks cannot read (none this service made) is replaced, at once."""
    if not endpoint.pk and signature_format == SignatureFormat.STANDARD:
        endpoint.secret = new_standard_secret()
    elif signature_format == SignatureFormat.STANDARD and standard_key(endpoint.secret) is None:
        endpoint.secret, endpoint.previous_secret, endpoint.previous_secret_expires_at = new_standard_secret(), "", None
    endpoint.signature_format = signature_format


@transaction.atomic
def endpoint_rotate_secret(*, endpoint: WebhookEndpoint) -> str:
    """Give the endpoint a new secret; the one it replaces keeps signing deliveries beside it for
    WEBHOOK_SECRET_OVERLAP (see docs/webhooks.md, Rotating the secret), so receivers can switch
    without a rejected delivery. Refused while an earlier overlap lasts: one of the two secrets
    receivers may hold would stop working unannounced."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    now = timezone.now()
    if endpoint.previous_secret_valid(now):
        raise Conflict(
            f"The secret was rotated recently: the previous one stays valid until "
            f"{endpoint.previous_secret_expires_at:%Y-%m-%d %H:%M} UTC. Expire it first (Expire previous secret), "
            "then rotate again."
        )
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_expires_at = now + settings.WEBHOOK_SECRET_OVERLAP
    endpoint.secret = new_standard_secret() if endpoint.signature_format == SignatureFormat.STANDARD else new_secret()
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at", "updated_at"])
    logger.info(
        "webhook endpoint=%s secret rotated; the previous one is valid until %s",
        endpoint.pk, endpoint.previous_secret_expires_at.isoformat(),
    )  # fmt: skip
    return endpoint.secret


@transaction.atomic
def endpoint_expire_previous_secret(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """End a rotation's overlap now: from the next attempt on, only the current secret signs."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if not endpoint.previous_secret_valid(timezone.now()):
        raise Conflict("There is no previous secret to expire: only the current secret signs deliveries.")
    endpoint.previous_secret, endpoint.previous_secret_expires_at = "", None
    endpoint.save(update_fields=["previous_secret", "previous_secret_expires_at", "updated_at"])
    logger.info("webhook endpoint=%s previous secret expired early", endpoint.pk)
    return endpoint


@transaction.atomic
def endpoint_send_test(*, endpoint: WebhookEndpoint) -> Event:
    data = {
        "message": "This is a test event from the content publishing service.",
        "endpoint": {"id": endpoint.id, "url": endpoint.url},
    }
    item = EventInput(account=endpoint.account, data=data)
    return events_emit(kind=EventKind.WEBHOOK_TEST, items=[item], endpoint=endpoint)[0]


def history_prune(*, older_than_days: int | None = None) -> int:
    """Delete events (with deliveries and attempts) older than the history window once none of
    their deliveries is still pending."""
    days = older_than_days if older_than_days is not None else settings.WEBHOOK_HISTORY_DAYS
    cutoff = timezone.now() - timedelta(days=days)
    old = Event.objects.filter(created_at__lt=cutoff).exclude(deliveries__status=DeliveryStatus.PENDING)
    _, per_model = Event.objects.filter(pk__in=old.values("pk")).delete()
    return per_model.get(Event._meta.label, 0)
