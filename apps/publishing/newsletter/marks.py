"""The outcomes of a batch's messages (sent, failed, retried later, uncertain), written to their
delivery records a group at a time: one transaction per WINDOW messages instead of one committed
statement per message, with the edition's counters in the same transaction.

The bound a crash leaves: the sender hands a message over only while fewer than the batch's window
of earlier outcomes wait to be committed (`Marks.make_room`), and commits them in id order. So at
any moment the records of a batch whose message may have gone out unmarked are among its lowest
`window` ids still `claimed`; recovery (editions.recover) makes those `uncertain` and puts the rest
back to `pending`. The window is written in the batch's tag, so the recovery of a batch uses the
window it was sent with, whatever the code that recovers it says.
"""

import uuid
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from apps.publishing.newsletter.models import Delivery, DeliveryState, Edition

# Messages handed over whose outcome is not committed yet, at most: what a crash may leave uncertain
# per batch in flight. Each commit costs a round trip and a WAL flush (about 1-5 ms here); spread
# over this many messages, it is a small part of each message's millisecond.
WINDOW = 20
# Tags of batches claimed before the window was written in them: each of their messages was marked
# before the next was handed over.
LEGACY_WINDOW = 1
# Marks._write_all's statement: the outcomes as one array a column, the edition's counters of
# settled records (`pending` counts in none) from the records written. The models' own tables and
# columns; every value is a parameter.
_WRITE_ALL = (
    "WITH v AS (SELECT * FROM unnest(%(ids)s::bigint[], %(states)s::text[], %(message_ids)s::text[], "  # noqa: S608
    "%(attempts)s::smallint[], %(errors)s::text[], %(next_attempts)s::timestamptz[], %(settled)s::timestamptz[]) "
    "AS v (id, state, message_id, attempts, error, next_attempt_at, settled_at)), "
    f"d AS (UPDATE {Delivery._meta.db_table} AS r SET state = v.state, batch = '', attempts = v.attempts, "
    "message_id = COALESCE(v.message_id, r.message_id), error = COALESCE(v.error, r.error), "
    "next_attempt_at = COALESCE(v.next_attempt_at, r.next_attempt_at), "
    "settled_at = COALESCE(v.settled_at, r.settled_at) "
    "FROM v WHERE r.id = v.id AND r.batch = %(batch)s AND r.state = %(claimed)s RETURNING r.state), "
    f"e AS (UPDATE {Edition._meta.db_table} SET "
    "sent = sent + (SELECT count(*) FROM d WHERE d.state = %(sent)s), "
    "failed = failed + (SELECT count(*) FROM d WHERE d.state = %(failed)s), "
    "uncertain = uncertain + (SELECT count(*) FROM d WHERE d.state = %(uncertain)s) "
    "WHERE id = %(edition)s) "
    "SELECT count(*) FROM d"
)


def batch_tag(window: int = WINDOW) -> str:
    """A new batch's tag (Delivery.batch, 32 characters): random, ending in its window."""
    return f"{uuid.uuid4().hex[:27]}w{window:04d}"


def window_of(batch: str) -> int:
    """How many of the batch's lowest `claimed` records may have gone out unmarked."""
    _, separator, digits = batch.rpartition("w")  # a uuid's hex digits hold no "w"
    return int(digits) if separator and digits.isdigit() and int(digits) > 0 else LEGACY_WINDOW


class Lost(Exception):
    """The batch no longer holds a record it sent (its job's lease was taken over): stop sending."""


@dataclass
class Marks:
    """A batch's outcomes waiting to be committed, in the order of their records."""

    edition_id: int
    batch: str
    window: int = field(default=WINDOW)
    waiting: list[tuple[int, str, dict]] = field(default_factory=list)  # (record id, state, columns)

    def add(self, record_id: int, state: str, **columns) -> None:
        self.waiting.append((record_id, state, columns))

    def make_room(self) -> None:
        """Called before a message is handed over: commit the outcomes waiting once the window is
        full, so that at most `window` messages are ever out unmarked."""
        if len(self.waiting) >= self.window:
            self.commit()

    def commit(self) -> None:
        """Write every outcome waiting, in one transaction; Lost if the batch no longer holds one."""
        if not self.waiting:
            return
        waiting, self.waiting = self.waiting, []
        now = timezone.now()
        write = self._write_all if connection.vendor == "postgresql" else self._write_each
        written = write(waiting, now)
        if written != len(waiting):
            raise Lost(f"batch {self.batch} no longer holds {len(waiting) - written} of its records")

    def _write_all(self, waiting: list[tuple[int, str, dict]], now) -> int:
        """PostgreSQL: the records and the edition's counters in one statement, committed on its own
        (one round trip and one WAL flush a window; a transaction around two statements took four
        round trips: BEGIN, the two, COMMIT). The outcomes go as one array a column (a short query
        text, which psycopg parses once, where a VALUES list of a window's rows is parsed every
        time); a column a state does not set is NULL there and keeps its value."""
        ids, states, message_ids, attempts, errors, next_attempts, settled = zip(
            *(
                (
                    record_id,
                    state,
                    columns.get("message_id"),
                    columns["attempts"],
                    columns.get("error"),
                    columns.get("next_attempt_at"),
                    None if state == DeliveryState.PENDING else now,
                )
                for record_id, state, columns in waiting
            ),
            strict=True,
        )
        with connection.cursor() as cursor:
            cursor.execute(
                _WRITE_ALL,
                {
                    "ids": list(ids),
                    "states": list(states),
                    "message_ids": list(message_ids),
                    "attempts": list(attempts),
                    "errors": list(errors),
                    "next_attempts": list(next_attempts),
                    "settled": list(settled),
                    "batch": self.batch,
                    "claimed": DeliveryState.CLAIMED,
                    "sent": DeliveryState.SENT,
                    "failed": DeliveryState.FAILED,
                    "uncertain": DeliveryState.UNCERTAIN,
                    "edition": self.edition_id,
                },
            )
            return cursor.fetchone()[0]

    def _write_each(self, waiting: list[tuple[int, str, dict]], now) -> int:
        """Other databases (SQLite, the embedded default): one UPDATE a record and one of the
        edition's counters, in one transaction."""
        counts: dict[str, int] = {}
        written = 0
        with transaction.atomic():
            for record_id, state, columns in waiting:
                settled = {} if state == DeliveryState.PENDING else {"settled_at": now}
                count = self._write_one(record_id, state, {**settled, **columns})
                if state != DeliveryState.PENDING:
                    counts[state] = counts.get(state, 0) + count
                written += count
            changes = {name: F(name) + value for name, value in counts.items() if value}
            if changes:
                Edition.objects.filter(pk=self.edition_id).update(**changes)
        return written

    def _write_one(self, record_id: int, state: str, columns: dict) -> int:
        return Delivery.objects.filter(pk=record_id, batch=self.batch, state=DeliveryState.CLAIMED).update(
            state=state, batch="", **columns
        )
