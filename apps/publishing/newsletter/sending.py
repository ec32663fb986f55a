"""The newsletter destination's sender: an edition mailed once to each confirmed subscriber, through
Django's mail API (SMTP, or any provider through django-anymail), surviving crashes without
mailing anyone twice.

When its job first runs, the edition is frozen: its parts rendered once, and one Delivery record
per confirmed, not suppressed subscriber (unique per pair). The sender then takes records in
batches (SELECT … FOR UPDATE SKIP LOCKED), marks them `claimed` by the batch, and sends them one
at a time in id order over one connection per batch, marking each `sent` in its own statement as
soon as the server accepts it. So at any moment at most one `claimed` record per batch may have
gone out without being marked: the lowest-id one. After a crash, that record becomes `uncertain`
(never sent again by itself: the Settings area offers "Send to uncertain" as a decision) and the
rest of its batch goes back to `pending`.

The job's lease is the lock: one job of a channel runs at a time (apps/publishing/services.py),
so a job that starts finds every `claimed` record left by a dead predecessor. The sender stops
starting messages at the job's deadline, well within the lease; should a lease still be taken
over, a record it no longer holds is not marked, and the sender stops there.
"""

import logging
import re
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from email.utils import parseaddr
from itertools import islice
from smtplib import SMTPHeloError, SMTPRecipientsRefused, SMTPResponseException, SMTPSenderRefused

from anymail.exceptions import (
    AnymailAPIError,
    AnymailConfigurationError,
    AnymailInvalidAddress,
    AnymailRecipientsRefused,
)
from django.conf import settings
from django.core import mail
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Min, Q
from django.utils import timezone
from requests import ConnectTimeout
from urllib3.exceptions import NewConnectionError

from apps.channels.models import Channel
from apps.core.errors import InvalidInput
from apps.publishing.destinations import Document, InProgress, JobContext, Outcome, PublishError
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.newsletter import message
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
from apps.publishing.services import JobInput, jobs_enqueue

logger = logging.getLogger(__name__)

FREEZE_CHUNK = 2000
UNSETTLED = (DeliveryState.PENDING, DeliveryState.CLAIMED)
# After a message whose fate is unknown the connection is dropped and the job comes back this soon,
# when messages went out before it (a server that hangs for good is retried on the pipeline's
# schedule instead: each attempt may leave one more record uncertain).
AFTER_UNKNOWN = 1.0
# RFC 3463 enhanced status codes that say the address itself is bad.
ADDRESS_STATUS = re.compile(r"5\.1\.\d+|5\.2\.1\b")
UNCERTAIN_ERROR = "The sender stopped while this message was being sent: it may or may not have arrived."


def _chunks(iterable, size: int):
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


# --- freezing the edition ---------------------------------------------------------------------


def edition_freeze(*, channel: Channel, job_id: int, document: Document) -> Edition:
    """The edition of the post, rendered once, with one record per confirmed subscriber not on the
    suppression list: the audience as it is now, frozen in one transaction. Streams the list in
    chunks: memory stays flat whatever its size."""
    rendered = message.render(channel=channel, document=document)
    with transaction.atomic():
        edition = Edition.objects.create(
            post_id=document.post_id, channel=channel, job_id=job_id, subject=rendered.subject[:300],
            html=rendered.html, text=rendered.text, archive_url=channel.post_url(document.slug) or "",
        )  # fmt: skip
        audience = (
            Subscriber.objects.filter(channel=channel, status=SubscriberStatus.CONFIRMED)
            .order_by("id")
            .values_list("id", "email")
        )
        total = 0
        for chunk in _chunks(audience.iterator(chunk_size=FREEZE_CHUNK), FREEZE_CHUNK):
            hashed = [(subscriber_id, email_hash(email)) for subscriber_id, email in chunk]
            blocked = suppressions_of(channel, [digest for _, digest in hashed])
            records = [
                Delivery(edition=edition, subscriber_id=subscriber_id)
                for subscriber_id, digest in hashed
                if digest not in blocked
            ]
            Delivery.objects.bulk_create(records)
            total += len(records)
        Edition.objects.filter(pk=edition.pk).update(total=total)
        edition.total = total
    logger.info("newsletter edition=%s post=%s frozen recipients=%d", edition.pk, edition.post_id, total)
    return edition


