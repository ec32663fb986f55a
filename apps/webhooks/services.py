"""The webhooks app's services: events emitted, deliveries handed to the broker (enqueue), sent
and swept, endpoints (saved, their secret rotated, a test sent) and the operator's retries.

The sender's parts have one module each: the outbox (outbox.py: the rows), sending (sending.py:
lease, attempt, record), the breaker (breaker.py) and upkeep (upkeep.py: the sweep, the pruning).
Only this module reaches the tasks (enqueue; the tasks call back into it, the one accepted import
cycle): the parts are handed `enqueue` where they pass deliveries on to the broker.
"""

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Account
from apps.core.addresses import check_url
from apps.core.errors import Conflict
from apps.core.keep import KEEP, Keep
from apps.core.threads import WorkerThreads
from apps.core.validation import field_error
from apps.webhooks import outbox, sending, upkeep
from apps.webhooks.events import WebhookEvent
from apps.webhooks.models import (
    SUBSCRIBABLE_EVENTS,
    Attempt,
    Delivery,
    DeliveryStatus,
    Event,
    EventInput,
    SignatureFormat,
    WebhookEndpoint,
    new_secret,
    new_standard_secret,
    standard_key,
)
from apps.webhooks.outbox import SWEEP_BATCH, PreparedEvents

logger = logging.getLogger(__name__)


def events_emit(*, kind: str, items: Iterable[EventInput], endpoint: WebhookEndpoint | None = None) -> list[Event]:
    """Write events and one delivery per subscribed, enabled endpoint; enqueue after commit.

    Must run inside the caller's transaction. `endpoint` sends to that endpoint only (test events).
    """
    events, ids = outbox.events_write(kind=kind, items=items, endpoint=endpoint)
    if ids:
        transaction.on_commit(lambda: enqueue(ids))
    return events


def events_prepare_many(*, kind: str, items: Sequence[EventInput]) -> PreparedEvents:
    """Many events (the content plan's batches) rendered and not written yet (no query), for
    events_emit_prepared."""
    return outbox.events_prepare_many(kind=kind, items=items)


def events_emit_prepared(prepared: PreparedEvents) -> int:
    """events_emit for many events at once, rendered beforehand (outbox.events_prepare_many: the
    content plan renders them while PostgreSQL runs its other writes): the same rows, written
    without a model instance each (outbox.events_write_prepared); returns how many events."""
    ids = outbox.events_write_prepared(prepared)
    if ids:
        transaction.on_commit(lambda: enqueue(ids))
    return len(prepared.items)


def event_emit(*, account: Account, kind: str, data: dict, post_id: int | None = None) -> Event:
    return events_emit(kind=kind, items=[EventInput(account=account, data=data, post_id=post_id)])[0]


def enqueue(delivery_ids: list[str], *, manual: bool = False) -> None:
    """Hand deliveries to the broker, WEBHOOK_BATCH_SIZE to a task (manual retries one each). A
    broker that is down loses nothing: the deliveries are marked as not handed over, and the
    sweeper hands them over once it is back."""
    from apps.webhooks.tasks import deliver_webhook, deliver_webhooks  # the accepted cycle: the tasks call this module

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


def delivery_attempt(
    *, delivery_id: str, manual: bool = False, pool: WorkerThreads | None = None, patience: float | None = None
) -> Attempt | None:
    """Make one attempt of a delivery (None when it is not due, another worker holds it, or it
    did not end within the `patience` given with a `pool`)."""
    attempts = deliveries_attempt(delivery_ids=[str(delivery_id)], manual=manual, pool=pool, patience=patience)
    return attempts[0] if attempts else None


def deliveries_attempt(
    *, delivery_ids: list[str], manual: bool = False, pool: WorkerThreads | None = None, patience: float | None = None
) -> list[Attempt]:
    """Make one attempt of each due delivery among `delivery_ids` (see sending.deliveries_attempt);
    what waited for their endpoints is handed to the broker."""
    return sending.deliveries_attempt(
        delivery_ids=delivery_ids, manual=manual, pool=pool, patience=patience, hand_over=enqueue
    )


def deliveries_sweep(*, limit: int = SWEEP_BATCH) -> int:
    """Hand the broker every due delivery it does not hold, and the due probes (upkeep.deliveries_sweep)."""
    return upkeep.deliveries_sweep(limit=limit, hand_over=enqueue)


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
    problem = check_url(url)
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
    signature_format: str | Keep = KEEP,
) -> WebhookEndpoint:
    """Create or change an endpoint; `signature_format` KEEP keeps its format (a new one's: the
    specification's headers)."""
    events = list(events or [])
    _validate(url, events)
    if signature_format is not KEEP and signature_format not in SignatureFormat.values:
        raise field_error(
            "signature_format", "choice", f"Unknown signature format {signature_format!r}: use service or standard."
        )
    endpoint = endpoint or WebhookEndpoint()
    endpoint.account, endpoint.url, endpoint.events = account, url, [e for e in SUBSCRIBABLE_EVENTS if e in events]
    endpoint.description = description
    if signature_format is not KEEP:
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
    elif signature_format == SignatureFormat.STANDARD and standard_key(endpoint.readable_secret()) is None:
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
    # A secret no key opens any more signs nothing: it gets no overlap, the new one signs alone.
    previous = endpoint.readable_secret()
    endpoint.previous_secret = previous
    endpoint.previous_secret_expires_at = now + settings.WEBHOOK_SECRET_OVERLAP if previous else None
    endpoint.secret = new_standard_secret() if endpoint.signature_format == SignatureFormat.STANDARD else new_secret()
    endpoint.save(
        update_fields=["secret_encrypted", "previous_secret_encrypted", "previous_secret_expires_at", "updated_at"]
    )
    logger.info(
        "webhook endpoint=%s secret rotated; the previous one is valid until %s",
        endpoint.pk,
        endpoint.previous_secret_expires_at.isoformat() if previous else "never (it was unreadable)",
    )
    return endpoint.secret


@transaction.atomic
def endpoint_expire_previous_secret(*, endpoint: WebhookEndpoint) -> WebhookEndpoint:
    """End a rotation's overlap now: from the next attempt on, only the current secret signs."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if not endpoint.previous_secret_valid(timezone.now()):
        raise Conflict("There is no previous secret to expire: only the current secret signs deliveries.")
    endpoint.previous_secret, endpoint.previous_secret_expires_at = "", None
    endpoint.save(update_fields=["previous_secret_encrypted", "previous_secret_expires_at", "updated_at"])
    logger.info("webhook endpoint=%s previous secret expired early", endpoint.pk)
    return endpoint


@transaction.atomic
def endpoint_send_test(*, endpoint: WebhookEndpoint) -> Event:
    data = {
        "message": "This is a test event from the content publishing service.",
        "endpoint": {"id": endpoint.id, "url": endpoint.url},
    }
    item = EventInput(account=endpoint.account, data=data)
    return events_emit(kind=WebhookEvent.TEST, items=[item], endpoint=endpoint)[0]
