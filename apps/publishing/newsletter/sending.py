"""The newsletter destination's sender: an edition mailed once to each confirmed subscriber, through
Django's mail API (SMTP, or any provider through django-anymail), surviving crashes without
mailing anyone twice.

When its job first runs, the edition is frozen: its parts rendered once, and one Delivery record
per confirmed, not suppressed subscriber (unique per pair). The sender then takes records in
batches (SELECT … FOR UPDATE SKIP LOCKED), marks them `claimed` by the batch, and sends them one
at a time in id order over one connection per batch. Their outcomes are committed a window at a
time (marks.py): a message is handed over only while fewer than the batch's window of outcomes
wait. So at any moment the records that may have gone out without being marked are among the
batch's lowest-id `claimed` ones, at most its window. After a crash, those become `uncertain`
(never sent again by themselves: the Settings area offers "Send to uncertain" as a decision) and
the rest of the batch goes back to `pending`. The batch is released only once its outcomes are
committed: a record put back is never one that went out.

The job's lease is the lock: one job of a channel runs at a time (apps/publishing/services.py),
so a job that starts finds every `claimed` record left by a dead predecessor. The sender stops
starting messages at the job's deadline, well within the lease; should a lease still be taken
over, a record it no longer holds is not marked, and the sender stops there (marks.Lost).

The edition's freezing, counters and recovery are in editions.py; what each mail error means, in
mail_errors.py.
"""

import logging
import time
from datetime import timedelta
from email.utils import parseaddr

from django.conf import settings
from django.core import mail
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend
from django.db import IntegrityError, transaction
from django.db import connection as db
from django.db.models import F, Q
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.destinations import Document, InProgress, JobContext, Outcome, PublishError
from apps.core.outbox import retry_delay
from apps.publishing.models import JobAction
from apps.publishing.newsletter import message
from apps.publishing.newsletter.editions import (
    edition_freeze,
    edition_recount,
    finish_if_done,
    next_due_in,
    recover,
)
from apps.publishing.newsletter.mail_errors import Verdict, verdict_of
from apps.publishing.newsletter.marks import Lost, Marks, batch_tag
from apps.publishing.newsletter.models import (
    Delivery,
    DeliveryState,
    Edition,
    Subscriber,
    SubscriberStatus,
    SuppressionReason,
    email_hash,
)
from apps.publishing.newsletter.services import newsletter_of, suppress, suppressions_of
from apps.publishing.newsletter.smtp_transaction import PLAIN_ADDRESS, sendmail

logger = logging.getLogger(__name__)

# After a message whose fate is unknown the connection is dropped and the job comes back this soon,
# when messages went out before it (a server that hangs for good is retried on the pipeline's
# schedule instead: each attempt may leave one more record uncertain).
AFTER_UNKNOWN = 1.0


# --- sending -------------------------------------------------------------------------------------


def _message_id(sent) -> str:
    """The provider's id where an anymail backend reports one (its tracking events carry it), else
    the Message-ID header."""
    provider_id = getattr(getattr(sent, "anymail_status", None), "message_id", None)
    return str(sent.extra_headers.get("Message-ID", "") if provider_id is None else provider_id)[:300]


def _dropped(connection) -> bool:
    """The SMTP server closed the connection after refusing (a 421): reconnect before the next one."""
    return isinstance(connection, SmtpBackend) and connection.connection is not None and not connection.connection.sock


def _close(connection, *, hard: bool = False) -> None:
    """Close a batch's connection; `hard`: drop an SMTP connection without a word to the server."""
    if hard and isinstance(connection, SmtpBackend) and connection.connection is not None:
        connection.connection.close()  # smtplib closes its socket, sending nothing
        connection.connection = None
        return
    try:
        connection.close()
    except Exception as exc:  # a server that does not answer QUIT: its messages are settled already
        logger.info("newsletter: closing the mail connection failed: %s", exc)