# --- counts and recovery -------------------------------------------------------------------------


def edition_recount(*, edition_id: int) -> None:
    """The edition's counters from its records (one GROUP BY): exact again after a crash."""
    counts = dict(
        Delivery.objects.filter(edition_id=edition_id)
        .order_by()
        .values_list("state")
        .annotate(count=Count("id"))
        .values_list("state", "count")
    )
    Edition.objects.filter(pk=edition_id).update(
        total=sum(counts.values()),
        **{state: counts.get(state, 0) for state in ("sent", "failed", "suppressed", "uncertain")},
    )


def _recover(edition_id: int) -> int:
    """Settle the batches a dead sender left `claimed`: its record in flight (the lowest id, see the
    module's docstring) becomes `uncertain`, the others go back to `pending`. Only for a caller
    that holds the edition's job (its lease is the lock). Returns how many became uncertain."""
    now = timezone.now()
    batches = (
        Delivery.objects.filter(edition_id=edition_id, state=DeliveryState.CLAIMED)
        .order_by()
        .values("batch")
        .annotate(first=Min("id"))
        .values_list("batch", "first")
    )
    uncertain = 0
    with transaction.atomic():
        for batch, first in list(batches):
            uncertain += Delivery.objects.filter(pk=first, state=DeliveryState.CLAIMED).update(
                state=DeliveryState.UNCERTAIN, batch="", settled_at=now, error=UNCERTAIN_ERROR
            )
            Delivery.objects.filter(edition_id=edition_id, state=DeliveryState.CLAIMED, batch=batch).update(
                state=DeliveryState.PENDING, batch="", next_attempt_at=None
            )
    if uncertain:
        logger.warning("newsletter edition=%s recovered after a crash: uncertain=%d", edition_id, uncertain)
    return uncertain


# --- sending -------------------------------------------------------------------------------------


@dataclass
class Tally:
    """A batch's settled records, added to the edition's counters in one statement."""

    sent: int = 0
    failed: int = 0
    suppressed: int = 0
    uncertain: int = 0

    def save(self, edition_id: int) -> None:
        changes = {name: F(name) + value for name, value in vars(self).items() if value}
        if changes:
            Edition.objects.filter(pk=edition_id).update(**changes)


@dataclass(frozen=True)
class Verdict:
    """What a refused or broken send means for its record."""

    kind: str  # "bounce" (failed, address suppressed), "failed", "retry", "uncertain" or "halt"
    error: str


def _verdict(exc: Exception) -> Verdict:
    """The one place each mail error is interpreted. A permanent refusal of the address bounces
    it; a temporary one is retried; an error that says nothing was sent for reasons not of this
    address (the sender refused, a misconfigured backend) halts the send, to be retried; anything
    else (a timeout, a dropped connection) may have happened after the server took the message."""
    if isinstance(exc, SMTPSenderRefused):
        return Verdict(
            "halt", f"The mail server refused the sender {exc.sender}: {exc.smtp_code} {_text(exc.smtp_error)}"
        )
    if isinstance(exc, SMTPHeloError):
        return Verdict("halt", f"The mail server refused our greeting: {exc.smtp_code} {_text(exc.smtp_error)}")
    if isinstance(exc, SMTPRecipientsRefused):
        code, text = next(iter(exc.recipients.values()), (550, b""))
        return Verdict("bounce" if code >= 500 else "retry", f"{code} {_text(text)}")
    if isinstance(exc, SMTPResponseException):
        # Refused after the recipient was taken (at DATA): a 5xx there is most often about the message
        # (content, size, policy: 5.7.x), and suppressing every address of a list the server refuses
        # the edition for would be a disaster. Only the address statuses (5.1.x, 5.2.1: no such or a
        # disabled mailbox) bounce; other permanent refusals fail the record alone.
        text = _text(exc.smtp_error)
        if exc.smtp_code < 500:
            return Verdict("retry", f"{exc.smtp_code} {text}")
        return Verdict("bounce" if ADDRESS_STATUS.match(text) else "failed", f"{exc.smtp_code} {text}")
    if isinstance(exc, AnymailRecipientsRefused):
        return Verdict("bounce", _describe(exc))
    if isinstance(exc, AnymailAPIError):
        status = exc.status_code
        if status is None and _never_connected(exc):
            # Nothing was sent, and the next message would fare no better: the send waits.
            return Verdict("halt", f"The e-mail provider could not be reached: {_describe(exc)}")
        if status is None:  # the request may have reached the provider before it failed
            return Verdict("uncertain", f"{UNCERTAIN_ERROR} ({_describe(exc)})")
        return Verdict("retry" if status == 429 or status >= 500 else "failed", _describe(exc))
    if isinstance(exc, AnymailConfigurationError):
        return Verdict("halt", f"The e-mail provider is not set up: {_describe(exc)}")
    if isinstance(exc, (AnymailInvalidAddress, ValueError)):
        # Raised while the message was built, before anything was sent (an address no server takes).
        return Verdict("failed", f"Not sent: {_describe(exc)}")
    return Verdict("uncertain", f"{UNCERTAIN_ERROR} ({type(exc).__name__}: {_describe(exc)})")


