"""The webhooks outbox: events and their deliveries written in the transaction of the change they
report, and handed to the broker only after commit.

Services that change state call `event_emit` (or `events_emit`) inside their own transaction. A
rolled-back change sends nothing; a committed one is never lost, because the due time lives in the
database and the sweeper (upkeep.py) hands over whatever the broker never got.
"""

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Account
from apps.webhooks.models import Delivery, Event, WebhookEndpoint
from apps.webhooks.serializers import delivery_body

logger = logging.getLogger(__name__)

# The most deliveries one hand-over takes (a sweep's round, what waited for a batch to end).
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
    targets_of = _targets(kind, endpoint)
    # An endpoint held back by its breaker gets no task for them: they wait for its probe.
    deliveries = [
        Delivery(
            event_id=event.pk, endpoint_id=target.pk, next_attempt_at=now, created_at=now,
            enqueued_at=None if target.holds_deliveries(now) else now,
        )
        for event in events
        for target in targets_of(event.account_id)
    ]  # fmt: skip
    _insert(Delivery, deliveries)
    ids = [str(d.id) for d in deliveries if d.enqueued_at is not None]
    if ids:
        transaction.on_commit(lambda: enqueue(ids))
    return events


def _targets(kind: str, endpoint: WebhookEndpoint | None) -> Callable[[int], list[WebhookEndpoint]]:
    """The endpoints an account's event of `kind` goes to: `endpoint` alone when given, else the
    account's enabled endpoints that subscribe to it (read once per account)."""
    if endpoint is not None:
        return lambda account_id: [endpoint]
    by_account: dict[int, list[WebhookEndpoint]] = {}

    def targets(account_id: int) -> list[WebhookEndpoint]:
        if account_id not in by_account:
            enabled = WebhookEndpoint.objects.filter(account_id=account_id, enabled=True)
            by_account[account_id] = [e for e in enabled if e.subscribes_to(kind)]
        return by_account[account_id]

    return targets


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


def mark_handed_over(ids: list, now: datetime) -> list[str]:
    """Note that the broker gets a task for these deliveries (the caller enqueues them, after its commit)."""
    if ids:
        Delivery.objects.filter(pk__in=ids).update(enqueued_at=now)
    return [str(pk) for pk in ids]
