"""A newsletter edition: frozen once (rendered, with its audience), its counters, the recovery of
what a dead sender left, its end, and the account's "Send to uncertain". The sending itself is
sending.py's."""

import logging
from itertools import islice

from django.db import connection, transaction
from django.db.models import Count, F, Min
from django.utils import timezone

from apps.channels.models import Channel
from apps.core.destinations import Document
from apps.core.errors import InvalidInput
from apps.core.lookups import bigint_array
from apps.publishing.models import JobAction, PublicationJob
from apps.publishing.newsletter import message
from apps.publishing.newsletter.mail_errors import UNCERTAIN_ERROR
from apps.publishing.newsletter.marks import window_of
from apps.publishing.newsletter.models import (
    Delivery,
    DeliveryState,
    Edition,
    Subscriber,
    SubscriberStatus,
    email_hash,
)
from apps.publishing.newsletter.services import suppressions_of
from apps.publishing.services import JobInput, jobs_enqueue

logger = logging.getLogger(__name__)

FREEZE_CHUNK = 2000
UNSETTLED = (DeliveryState.PENDING, DeliveryState.CLAIMED)


def _chunks(iterable, size: int):
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


def edition_freeze(*, channel: Channel, job_id: int, document: Document) -> Edition:
    """The edition of the post, rendered once, with one record per confirmed subscriber not on the
    suppression list: the audience as it is now, frozen in one transaction. Streams the list in
    chunks: memory stays flat whatever its size."""
    rendered = message.render(channel=channel, document=document)
    with transaction.atomic():
        edition = Edition.objects.create(
            post_id=document.post_id,
            channel=channel,
            job_id=job_id,
            subject=rendered.subject[:300],
            html=rendered.html,
            text=rendered.text,
            archive_url=channel.post_url(document.slug) or "",
        )
        audience = (
            Subscriber.objects.filter(channel=channel, status=SubscriberStatus.CONFIRMED)
            .order_by("id")
            .values_list("id", "email")
        )
        total = 0
        for chunk in _chunks(audience.iterator(chunk_size=FREEZE_CHUNK), FREEZE_CHUNK):
            hashed = [(subscriber_id, email_hash(email)) for subscriber_id, email in chunk]
            blocked = suppressions_of(channel, [digest for _, digest in hashed])
            kept = [subscriber_id for subscriber_id, digest in hashed if digest not in blocked]
            _insert_records(edition, kept)
            total += len(kept)
        Edition.objects.filter(pk=edition.pk).update(total=total)
        edition.total = total
    logger.info("newsletter edition=%s post=%s frozen recipients=%d", edition.pk, edition.post_id, total)
    return edition


def _insert_records(edition: Edition, subscriber_ids: list[int]) -> None:
    """A pending record per subscriber. On PostgreSQL one INSERT of the ids as an array: the ORM's
    bulk_create builds and adapts a model instance per record, most of a 100,000-record freeze's time."""
    if connection.vendor != "postgresql":
        Delivery.objects.bulk_create(Delivery(edition=edition, subscriber_id=pk) for pk in subscriber_ids)
        return
    with connection.cursor() as cursor:
        cursor.execute(
            # The model's own table; every value is a parameter.
            f"INSERT INTO {Delivery._meta.db_table} "  # noqa: S608
            "(edition_id, subscriber_id, state, batch, attempts, message_id, error) "
            "SELECT %s, id, %s, '', 0, '', '' FROM unnest(%s::bigint[]) AS id",
            [edition.pk, DeliveryState.PENDING, bigint_array(subscriber_ids)],
        )


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


def recover(edition_id: int) -> int:
    """Settle the batches a dead sender left `claimed`: the lowest ids of each, as many as its
    window (the messages that may have gone out unmarked, see marks.py), become `uncertain`, the
    others go back to `pending`. Only for a caller that holds the edition's job (its lease is the
    lock). Returns how many became uncertain."""
    now = timezone.now()
    with transaction.atomic():
        # Locked, and read after any sender's commit of the same records: a record its outcome
        # settled meanwhile is no longer `claimed`, so the window is counted from the right place.
        claimed = list(
            Delivery.objects.select_for_update()
            .filter(edition_id=edition_id, state=DeliveryState.CLAIMED)
            .order_by("id")
            .values_list("id", "batch")
        )
        doubtful: list[int] = []
        seen: dict[str, int] = {}
        for record_id, batch in claimed:
            seen[batch] = seen.get(batch, 0) + 1
            if seen[batch] <= window_of(batch):
                doubtful.append(record_id)
        uncertain = Delivery.objects.filter(pk__in=doubtful).update(
            state=DeliveryState.UNCERTAIN, batch="", settled_at=now, error=UNCERTAIN_ERROR
        )
        Delivery.objects.filter(edition_id=edition_id, state=DeliveryState.CLAIMED).update(
            state=DeliveryState.PENDING, batch="", next_attempt_at=None
        )
    if uncertain:
        logger.warning("newsletter edition=%s recovered after a crash: uncertain=%d", edition_id, uncertain)
    return uncertain


def finish_if_done(edition_id: int) -> bool:
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


def next_due_in(edition_id: int) -> float:
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
            items=[
                JobInput(
                    channel_id=edition.channel_id,
                    post_id=edition.post_id,
                    title=edition.subject,
                    action=JobAction.PUBLISH,
                )
            ]
        )
    logger.info("newsletter edition=%s sending again to uncertain=%d", edition.pk, count)
    return count