def _never_connected(exc: Exception) -> bool:
    """A provider's request that failed before a connection was made (refused, or its connect timed out)."""
    if isinstance(exc, ConnectTimeout):
        return True
    cause = exc.__cause__
    reason = getattr(cause.args[0], "reason", None) if cause is not None and cause.args else None
    return isinstance(reason, NewConnectionError)


def _describe(exc: Exception) -> str:
    try:
        return str(exc)
    except Exception:  # an error whose message cannot be rendered must not stop the send
        return type(exc).__name__


def _text(value) -> str:
    return (value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)).strip()


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
            batch = self._claim()
            if batch is None:
                return
            self._send_batch(batch)

    def _claim(self) -> str | None:
        now = timezone.now()
        batch = uuid.uuid4().hex
        with transaction.atomic():
            ids = list(
                Delivery.objects.select_for_update(skip_locked=True)
                .filter(edition_id=self.edition.pk, state=DeliveryState.PENDING)
                .filter(Q(next_attempt_at=None) | Q(next_attempt_at__lte=now))
                .order_by("id")
                .values_list("id", flat=True)[: settings.NEWSLETTER_BATCH_SIZE]
            )
            if not ids:
                return None
            Delivery.objects.filter(pk__in=ids).update(state=DeliveryState.CLAIMED, batch=batch)
        return batch

    def _settle(self, record_id: int, batch: str, **fields) -> bool:
        """One record's outcome, in its own statement (autocommit); False when the batch no longer
        holds it."""
        fields.setdefault("settled_at", timezone.now())
        return bool(
            Delivery.objects.filter(pk=record_id, batch=batch, state=DeliveryState.CLAIMED).update(batch="", **fields)
        )

    def _mark_sent(self, record_id: int, batch: str, message_id: str, attempts: int) -> bool:
        """_settle() of a sent record, the statement run once per message: written in SQL, as the
        ORM's building of the same UPDATE costs more than the database's running of it (0.9 ms
        against 0.5 ms here), and it is in every message's path between two sends."""
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Delivery._meta.db_table} SET state = %s, batch = '', message_id = %s, attempts = %s, "  # noqa: S608 (the model's own table)
                "settled_at = %s WHERE id = %s AND batch = %s AND state = %s",
                [DeliveryState.SENT, message_id, attempts, timezone.now(), record_id, batch, DeliveryState.CLAIMED],
            )
            return cursor.rowcount == 1

    def _release(self, batch: str) -> None:
        """The batch's records not sent yet go back to `pending`, due at once."""
        Delivery.objects.filter(edition_id=self.edition.pk, batch=batch, state=DeliveryState.CLAIMED).update(
            state=DeliveryState.PENDING, batch="", next_attempt_at=None
        )

    def _send_batch(self, batch: str) -> None:
        records = list(
            Delivery.objects.filter(batch=batch, state=DeliveryState.CLAIMED)
            .order_by("id")
            .values_list("id", "attempts", "subscriber__email", "subscriber__name", "subscriber__token",
                         "subscriber__status")
        )  # fmt: skip
        tally = Tally()
        blocked = suppressions_of(self.channel, {email_hash(email) for _, _, email, *_ in records if email})
        # Gone since the audience was frozen: erased, unsubscribed or unconfirmed, or suppressed.
        gone = [
            record[0]
            for record in records
            if record[2] is None or record[5] != SubscriberStatus.CONFIRMED or email_hash(record[2]) in blocked
        ]
        if gone:
            tally.suppressed += Delivery.objects.filter(pk__in=gone, batch=batch, state=DeliveryState.CLAIMED).update(
                state=DeliveryState.SUPPRESSED, batch="", settled_at=timezone.now()
            )
        settled = set(gone)
        records = [record for record in records if record[0] not in settled]
        try:
            if records:
                self._send_records(batch, records, tally)
        finally:
            self._release(batch)
            tally.save(self.edition.pk)

    @staticmethod
    def _open():
        connection = mail.get_connection()
        try:
            connection.open()
        except Exception as exc:  # smtplib's, socket's and providers' errors vary by backend
            # Nothing was sent on it: the batch is simply released, and the job retried on schedule.
            raise PublishError(f"The mail server could not be reached: {exc}") from exc
        return connection

    def _send_records(self, batch: str, records: list, tally: Tally) -> None:
        connection = self._open()
        try:
            for record_id, attempts, email, name, token, _ in records:
                self.pace.wait(self.deadline)
                if time.monotonic() >= self.deadline:
                    return
                if _dropped(connection):
                    _close(connection)
                    connection = self._open()
                try:
                    message_id = self._send_one(connection, message.Recipient(email=email, name=name, token=token))
                except Exception as exc:  # every backend's errors are interpreted by _verdict
                    verdict = _verdict(exc)
                    if verdict.kind == "uncertain":
                        # No QUIT to a server that may be hanging: that would wait out another timeout.
                        _close(connection, hard=True)
                    if not self._refused(record_id, attempts, email, batch, verdict, tally):
                        return
                    continue
                if not self._mark_sent(record_id, batch, message_id, attempts + 1):
                    logger.warning("newsletter edition=%s lost batch %s; stopping it", self.edition.pk, batch)
                    return
                tally.sent += 1
                self.sent += 1
        finally:
            _close(connection)

    def _send_one(self, connection, recipient: message.Recipient) -> str:
        """Send one recipient's message; its Message-ID (or the provider's id)."""
        serialized = self.messages.serialize(recipient) if isinstance(connection, SmtpBackend) else None
        if serialized is None:
            outgoing = self.messages.compose(recipient)
            connection.send_messages([outgoing])
            return _message_id(outgoing)
        # The SMTP backend's own send_messages() would parse the same From and To again and serialize
        # the MIME tree per message; its smtplib connection (the backend's `connection` attribute,
        # open for the batch) takes the prepared bytes as it would take the backend's.
        connection.connection.sendmail(serialized.from_address, [serialized.to_address], serialized.data)
        return serialized.message_id

    def _refused(self, record_id: int, attempts: int, email: str, batch: str, verdict: Verdict, tally: Tally) -> bool:
        """Settle a record whose send did not go through; False when the batch must stop."""
        attempts += 1
        if verdict.kind == "halt":
            raise PublishError(verdict.error)
        if verdict.kind == "uncertain":
            if self._settle(record_id, batch, state=DeliveryState.UNCERTAIN, error=verdict.error, attempts=attempts):
                tally.uncertain += 1
            logger.warning("newsletter edition=%s delivery=%s uncertain: %s", self.edition.pk, record_id, verdict.error)
            # The connection is in an unknown state: the rest of the batch goes back (see _send_batch).
            stopped = f"Stopped after a message whose fate is unknown: {verdict.error}"
            if not self.sent:
                raise PublishError(stopped)
            raise InProgress(stopped, retry_after=AFTER_UNKNOWN)
        if verdict.kind == "bounce":
            suppress(
                account_id=self.channel.account_id, email=email, reason=SuppressionReason.BOUNCE,
                detail=f"The mail server refused it: {verdict.error}",
            )  # fmt: skip
        delays = settings.PUBLISH_RETRY_DELAYS
        if verdict.kind == "retry" and attempts <= len(delays):
            return bool(
                Delivery.objects.filter(pk=record_id, batch=batch, state=DeliveryState.CLAIMED).update(
                    state=DeliveryState.PENDING,
                    batch="",
                    attempts=attempts,
                    error=verdict.error,
                    next_attempt_at=timezone.now() + timedelta(seconds=delays[attempts - 1]),
                )
            )
        if verdict.kind == "retry":
            verdict = Verdict("failed", f"{verdict.error} Gave up after {attempts} attempts.")
        if not self._settle(record_id, batch, state=DeliveryState.FAILED, error=verdict.error, attempts=attempts):
            return False
        tally.failed += 1
        return True


