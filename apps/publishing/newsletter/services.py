"""A newsletter channel's subscribers: every change of who is on its list and who is never mailed,
for the API, the public pages, the Settings area and `import_subscribers` alike.

Double opt-in: a person is mailed editions only once they confirmed (a POST from the link of the
confirmation e-mail), unless whoever adds them says they opted in elsewhere. The suppression list
outlives subscribers: an address that unsubscribed, bounced or complained is never turned back on
by the API or an import; only the person (subscribing again on the form and confirming with that
new e-mail's link lifts an unsubscribe) or, for a bounce or a complaint, an account admin with a
reason, can. The confirmation link itself is confirmation.py's.
"""

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import formataddr, parseaddr
from functools import partial
from itertools import islice

from django.conf import settings
from django.core import mail
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db import connection as db
from django.db.models import F, Q
from django.db.models.expressions import RawSQL
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.crypto import hash_secret
from apps.core.errors import Conflict, InvalidInput, NotFound
from apps.core.validation import validation_envelope
from apps.publishing.newsletter.events import SubscriberEvent
from apps.publishing.newsletter.models import (
    PLATFORM,
    Newsletter,
    Subscriber,
    SubscriberStatus,
    Suppression,
    SuppressionReason,
    email_hash,
    new_token,
    normalize_email,
)
from apps.publishing.newsletter.serializers import subscriber_webhook_data
from apps.webhooks.services import event_emit

logger = logging.getLogger(__name__)

IMPORT_CHUNK = 1000
# The public form sends an address at most one confirmation e-mail per interval.
CONFIRMATION_INTERVAL = timezone.timedelta(minutes=10)
REFUSED = {
    SuppressionReason.UNSUBSCRIBED: "This address unsubscribed; only the person can subscribe again (the public form).",
    SuppressionReason.BOUNCE: "Mail to this address bounced; an account admin can lift that in the Settings area.",
    SuppressionReason.COMPLAINT: "This address reported a newsletter as spam; an account admin can lift that in the "
    "Settings area.",
}


def newsletter_of(channel: Channel) -> Newsletter:
    newsletter, _ = Newsletter.objects.get_or_create(channel=channel)
    return newsletter


def check_newsletter(channel: Channel) -> None:
    """Only newsletter channels have subscribers: any other is not found (as in the API's 404)."""
    if channel.platform != PLATFORM:
        raise NotFound("This channel is not a newsletter; it has no subscribers.")


def clean_email(email: str) -> str:
    email = normalize_email(email or "")
    try:
        # 254: the longest address SMTP carries (RFC 5321's path limit), and the column's length.
        if len(email) > 254:
            raise ValidationError("too long")
        validate_email(email)
    except ValidationError:
        message = "Enter a valid e-mail address."
        _, details = validation_envelope([{"field": "email", "rule": "invalid", "message": message}])
        raise InvalidInput(message, details=details) from None
    return email


def suppressions_of(channel: Channel, hashes: Iterable[str]) -> dict[str, str]:
    """The reason each of these address hashes is suppressed for the channel, by hash (account-wide first)."""
    hashes = list(hashes)
    if db.vendor == "postgresql":
        # One array parameter: a query text psycopg parses once, not an IN list of 100-2,000 per batch.
        matching = Q(email_hash__in=RawSQL("SELECT unnest(%s::text[])", [hashes]))
    else:
        matching = Q(email_hash__in=hashes)
    rows = (
        Suppression.objects.filter(matching, account_id=channel.account_id)
        .filter(Q(channel=None) | Q(channel=channel))
        # Account-wide (null) first, on every database: a complaint outweighs an unsubscribe.
        .order_by(F("channel_id").asc(nulls_first=True))
        .values_list("email_hash", "reason")
    )
    found: dict[str, str] = {}
    for digest, reason in rows:
        found.setdefault(digest, reason)
    return found


def suppression_of(channel: Channel, email: str) -> str | None:
    """Why this address is never mailed by the channel, or None."""
    return suppressions_of(channel, [email_hash(email)]).get(email_hash(email))


def _emit(kind: str, subscriber: Subscriber) -> None:
    event_emit(account=subscriber.channel.account, kind=kind, data=subscriber_webhook_data(subscriber))


