"""The outcomes of a batch's messages (sent, failed, retried later, uncertain), written to their
delivery records a group at a time, with the edition's counters in the same transaction, instead
of one committed statement per message. In a worker the groups are committed by a Writer thread
with a connection of its own while the sender hands the next messages over; a sender called inside
a transaction (a test's) commits them itself, a window at a time.

The bound a crash leaves: the sender hands a message over only while fewer than the batch's window
of earlier outcomes wait to be committed (`Marks.make_room`), and commits them in id order. So at
any moment the records of a batch whose message may have gone out unmarked are among its lowest
`window` ids still `claimed`; recovery (editions.recover) makes those `uncertain` and puts the rest
back to `pending`. The window is written in the batch's tag, so the recovery of a batch uses the
window it was sent with, whatever the code that recovers it says.
"""

import threading
import uuid
from collections import deque
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


Outcome = tuple[int, str, dict]  # (record id, its new state, the other columns it sets)


@dataclass
class Marks:
    """A batch's outcomes waiting to be committed, in the order of their records: committed by the
    sender itself (`writer` None) or by a Writer thread while the next messages go out."""

    edition_id: int
    batch: str
    window: int = field(default=WINDOW)
    writer: "Writer | None" = None
    waiting: list[Outcome] = field(default_factory=list)

    def add(self, record_id: int, state: str, **columns) -> None:
        self.waiting.append((record_id, state, columns))

    def make_room(self) -> None:
        """Called before a message is handed over: returns once fewer than `window` messages are
        out unmarked (committing, or handing to the writer, what waits)."""
        if self.writer is not None:
            self.writer.make_room(self)
        elif len(self.waiting) >= self.window:
            self.commit()

    def commit(self) -> None:
        """Every outcome waiting committed; Lost if the batch no longer holds one of them."""
        if self.writer is not None:
            self.writer.drain(self)
        elif self.waiting:
            waiting, self.waiting = self.waiting, []
            commit(self.edition_id, self.batch, waiting)


def commit(edition_id: int, batch: str, waiting: list[Outcome]) -> None:
    """Write outcomes of the batch, and the edition's counters, in one transaction; Lost if the
    batch no longer holds one of their records (the others are written)."""
    now = timezone.now()
    counts: dict[str, int] = {}
    written = 0
    with transaction.atomic():
        sent = [(record_id, columns) for record_id, state, columns in waiting if state == DeliveryState.SENT]
        if sent:
            counts["sent"] = _write_sent(batch, sent, now)
            written += counts["sent"]
        for record_id, state, columns in waiting:
            if state == DeliveryState.SENT:
                continue
            settled = {} if state == DeliveryState.PENDING else {"settled_at": now}
            changed = Delivery.objects.filter(pk=record_id, batch=batch, state=DeliveryState.CLAIMED).update(
                state=state, batch="", **settled, **columns
            )
            written += changed
            if state != DeliveryState.PENDING:
                counts[state] = counts.get(state, 0) + changed
        changes = {name: F(name) + value for name, value in counts.items() if value}
        if changes:
            Edition.objects.filter(pk=edition_id).update(**changes)
    if written != len(waiting):
        raise Lost(f"batch {batch} no longer holds {len(waiting) - written} of its records")


class Writer:
    """A thread with its own database connection that commits the outcomes handed to it, a group at
    a time and in order, while the sender hands the next messages over: the network and the
    bookkeeping overlap. A group is whatever waited while the previous one committed, so the
    commits keep pace with the database, at most `window` messages out unmarked."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._groups: deque[tuple[int, str, list[Outcome]]] = deque()
        self._busy = False  # a group is queued or being committed
        self._out = 0  # outcomes handed over and not committed yet
        self._error: BaseException | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="newsletter-marks", daemon=True)
        self._thread.start()

    def make_room(self, marks: Marks) -> None:
        with self._changed:
            while True:
                if self._error is not None:
                    raise self._error
                if not self._busy and marks.waiting:
                    self._hand_over(marks)
                if self._out + len(marks.waiting) < marks.window:
                    return
                self._changed.wait()

    def drain(self, marks: Marks) -> None:
        """Returns once every outcome of `marks` is committed (raises what the thread met)."""
        with self._changed:
            while True:
                if self._error is not None:
                    raise self._error
                if not self._busy and marks.waiting:
                    self._hand_over(marks)
                if not self._out and not marks.waiting:
                    return
                self._changed.wait()

    def _hand_over(self, marks: Marks) -> None:
        waiting, marks.waiting = marks.waiting, []
        self._groups.append((marks.edition_id, marks.batch, waiting))
        self._out += len(waiting)
        self._busy = True
        self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()

    def _run(self) -> None:
        try:
            while group := self._next():
                commit(*group)
                with self._changed:
                    self._out -= len(group[2])
                    self._busy = bool(self._groups)
                    self._changed.notify_all()
        except BaseException as exc:  # the sender raises it, and leaves its batch to recovery
            with self._changed:
                self._error = exc
                self._changed.notify_all()
        finally:
            connection.close()  # this thread's own

    def _next(self) -> tuple[int, str, list[Outcome]] | None:
        with self._changed:
            while not self._groups and not self._closing:
                self._changed.wait()
            return self._groups.popleft() if self._groups else None


def _write_sent(batch: str, sent: list[tuple[int, dict]], now) -> int:
    """The sent records, in one statement: the marks of a whole window in one round trip, where
    the ORM would take one UPDATE per record (each has its own Message-ID)."""
    rows = ", ".join(["(%s::bigint, %s, %s::smallint)"] * len(sent))
    values = [value for record_id, columns in sent for value in (record_id, columns["message_id"], columns["attempts"])]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Delivery._meta.db_table} AS d SET state = %s, batch = '', message_id = v.message_id, "  # noqa: S608 (the model's own table; values are parameters)
            f"attempts = v.attempts, settled_at = %s FROM (VALUES {rows}) AS v (id, message_id, attempts) "
            "WHERE d.id = v.id AND d.batch = %s AND d.state = %s",
            [DeliveryState.SENT, now, *values, batch, DeliveryState.CLAIMED],
        )
        return cursor.rowcount
