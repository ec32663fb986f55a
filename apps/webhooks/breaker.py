"""The circuit breaker of each endpoint: its failures in a row (counted by
WebhookEndpoint.record_results) hold it back from WEBHOOK_BREAKER_THRESHOLD on, when its
deliveries wait and one probe at a time goes out; a successful probe releases what waited. An
endpoint that answers 410 Gone, or has failed every attempt for WEBHOOK_DISABLE_AFTER, is
disabled, and its account's admins are told.

The rule (docs/webhooks.md, No endpoint holds up another): every automatic attempt counts
against its delivery, which fails after its fifth, so a delivery's five attempts are the spec's
whatever the breaker does. The breaker spares the endpoint's other deliveries: held back, they are
not attempted, and so keep their attempts. The probe is the oldest waiting delivery, sent on the
breaker's own back-off (WEBHOOK_BREAKER_PROBE_DELAYS from the opening, then after each failed
probe; not the retry delays). An outage shorter than the first delay costs the waiting deliveries
nothing; a long one fails the probe at its fifth counted attempt, and the next oldest becomes the
probe. The breaker opens at the threshold's failure, so with the default threshold (5, the
attempts a delivery has) a lone delivery's five attempts are all made on its retry schedule
before it opens."""

import logging
from datetime import datetime
from functools import partial

from django.db import transaction

from apps.core.mail import tell_account_admins
from apps.core.outbox import unleased
from apps.webhooks.models import Delivery, DeliveryStatus, WebhookEndpoint
from apps.webhooks.outcomes import Outcome

logger = logging.getLogger(__name__)

# What the breaker keeps on the endpoint (saved when a batch changed it).
HEALTH_FIELDS = (
    "consecutive_failures",
    "failing_since",
    "next_probe_at",
    "failed_probes",
    "enabled",
    "disabled_reason",
)


def health(endpoint: WebhookEndpoint) -> list:
    return [getattr(endpoint, name) for name in HEALTH_FIELDS]


def take_probe(endpoint: WebhookEndpoint, pks: list, *, lease: datetime, now: datetime) -> tuple[list, list]:
    """Split an endpoint's claimable deliveries, the endpoint held back, into the probe to send (at
    most one) and those that wait. The probe is its oldest waiting delivery, so that what waited
    goes out in order once one succeeds; a message without it waits for the sweeper's probe."""
    probe = oldest_waiting(endpoint.pk, now)
    if probe in pks:
        # No second probe while this one is out; should its worker die, the next comes after the
        # lease. The lease also marks the batch as the probe when it is recorded.
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(next_probe_at=lease)
    return [pk for pk in pks if pk == probe], [pk for pk in pks if pk != probe]


def judge(endpoint: WebhookEndpoint, outcomes: list[Outcome], before: list, now: datetime) -> None:
    """Save the endpoint's health once a batch's outcomes are counted into it (the lock on it held,
    after its deliveries are written); disable it after 410 Gone, or once every attempt has failed
    for WEBHOOK_DISABLE_AFTER."""
    if any(outcome.consequence.gone for outcome in outcomes):
        endpoint.enabled = False
        endpoint.disabled_reason = f"Disabled after 410 Gone at {now:%Y-%m-%d %H:%M} UTC"
    elif endpoint.enabled and endpoint.consecutive_failures and endpoint.failing_too_long(now):
        _disable_failing(endpoint, now)
    if health(endpoint) != before:
        endpoint.save(update_fields=[*HEALTH_FIELDS, "updated_at"])


def _disable_failing(endpoint: WebhookEndpoint, now: datetime) -> None:
    """Disable an endpoint that has failed every attempt for too long, and tell its account's admins.

    Its pending deliveries are marked failed, not kept pending: enabling it again sends nothing by
    itself, and "Re-send failed deliveries" sends them on request."""
    endpoint.enabled = False
    endpoint.disabled_reason = (
        f"Disabled at {now:%Y-%m-%d %H:%M} UTC: every attempt failed since "
        f"{endpoint.failing_since:%Y-%m-%d %H:%M} UTC ({endpoint.consecutive_failures} attempts)."
    )
    endpoint.deliveries.filter(status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED,
        next_attempt_at=None,
        locked_until=None,
        enqueued_at=None,
        last_error=f"Not sent: the endpoint was disabled. {endpoint.disabled_reason}",
        updated_at=now,
    )
    logger.warning("webhook endpoint=%s disabled: %s", endpoint.pk, endpoint.disabled_reason)
    transaction.on_commit(partial(_tell_admins_disabled, endpoint.pk))


def _tell_admins_disabled(endpoint_id: int) -> None:
    endpoint = WebhookEndpoint.objects.select_related("account").get(pk=endpoint_id)
    tell_account_admins(
        account=endpoint.account,
        template="webhooks/endpoint_disabled_email",
        context={"endpoint": endpoint},
        page=("admin:webhooks_webhookendpoint_change", endpoint.pk),
    )


def release_backlog(endpoint: WebhookEndpoint, now: datetime) -> None:
    """The breaker has closed: what waited for it is due now, whatever retry time it had, so that
    it all goes out oldest first."""
    Delivery.objects.filter(
        unleased(now), endpoint=endpoint, status=DeliveryStatus.PENDING, next_attempt_at__gt=now
    ).update(next_attempt_at=now)


def oldest_waiting(endpoint_id: int, now: datetime):
    """The pk of the endpoint's oldest pending delivery no worker holds, due or not (a probe's choice)."""
    pending = Delivery.objects.filter(unleased(now), endpoint_id=endpoint_id, status=DeliveryStatus.PENDING)
    return pending.order_by("created_at", "event_id").values_list("pk", flat=True).first()