def _send_confirmation_later(subscriber_ids: list[int]) -> None:
    from apps.publishing.newsletter.tasks import send_confirmations

    transaction.on_commit(partial(send_confirmations.delay, subscriber_ids))


@transaction.atomic
def subscriber_create(*, channel: Channel, email: str, name: str = "", confirmed: bool = False) -> Subscriber:
    """Add a person (the API, the Settings area). `confirmed`: they opted in elsewhere; otherwise
    they are sent the confirmation e-mail. Conflict when the address is on the list already or
    suppressed (with the reason)."""
    check_newsletter(channel)
    email = clean_email(email)
    reason = suppression_of(channel, email)
    if reason is not None:
        raise Conflict(REFUSED[reason], details={"reason": reason})
    if Subscriber.objects.filter(channel=channel, email=email).exists():
        raise Conflict("This address is on the newsletter's list already.", details={"reason": "exists"})
    now = timezone.now()
    try:
        with transaction.atomic():
            subscriber = Subscriber.objects.create(
                channel=channel,
                email=email,
                name=(name or "").strip()[:200],
                status=SubscriberStatus.CONFIRMED if confirmed else SubscriberStatus.UNCONFIRMED,
                confirmed_at=now if confirmed else None,
                created_at=now,
            )
    except IntegrityError:  # the same address added at the same moment
        raise Conflict("This address is on the newsletter's list already.", details={"reason": "exists"}) from None
    if confirmed:
        _emit(SubscriberEvent.CONFIRMED, subscriber)
    else:
        _send_confirmation_later([subscriber.pk])
    return subscriber


@transaction.atomic
def subscribe(*, channel: Channel, email: str, name: str = "") -> None:
    """The public form: whatever the address's state, the visitor sees the same page. A new or
    unconfirmed address, or one that unsubscribed, is sent the confirmation e-mail (at most one
    per CONFIRMATION_INTERVAL); a confirmed one nothing; a bounced or complained one nothing."""
    check_newsletter(channel)
    email = clean_email(email)
    reason = suppression_of(channel, email)
    if reason in (SuppressionReason.BOUNCE, SuppressionReason.COMPLAINT):
        return
    now = timezone.now()
    subscriber, created = Subscriber.objects.select_for_update().get_or_create(
        channel=channel, email=email, defaults={"name": (name or "").strip()[:200], "created_at": now}
    )
    if subscriber.status == SubscriberStatus.CONFIRMED and reason is None:
        return
    last_sent = subscriber.confirmation_sent_at
    if not created and last_sent and now - last_sent < CONFIRMATION_INTERVAL:
        return
    Subscriber.objects.filter(pk=subscriber.pk).update(confirmation_sent_at=now)
    _send_confirmation_later([subscriber.pk])


def _by_token(token: str) -> Subscriber | None:
    return Subscriber.objects.with_token(token).select_for_update().select_related("channel__account").first()


@transaction.atomic
def subscriber_unsubscribe(*, token: str) -> Subscriber | None:
    """The person left (one click in their mail client, or the button of the page). Their address
    is suppressed for the channel, and a confirmation link they were sent stops working, so nothing
    turns them back on but a new subscription of theirs. None for a token nobody has: it is a deleted
    subscriber's, who is mailed nothing anyway."""
    subscriber = _by_token(token)
    if subscriber is None:
        return None
    suppress(
        account_id=subscriber.channel.account_id,
        channel=subscriber.channel,
        email=subscriber.email,
        reason=SuppressionReason.UNSUBSCRIBED,
        detail="The person unsubscribed.",
    )
    if subscriber.confirm_token_hash is not None:
        subscriber.confirm_token_hash = subscriber.confirm_expires_at = None
        subscriber.save(update_fields=["confirm_token_hash", "confirm_expires_at"])
    if subscriber.status != SubscriberStatus.UNSUBSCRIBED:
        subscriber.status, subscriber.unsubscribed_at = SubscriberStatus.UNSUBSCRIBED, timezone.now()
        subscriber.save(update_fields=["status", "unsubscribed_at"])
        _emit(SubscriberEvent.UNSUBSCRIBED, subscriber)
    return subscriber