class Pace:
    """NEWSLETTER_SEND_RATE messages per second at most (0: no limit)."""

    def __init__(self, rate: int) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.next_at = time.monotonic()

    def wait(self, deadline: float) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        if self.next_at > now:
            time.sleep(max(min(self.next_at, deadline) - now, 0))
            now = time.monotonic()
        self.next_at = max(self.next_at, now) + self.interval


class Sender:
    """Sends one edition's due records until `deadline` (time.monotonic())."""

    def __init__(self, edition: Edition, *, deadline: float) -> None:
        self.edition = edition
        self.deadline = deadline
        self.channel = edition.channel
        self.newsletter = newsletter_of(self.channel)
        self.messages = message.Prepared(edition=edition, newsletter=self.newsletter)
        self.pace = Pace(settings.NEWSLETTER_SEND_RATE)
        self.sent = 0  # by this run

    def run(self) -> None:
        while time.monotonic() < self.deadline:
            claimed = self._claim()
            if claimed is None:
                return
            self._send_batch(*claimed)

    def _claim(self) -> tuple[str, list] | None:
        """A new batch of due records, claimed and committed, with their subscribers: (tag, records
        in id order as (id, attempts, email, name, token, status)); None when none is due."""
        now = timezone.now()
        batch = batch_tag()
        size = settings.NEWSLETTER_BATCH_SIZE
        if db.vendor == "postgresql":
            # One statement, committed on its own: one round trip where the ORM's took five (BEGIN,
            # the locking SELECT, the UPDATE, COMMIT, then the read of the subscribers).
            deliveries, subscribers = Delivery._meta.db_table, Subscriber._meta.db_table
            with db.cursor() as cursor:
                cursor.execute(
                    # The models' own tables; every value is a parameter.
                    f"WITH c AS (UPDATE {deliveries} SET state = %s, batch = %s WHERE id IN ("  # noqa: S608
                    f"SELECT id FROM {deliveries} WHERE edition_id = %s AND state = %s "
                    "AND (next_attempt_at IS NULL OR next_attempt_at <= %s) ORDER BY id LIMIT %s "
                    "FOR UPDATE SKIP LOCKED) RETURNING id, attempts, subscriber_id) "
                    f"SELECT c.id, c.attempts, s.email, s.name, s.token, s.status FROM c "
                    f"LEFT JOIN {subscribers} AS s ON s.id = c.subscriber_id ORDER BY c.id",
                    [DeliveryState.CLAIMED, batch, self.edition.pk, DeliveryState.PENDING, now, size],
                )
                records = cursor.fetchall()
            return (batch, records) if records else None
        with transaction.atomic():
            ids = list(
                Delivery.objects.select_for_update(skip_locked=True)
                .filter(edition_id=self.edition.pk, state=DeliveryState.PENDING)
                .filter(Q(next_attempt_at=None) | Q(next_attempt_at__lte=now))
                .order_by("id")
                .values_list("id", flat=True)[:size]
            )
            if not ids:
                return None
            Delivery.objects.filter(pk__in=ids).update(state=DeliveryState.CLAIMED, batch=batch)
        records = list(
            Delivery.objects.filter(batch=batch, state=DeliveryState.CLAIMED)
            .order_by("id")
            .values_list(
                "id", "attempts", "subscriber__email", "subscriber__name", "subscriber__token", "subscriber__status"
            )
        )
        return batch, records

    def _release(self, batch: str) -> None:
        """The batch's records not sent yet go back to `pending`, due at once."""
        Delivery.objects.filter(edition_id=self.edition.pk, batch=batch, state=DeliveryState.CLAIMED).update(
            state=DeliveryState.PENDING, batch="", next_attempt_at=None
        )

    def _send_batch(self, batch: str, records: list) -> None:
        blocked = suppressions_of(self.channel, {email_hash(email) for _, _, email, *_ in records if email})
        # Gone since the audience was frozen: erased, unsubscribed or unconfirmed, or suppressed.
        gone = [
            record[0]
            for record in records
            if record[2] is None or record[5] != SubscriberStatus.CONFIRMED or email_hash(record[2]) in blocked
        ]
        if gone:
            with transaction.atomic():
                suppressed = Delivery.objects.filter(pk__in=gone, batch=batch, state=DeliveryState.CLAIMED).update(
                    state=DeliveryState.SUPPRESSED, batch="", settled_at=timezone.now()
                )
                Edition.objects.filter(pk=self.edition.pk).update(suppressed=F("suppressed") + suppressed)
        settled = set(gone)
        records = [record for record in records if record[0] not in settled]
        marks = Marks(edition_id=self.edition.pk, batch=batch)
        try:
            if records:
                self._send_records(batch, records, marks)
        except Lost:
            logger.warning("newsletter edition=%s lost batch %s; stopping it", self.edition.pk, batch)
        finally:
            self._end_batch(batch, marks)

    def _end_batch(self, batch: str, marks: Marks) -> None:
        """Commit the outcomes waiting, then put the rest back. Only in that order: should the
        commit fail, the batch stays `claimed` for recovery, which knows its window, rather than
        going back with records in it whose messages went out."""
        try:
            marks.commit()
        except Lost:
            logger.warning("newsletter edition=%s lost batch %s; stopping it", self.edition.pk, batch)
        self._release(batch)

    @staticmethod
    def _open():
        connection = mail.get_connection()
        try:
            connection.open()
        except Exception as exc:  # smtplib's, socket's and providers' errors vary by backend
            # Nothing was sent on it: the batch is simply released, and the job retried on schedule.
            raise PublishError(f"The mail server could not be reached: {exc}") from exc
        return connection

    def _send_records(self, batch: str, records: list, marks: Marks) -> None:
        connection = self._open()
        try:
            for record_id, attempts, email, name, token, _ in records:
                self.pace.wait(self.deadline)
                if time.monotonic() >= self.deadline:
                    return
                marks.make_room()
                if _dropped(connection):
                    _close(connection)
                    connection = self._open()
                try:
                    message_id = self._send_one(connection, message.Recipient(email=email, name=name, token=token))
                except Exception as exc:  # every backend's errors are interpreted by verdict_of
                    verdict = verdict_of(exc)
                    if verdict.kind == "uncertain":
                        # No QUIT to a server that may be hanging: that would wait out another timeout.
                        _close(connection, hard=True)
                    self._refused(record_id, attempts, email, verdict, marks)
                    continue
                marks.add(record_id, DeliveryState.SENT, message_id=message_id, attempts=attempts + 1)
                self.sent += 1
        finally:
            _close(connection)

    def _send_one(self, connection, recipient: message.Recipient) -> str:
        """Send one recipient's message; its Message-ID (or the provider's id)."""
        if isinstance(connection, SmtpBackend):
            # The SMTP backend's own send_messages() would parse the same From and To again and
            # serialize the MIME tree per message; its smtplib connection (the backend's `connection`
            # attribute, open for the batch) takes the prepared bytes as it would take the backend's.
            stuffed = self.messages.serialize(recipient, stuffed=True)
            if stuffed is not None and PLAIN_ADDRESS.fullmatch(stuffed.to_address):
                sendmail(connection.connection, stuffed)
                return stuffed.message_id
            serialized = self.messages.serialize(recipient)
            if serialized is not None:
                connection.connection.sendmail(serialized.from_address, [serialized.to_address], serialized.data)
                return serialized.message_id
        outgoing = self.messages.compose(recipient)
        connection.send_messages([outgoing])
        return _message_id(outgoing)

    def _refused(self, record_id: int, attempts: int, email: str, verdict: Verdict, marks: Marks) -> None:
        """The outcome of a record whose send did not go through."""
        attempts += 1
        if verdict.kind == "halt":
            raise PublishError(verdict.error)
        if verdict.kind == "uncertain":
            marks.add(record_id, DeliveryState.UNCERTAIN, error=verdict.error, attempts=attempts)
            logger.warning("newsletter edition=%s delivery=%s uncertain: %s", self.edition.pk, record_id, verdict.error)
            # The connection is in an unknown state: the rest of the batch goes back (see _send_batch).
            stopped = f"Stopped after a message whose fate is unknown: {verdict.error}"
            if not self.sent:
                raise PublishError(stopped)
            raise InProgress(stopped, retry_after=AFTER_UNKNOWN)
        if verdict.kind == "bounce":
            suppress(
                account_id=self.channel.account_id,
                email=email,
                reason=SuppressionReason.BOUNCE,
                detail=f"The mail server refused it: {verdict.error}",
            )
        delay = retry_delay(attempts, settings.PUBLISH_RETRY_DELAYS) if verdict.kind == "retry" else None
        if delay is not None:
            marks.add(
                record_id,
                DeliveryState.PENDING,
                attempts=attempts,
                error=verdict.error,
                next_attempt_at=timezone.now() + timedelta(seconds=delay),
            )
            return
        if verdict.kind == "retry":
            verdict = Verdict("failed", f"{verdict.error} Gave up after {attempts} attempts.")
        marks.add(record_id, DeliveryState.FAILED, error=verdict.error, attempts=attempts)