# --- the edition's state -------------------------------------------------------------------------


def _finish_if_done(edition_id: int) -> bool:
    """Mark the edition sent once every record is settled; True when it is."""
    with transaction.atomic():
        edition = Edition.objects.select_for_update().get(pk=edition_id)
        if Delivery.objects.filter(edition_id=edition_id, state__in=UNSETTLED).exists():
            return False
        if edition.finished_at is None:
            edition.finished_at = timezone.now()
            edition.save(update_fields=["finished_at"])
    edition_recount(edition_id=edition_id)
    return True


def _next_due_in(edition_id: int) -> float:
    """Seconds until the edition's next pending record is due (0: now)."""
    pending = Delivery.objects.filter(edition_id=edition_id, state=DeliveryState.PENDING)
    if pending.filter(next_attempt_at=None).exists():
        return 0
    first = pending.order_by().aggregate(first=Min("next_attempt_at"))["first"]
    return max((first - timezone.now()).total_seconds(), 0) if first else 0


def edition_send_uncertain(*, edition: Edition) -> int:
    """The Settings area's "Send to uncertain": the account decides that the people whose copy may
    or may not have gone out are sent it (some may get it twice). Their records go back to
    `pending` and the post's publish job runs again: the same sender, leases and crash recovery
    as the first send. The post stays published; the edition's job finds only these to send.
    Returns how many were put back."""
    latest = PublicationJob.objects.filter(post_id=edition.post_id).order_by("-id").values_list("action", flat=True)
    if latest.first() == JobAction.UNPUBLISH:
        raise InvalidInput("The edition's post was taken down or deleted; its edition is not sent any more.")
    with transaction.atomic():
        edition = Edition.objects.select_for_update().get(pk=edition.pk)
        count = Delivery.objects.filter(edition_id=edition.pk, state=DeliveryState.UNCERTAIN).update(
            state=DeliveryState.PENDING, next_attempt_at=None, settled_at=None, error=""
        )
        if not count:
            return 0
        Edition.objects.filter(pk=edition.pk).update(uncertain=F("uncertain") - count, finished_at=None)
        jobs_enqueue(
            items=[JobInput(channel_id=edition.channel_id, post_id=edition.post_id, title=edition.subject,
                            action=JobAction.PUBLISH)]
        )  # fmt: skip
    logger.info("newsletter edition=%s sending again to uncertain=%d", edition.pk, count)
    return count


# --- the destination -----------------------------------------------------------------------------


class NewsletterPublisher:
    """The Destination of newsletter channels (apps/publishing/destinations.py)."""

    def __init__(self, channel_id: int) -> None:
        self.channel_id = channel_id

    def _channel(self) -> Channel:
        return Channel.objects.select_related("account").get(pk=self.channel_id)

    @staticmethod
    def _outcome(edition: Edition | None, url: str) -> Outcome:
        # "edition:<id>" is how the publishing selectors tell an edition from a commit (EDITION_PREFIX).
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
            _recover(edition.pk)
            edition_recount(edition_id=edition.pk)
        edition.channel = channel
        Sender(edition, deadline=job.deadline).run()
        if _finish_if_done(edition.pk):
            return self._outcome(edition, url)
        edition.refresh_from_db()
        raise InProgress(
            f"Sending: {edition.sent} of {edition.total} sent, {edition.pending} to go.",
            retry_after=_next_due_in(edition.pk),
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