@transaction.atomic
def subscriber_delete(*, subscriber: Subscriber) -> None:
    """Erase the person: their row, and with it the address from every edition's records (they
    keep their counts). The suppression list keeps only a hash of the address."""
    subscriber.delete()


def suppress(
    *, account_id: int, email: str, reason: str, channel: Channel | None = None, detail: str = ""
) -> Suppression:
    """Put an address on the account's suppression list (an unsubscribe: for `channel` only).
    Recording it twice changes nothing."""
    channel = channel if reason == SuppressionReason.UNSUBSCRIBED else None
    digest = email_hash(email)
    with transaction.atomic():
        existing = Suppression.objects.filter(account_id=account_id, channel=channel, email_hash=digest).first()
        if existing is not None:
            if existing.reason == SuppressionReason.UNSUBSCRIBED and reason != SuppressionReason.UNSUBSCRIBED:
                existing.reason, existing.detail = reason, detail[:2000]
                existing.save(update_fields=["reason", "detail"])
            return existing
        try:
            with transaction.atomic():
                return Suppression.objects.create(
                    account_id=account_id, channel=channel, email_hash=digest, reason=reason, detail=detail[:2000]
                )
        except IntegrityError:  # recorded at the same moment by another event
            return Suppression.objects.get(account_id=account_id, channel=channel, email_hash=digest)


@transaction.atomic
def suppression_lift(*, suppression: Suppression, reason: str, by: str) -> None:
    """An account admin decides the address may be mailed again (a bounce that was a full mailbox,
    a complaint made by mistake). The reason is required and logged."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("Say why the address may be mailed again.", details={"reason": ["This field is required."]})
    logger.info(
        "suppression lifted account=%s reason=%s hash=%s by=%s why=%r",
        suppression.account_id,
        suppression.reason,
        suppression.email_hash[:12],
        by,
        reason,
    )
    suppression.delete()


@transaction.atomic
def confirm_tokens_issue(*, subscriber_ids: list[int]) -> dict[int, str]:
    """A new confirmation token for each of these people still to confirm, by subscriber id: it
    replaces the one of an earlier e-mail and confirms until NEWSLETTER_CONFIRM_TTL from now. Only
    its hash is kept, so the token is in the e-mail alone."""
    subscribers = list(
        Subscriber.objects.select_for_update()
        .filter(pk__in=subscriber_ids, status__in=[SubscriberStatus.UNCONFIRMED, SubscriberStatus.UNSUBSCRIBED])
        .order_by("pk")
        .only("pk")
    )
    expires_at = timezone.now() + settings.NEWSLETTER_CONFIRM_TTL
    tokens = {subscriber.pk: new_token() for subscriber in subscribers}
    for subscriber in subscribers:
        subscriber.confirm_token_hash, subscriber.confirm_expires_at = hash_secret(tokens[subscriber.pk]), expires_at
    Subscriber.objects.bulk_update(subscribers, ["confirm_token_hash", "confirm_expires_at"], batch_size=500)
    return tokens


def confirmations_send(*, subscriber_ids: list[int]) -> int:
    """Mail each of these people still to confirm the confirmation e-mail: one link (a token of its
    own), and nothing a visitor typed (the form must not let bots mail strangers their text). Returns
    how many were sent; a mail server that fails raises, and the task tries again (with new links)."""
    tokens = confirm_tokens_issue(subscriber_ids=subscriber_ids)
    subscribers = Subscriber.objects.select_related("channel").filter(pk__in=list(tokens))
    messages, newsletters = [], {}
    for subscriber in subscribers.iterator(chunk_size=500):
        # An import's chunk is one channel's: its settings are read once, not once a person.
        newsletter = newsletters.get(subscriber.channel_id) or newsletter_of(subscriber.channel)
        newsletters[subscriber.channel_id] = newsletter
        context = {
            "channel": subscriber.channel,
            "url": f"{settings.SITE_URL}{reverse('blog:newsletter_confirm', args=[tokens[subscriber.pk]])}",
        }
        messages.append(
            mail.EmailMessage(
                subject=render_to_string("newsletter/confirm_email_subject.txt", context).strip(),
                body=render_to_string("newsletter/confirm_email.txt", context),
                from_email=sender_address(newsletter),
                to=[subscriber.email],
            )
        )
    if messages:
        with mail.get_connection() as connection:
            connection.send_messages(messages)
    return len(messages)


def sender_address(newsletter: Newsletter) -> str:
    """From: the channel's sender name with DEFAULT_FROM_EMAIL's address."""
    _, address = parseaddr(settings.DEFAULT_FROM_EMAIL)
    return formataddr((newsletter.sender_name or newsletter.channel.title, address))


@transaction.atomic
def newsletter_settings_save(*, channel: Channel, sender_name: str = "", reply_to: str = "") -> Newsletter:
    """The Settings area's sender name and reply-to of a newsletter channel."""
    check_newsletter(channel)
    reply_to = clean_email(reply_to) if (reply_to or "").strip() else ""
    newsletter, _ = Newsletter.objects.select_for_update().get_or_create(channel=channel)
    # One line: the name goes into the From header, where a line break would start a header of its own.
    newsletter.sender_name = " ".join((sender_name or "").split())[:200]
    newsletter.reply_to = reply_to
    newsletter.save(update_fields=["sender_name", "reply_to", "updated_at"])
    return newsletter