# --- the destination -----------------------------------------------------------------------------


class NewsletterPublisher:
    """The Destination of newsletter channels (apps/core/destinations.py)."""

    def __init__(self, channel_id: int) -> None:
        self.channel_id = channel_id

    def _channel(self) -> Channel:
        return Channel.objects.select_related("account").get(pk=self.channel_id)

    @staticmethod
    def _outcome(edition: Edition | None, url: str) -> Outcome:
        # An edition names itself "edition:<id>" in its jobs, as a commit names itself by its id.
        return Outcome(reference=f"edition:{edition.pk}" if edition else "", url=url)

    def publish(self, job: JobContext, document: Document) -> Outcome:
        channel = self._channel()
        url = channel.post_url(document.slug) or ""
        edition = Edition.objects.filter(post_id=document.post_id).first()
        # Mail cannot be taken back: a sent edition is never sent again, and a later edit of its
        # post changes its archive page only.
        if job.action != JobAction.PUBLISH or (edition is not None and edition.finished_at is not None):
            return self._outcome(edition, url)
        if edition is None:
            try:
                edition = edition_freeze(channel=channel, job_id=job.job_id, document=document)
            except IntegrityError:  # frozen meanwhile by a job that outlived its lease
                raise InProgress("The edition is being frozen by another sender.", retry_after=AFTER_UNKNOWN) from None
        else:
            Edition.objects.filter(pk=edition.pk).update(job_id=job.job_id)
            recover(edition.pk)
            edition_recount(edition_id=edition.pk)
        edition.channel = channel
        Sender(edition, deadline=job.deadline).run()
        if finish_if_done(edition.pk):
            return self._outcome(edition, url)
        edition.refresh_from_db()
        raise InProgress(
            f"Sending: {edition.sent} of {edition.total} sent, {edition.pending} to go.",
            retry_after=next_due_in(edition.pk),
        )

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        # Mail cannot be unsent; the archive shows published posts only.
        return Outcome()

    def check(self) -> str:
        """Say which mail backend sends editions; for SMTP, connect to the server."""
        channel = self._channel()
        confirmed = Subscriber.objects.filter(channel=channel, status=SubscriberStatus.CONFIRMED).count()
        audience = f"{confirmed} confirmed subscriber{'' if confirmed == 1 else 's'}"
        _, sender = parseaddr(settings.DEFAULT_FROM_EMAIL)
        connection = mail.get_connection()
        if isinstance(connection, SmtpBackend):
            where = f"{connection.host}:{connection.port}"
            try:
                connection.open()
            except Exception as exc:  # smtplib's and socket's errors
                raise PublishError(f"The mail server {where} could not be reached: {exc}") from exc
            connection.close()
            return f"Connected to the mail server {where}; editions are sent from {sender} to {audience}."
        return f"Editions are sent through {settings.EMAIL_BACKEND} from {sender} to {audience}."
