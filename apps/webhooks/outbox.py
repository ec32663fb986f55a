"""The webhooks outbox: events and their deliveries written in the transaction of the change they
report, and handed to the broker only after commit.

Services that change state call `event_emit` (or `events_emit`, services.py) inside their own
transaction; they write here (`events_write`) and hand the deliveries over after commit. A
rolled-back change sends nothing; a committed one is never lost, because the due time lives in the
database and the sweeper (upkeep.py) hands over whatever the broker never got. The hand-over to
the broker itself is services.enqueue: only the services reach the tasks (no import cycle).
"""

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.core.lookups import AnyOf
from apps.webhooks.models import Delivery, Event, EventInput, WebhookEndpoint
from apps.webhooks.serializers import delivery_body

logger = logging.getLogger(__name__)

# The most deliveries one hand-over takes (a sweep's round, what waited for a batch to end).
SWEEP_BATCH = 1000


# From this many rows on (a full batch of attempts), PostgreSQL gets them with COPY, which costs
# half the CPU per row of one INSERT ... VALUES with a parameter per value, the way fewer go. Both
# instead of bulk_create's INSERT ... UNNEST, whose arrays psycopg quotes
# value by value in Python (a regular expression substitution per quote character of kilobytes of
# JSON bodies): that quoting cost more CPU than sending the webhooks.
COPY_MIN_ROWS = 20
# Fields whose Python values PostgreSQL takes as they are in COPY (others are prepared by Django).
_COPIED_AS_IS = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "UUIDField",
        "ForeignKey",
        "CharField",
        "TextField",
        "BooleanField",
        "DateTimeField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
    }
)


def insert_rows(model: type, objs: list) -> list:
    """Insert new rows (as bulk_create does: defaults and auto_now filled in, primary keys set)."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql" or len(objs) < 2:
        return model.objects.bulk_create(objs)
    if len(objs) < COPY_MIN_ROWS:
        return _insert_values(connection, model, objs)
    return _copy_objects(connection, model, objs)


def _insert_values(connection, model: type, objs: list) -> list:
    meta = model._meta
    numbered = getattr(meta.pk, "db_returning", False)  # the database numbers the rows
    fields = [field for field in meta.concrete_fields if not (numbered and field is meta.pk)]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    row = f"({', '.join(['%s'] * len(fields))})"
    returning = f" RETURNING {connection.ops.quote_name(meta.pk.column)}" if numbered else ""
    params = [field.get_db_prep_save(field.pre_save(obj, True), connection) for obj in objs for field in fields]
    table = connection.ops.quote_name(meta.db_table)
    sql = f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * len(objs))}{returning}"  # noqa: S608 - the model's own table; values are parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if numbered:  # in the order of the VALUES, as bulk_create's RETURNING too relies on
            for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
                obj.pk = pk
    return _saved(connection, objs)


def _copy_objects(connection, model: type, objs: list) -> list:
    meta = model._meta
    fields = meta.concrete_fields
    if getattr(meta.pk, "db_returning", False):  # the database numbers the rows: take the numbers first
        for obj, pk in zip(objs, _next_ids(connection, model, len(objs)), strict=True):
            obj.pk = pk
    # Django's preparation where a field sets its own value (auto_now) or psycopg cannot take
    # the Python value as it is (JSON); the rest as they are.
    prepared = [
        (
            field.attname,
            field if field.get_internal_type() not in _COPIED_AS_IS or getattr(field, "auto_now", False) else None,
        )
        for field in fields
    ]
    rows = (
        [
            field.get_db_prep_save(field.pre_save(obj, True), connection) if field else getattr(obj, name)
            for name, field in prepared
        ]
        for obj in objs
    )
    _copy_into(connection, model, [field.column for field in fields], rows)
    return _saved(connection, objs)


def _next_ids(connection, model: type, n: int) -> list[int]:
    """n numbers of the model's sequence, taken before its rows are written (COPY returns nothing)."""
    with connection.cursor() as cursor:
        # The sequence's name is looked up once (OFFSET 0 keeps the subquery apart), not for each
        # of the n numbers: 7 ms against 1 for a thousand.
        cursor.execute(
            "SELECT nextval(s.seq) FROM (SELECT pg_get_serial_sequence(%s, %s)::regclass AS seq OFFSET 0) s, "
            "generate_series(1, %s)",
            [model._meta.db_table, model._meta.pk.column, n],
        )
        return [pk for (pk,) in cursor.fetchall()]


def _copy_into(connection, model: type, columns: list[str], rows: Iterable) -> None:
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _saved(connection, objs: list) -> list:
    for obj in objs:
        obj._state.adding, obj._state.db = False, connection.alias
    return objs