# --- import ---------------------------------------------------------------------------------------


@dataclass
class ImportResult:
    created: int = 0
    skipped: int = 0
    invalid: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"created": self.created, "skipped": self.skipped, "invalid": self.invalid}


@dataclass(frozen=True)
class ImportRow:
    line: int
    email: str
    name: str = ""


def _chunks(rows: Iterable[ImportRow], size: int) -> Iterator[list[ImportRow]]:
    rows = iter(rows)
    while chunk := list(islice(rows, size)):
        yield chunk


def subscribers_import(*, channel: Channel, rows: Iterable[ImportRow], confirmed: bool = False) -> ImportResult:
    """Add many people, streamed in chunks (any size, flat memory). A bad address is reported by
    its line and the rest goes on; an address on the list already, or suppressed, is skipped.
    Unconfirmed people are sent the confirmation e-mail. Imports send no webhook events."""
    check_newsletter(channel)
    result = ImportResult()
    for chunk in _chunks(rows, IMPORT_CHUNK):
        with transaction.atomic():
            _import_chunk(channel, chunk, confirmed, result)
    return result


def _import_chunk(channel: Channel, chunk: list[ImportRow], confirmed: bool, result: ImportResult) -> None:
    valid: dict[str, ImportRow] = {}
    for row in chunk:
        try:
            email = clean_email(row.email)
        except InvalidInput as exc:
            result.invalid.append({"line": row.line, "error": f"{exc.message} ({row.email.strip()[:254]!r})"})
            continue
        if email in valid:
            result.skipped += 1
            continue
        valid[email] = row
    hashes = {email_hash(email): email for email in valid}
    suppressed = {hashes[digest] for digest in suppressions_of(channel, hashes)}
    existing = set(Subscriber.objects.filter(channel=channel, email__in=list(valid)).values_list("email", flat=True))
    now = timezone.now()
    status = SubscriberStatus.CONFIRMED if confirmed else SubscriberStatus.UNCONFIRMED
    new = [
        Subscriber(
            channel=channel,
            email=email,
            name=row.name.strip()[:200],
            created_at=now,
            status=status,
            confirmed_at=now if confirmed else None,
            confirmation_sent_at=None if confirmed else now,
        )
        for email, row in valid.items()
        if email not in suppressed and email not in existing
    ]
    result.skipped += len(valid) - len(new)
    # ignore_conflicts: an address added meanwhile by someone else is skipped, not an error.
    Subscriber.objects.bulk_create(new, ignore_conflicts=True)
    created = Subscriber.objects.filter(channel=channel, email__in=[s.email for s in new], created_at=now)
    ids = list(created.values_list("id", flat=True))
    result.created += len(ids)
    result.skipped += len(new) - len(ids)
    if ids and not confirmed:
        _send_confirmation_later(ids)
