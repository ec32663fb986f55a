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
        counts: dict[str, int] = {}
        with transaction.atomic():
            sent = [(record_id, columns) for record_id, state, columns in waiting if state == DeliveryState.SENT]
            if sent:
                counts["sent"] = self._write_sent(sent, now)
            for record_id, state, columns in waiting:
                if state == DeliveryState.SENT:
                    continue
                settled = {} if state == DeliveryState.PENDING else {"settled_at": now}
                written = self._write_one(record_id, state, {**settled, **columns})
                if state != DeliveryState.PENDING:
                    counts[state] = counts.get(state, 0) + written
                counts["all"] = counts.get("all", 0) + written
            counts["all"] = counts.get("all", 0) + counts.get("sent", 0)
            changes = {name: F(name) + value for name, value in counts.items() if name != "all" and value}
            if changes:
                Edition.objects.filter(pk=self.edition_id).update(**changes)
        if counts["all"] != len(waiting):
            raise Lost(f"batch {self.batch} no longer holds {len(waiting) - counts['all']} of its records")

    def _write_one(self, record_id: int, state: str, columns: dict) -> int:
        return Delivery.objects.filter(pk=record_id, batch=self.batch, state=DeliveryState.CLAIMED).update(
            state=state, batch="", **columns
        )

    def _write_sent(self, sent: list[tuple[int, dict]], now) -> int:
        """The sent records, in one statement: the marks of a whole window in one round trip, where
        the ORM would take one UPDATE per record (each has its own Message-ID)."""
        if connection.vendor != "postgresql":
            # SQLite (the embedded default) joins no VALUES list with named columns: one UPDATE a
            # record there, still all in the window's one transaction.
            return sum(
                self._write_one(record_id, DeliveryState.SENT, {"settled_at": now, **columns})
                for record_id, columns in sent
            )
        rows = ", ".join(["(%s::bigint, %s, %s::smallint)"] * len(sent))
        values = [
            value for record_id, columns in sent for value in (record_id, columns["message_id"], columns["attempts"])
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Delivery._meta.db_table} AS d SET state = %s, batch = '', message_id = v.message_id, "  # noqa: S608 (the model's own table; values are parameters)
                f"attempts = v.attempts, settled_at = %s FROM (VALUES {rows}) AS v (id, message_id, attempts) "
                "WHERE d.id = v.id AND d.batch = %s AND d.state = %s",
                [DeliveryState.SENT, now, *values, self.batch, DeliveryState.CLAIMED],
            )
            return cursor.rowcount