def events_write(
    *, kind: str, items: Iterable[EventInput], endpoint: WebhookEndpoint | None = None
) -> tuple[list[Event], list[str]]:
    """Write events and one delivery per subscribed, enabled endpoint; return the events and the
    ids of the deliveries to hand to the broker after commit.

    Must run inside the caller's transaction. `endpoint` sends to that endpoint only (test events).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events_emit must run inside the transaction of the change it reports")
    now = timezone.now()
    events = insert_rows(
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
            event_id=event.pk,
            endpoint_id=target.pk,
            next_attempt_at=now,
            created_at=now,
            enqueued_at=None if target.holds_deliveries(now) else now,
        )
        for event in events
        for target in targets_of(event.account_id)
    ]
    insert_rows(Delivery, deliveries)
    return events, [str(d.id) for d in deliveries if d.enqueued_at is not None]


@dataclass
class PreparedEvents:
    """Events of one kind rendered and not written yet (events_prepare_many): their bodies need no
    database, so a caller can render them while PostgreSQL runs its other writes."""

    kind: str
    items: Sequence[EventInput]
    # When they happen: their timestamp, and their rows' times.
    at: datetime
    # (account id, body, post id) of each event, for COPY; None where events_write writes them.
    rows: list[tuple] | None


def events_prepare_many(*, kind: str, items: Sequence[EventInput]) -> PreparedEvents:
    """Events rendered for events_write_prepared (no query)."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql" or len(items) < COPY_MIN_ROWS:
        return PreparedEvents(kind, items, timezone.now(), None)
    now = timezone.now()
    rows = [(item.account.pk, delivery_body(kind, item.account, item.data, now), item.post_id) for item in items]
    return PreparedEvents(kind, items, now, rows)


def events_write_prepared(prepared: PreparedEvents) -> list[str]:
    """events_write for many events at once (the content plan's batches), rendered beforehand by
    events_prepare_many, without a model instance for each event and delivery: on PostgreSQL their
    rows go to COPY as tuples. Returns the ids of the deliveries to hand to the broker after commit.
    Building and reading back an Event and a Delivery instance per post took a fifth of a content
    plan run's CPU."""
    kind, now = prepared.kind, prepared.at
    if prepared.rows is None:
        return events_write(kind=kind, items=prepared.items)[1]
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        raise RuntimeError("events_emit must run inside the transaction of the change it reports")
    event_ids = _next_ids(connection, Event, len(prepared.rows))
    events = [
        (pk, account_id, kind, body, post_id, now)
        for pk, (account_id, body, post_id) in zip(event_ids, prepared.rows, strict=True)
    ]
    _copy_rows(Event, ("id", "account", "kind", "body", "post_id", "created_at"), events, now)
    targets_of = _targets(kind, None)
    # Each endpoint's breaker is read once for the batch: (endpoint, when its deliveries are handed over).
    held: dict[int, list[tuple[int, datetime | None]]] = {}
    deliveries, handed = [], []
    for event_id, account_id, *_ in events:
        if account_id not in held:
            held[account_id] = [(t.pk, None if t.holds_deliveries(now) else now) for t in targets_of(account_id)]
        for endpoint_id, enqueued_at in held[account_id]:
            delivery_id = uuid.uuid4()
            deliveries.append((delivery_id, event_id, endpoint_id, now, enqueued_at, now))
            if enqueued_at is not None:
                handed.append(str(delivery_id))
    _copy_rows(Delivery, ("id", "event", "endpoint", "next_attempt_at", "enqueued_at", "created_at"), deliveries, now)
    return handed


def _copy_rows(model: type, given: tuple[str, ...], rows: list[tuple], now: datetime) -> None:
    """COPY `rows` (values of the fields named `given`, in that order) into the model's table, every
    other field at its default, the same for every row (`now` for a time's default): a field whose
    default differs row by row must be given."""
    if not rows:
        return
    connection = transaction.get_connection()
    fields = [field for field in model._meta.concrete_fields if field.name not in given]
    constants = []
    for field in fields:
        if getattr(field, "auto_now", False) or field.default is timezone.now:
            constants.append(now)
        elif field.has_default() and callable(field.default):
            raise TypeError(f"{model.__name__}.{field.name}: a default that differs row by row must be given")
        else:
            constants.append(field.get_default())
    columns = [model._meta.get_field(name).column for name in given] + [field.column for field in fields]
    constants = tuple(constants)
    _copy_into(connection, model, columns, (row + constants for row in rows))


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


def mark_handed_over(ids: list, now: datetime) -> list[str]:
    """Note that the broker gets a task for these deliveries (the caller enqueues them, after its commit)."""
    if ids:
        Delivery.objects.filter(AnyOf("id", ids)).update(enqueued_at=now)
    return [str(pk) for pk in ids]
