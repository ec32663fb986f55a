import base64
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.accounts.models import Account
from apps.core import crypto
from apps.core.events import event_types
from apps.core.fields import JSONField
from apps.core.outbox import retry_delay

# Every app's events, read from the registry where each app declares its own (apps.core.events):
# as Event.kind's choices (labelled "Post Published", as the migrations have them), and under the
# names callers used before the apps declared them (EventKind.POST_PUBLISHED is "post.published").
EventKind = models.TextChoices(
    "EventKind", [(event.name.upper().replace(".", "_"), event.name) for event in event_types()], module=__name__
)

SUBSCRIBABLE_EVENTS: list[str] = [event.name for event in event_types() if event.subscribable]


class SignatureFormat(models.TextChoices):
    # The specification's X-Service-* headers: a hex HMAC of `{timestamp}.{body}` keyed with the
    # secret string's own bytes, as receivers written to the specification verify it.
    SERVICE = "service", "X-Service-* headers (the specification's)"
    # Standard Webhooks (standardwebhooks.com): webhook-id, webhook-timestamp, webhook-signature;
    # keyed with the base64 bytes after `whsec_`, as that standard's libraries read the secret.
    STANDARD = "standard", "Standard Webhooks"


def new_secret() -> str:
    return f"whsec_{secrets.token_hex(32)}"


def new_encrypted_secret() -> str:
    """A new endpoint's secret as it is stored (the column's default)."""
    return crypto.encrypt(new_secret())


def new_standard_secret() -> str:
    """32 random bytes as Standard Webhooks serializes a secret: `whsec_` and their base64."""
    return f"whsec_{base64.b64encode(secrets.token_bytes(32)).decode()}"


def standard_key(secret: str) -> bytes | None:
    """The HMAC key a Standard Webhooks library takes from `secret` (the base64 after `whsec_`), or
    None when it is not valid base64 or too short for the standard (at least 24 bytes). Secrets
    made by new_secret are: their 64 hex digits are base64 too (48 bytes), so an endpoint keeps
    its secret when its format is switched, as the standard allows."""
    encoded = secret.removeprefix("whsec_")
    try:
        key = base64.b64decode(encoded, validate=True)
    except ValueError:
        return None
    return key if len(key) >= 24 else None


def held_back_endpoints(prefix: str = "") -> models.Q:
    """Endpoints their breaker holds back (`WebhookEndpoint.held_back` in a query); `prefix`
    reaches them from another model, e.g. "endpoint__" from deliveries."""
    return models.Q(**{f"{prefix}consecutive_failures__gte": settings.WEBHOOK_BREAKER_THRESHOLD})


class WebhookEndpoint(models.Model):
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000, help_text="http(s) URL that receives the POSTs.")
    events = JSONField(default=list, blank=True, help_text="Subscribed event kinds; empty means all.")
    enabled = models.BooleanField(default=True)
    description = models.CharField(max_length=300, blank=True)
    # The signing secrets are stored encrypted (apps/core/crypto.py, as the publishing credentials:
    # rotate_credentials re-encrypts every *_encrypted field), so a database dump signs for no
    # receiver; `secret` and `previous_secret` below read and write them in clear.
    secret_encrypted = models.TextField(default=new_encrypted_secret, editable=False)
    signature_format = models.CharField(
        max_length=16,
        choices=SignatureFormat.choices,
        default=SignatureFormat.SERVICE,
        help_text="How deliveries are signed: the specification's X-Service-* headers, or Standard Webhooks.",
    )
    # The secret before the last rotation, which still signs deliveries until then (the overlap).
    previous_secret_encrypted = models.TextField(blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_reason = models.CharField(max_length=300, blank=True, editable=False)
    # The circuit breaker: failed attempts since the last success, and when the first of them was.
    # From WEBHOOK_BREAKER_THRESHOLD failures on, the endpoint is held back: its deliveries wait
    # and one probe goes out at `next_probe_at`, on the breaker's own back-off
    # (WEBHOOK_BREAKER_PROBE_DELAYS), indexed by the probes failed since it opened. Counted apart
    # from the failures: an attempt already in flight when it opened is no probe.
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    failing_since = models.DateTimeField(null=True, blank=True, editable=False)
    next_probe_at = models.DateTimeField(null=True, blank=True, editable=False)
    failed_probes = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return self.url

    def subscribes_to(self, kind: str) -> bool:
        return not self.events or kind in self.events

    @property
    def held_back(self) -> bool:
        return self.consecutive_failures >= settings.WEBHOOK_BREAKER_THRESHOLD

    def holds_deliveries(self, now: datetime) -> bool:
        """Whether its due deliveries must wait: disabled, or held back with no probe due yet."""
        if not self.enabled:
            return True
        return self.held_back and self.next_probe_at is not None and self.next_probe_at > now

    def record_results(self, results: list[tuple[bool, datetime]], now: datetime, *, probe: bool) -> None:
        """Count attempts' successes and failures (in the order made) into the breaker's state.

        `probe`: the attempts were the probe of the breaker, open when they were claimed. The next
        probe is due after the first of WEBHOOK_BREAKER_PROBE_DELAYS when the breaker opens, and
        after the next one each time a probe fails (the last delay repeats). Other failures while
        it is open (an attempt claimed before it opened, a manual retry) leave the probe's time
        as it is, so they neither hurry nor put off the probe."""
        was_held_back = self.held_back
        for ok, at in results:
            if ok:
                self.clear_failures()
                was_held_back = False
            else:
                self.consecutive_failures += 1
                self.failing_since = self.failing_since or at
        if not self.held_back or (was_held_back and not probe):
            return
        self.failed_probes = self.failed_probes + 1 if was_held_back else 0
        delay = retry_delay(self.failed_probes + 1, settings.WEBHOOK_BREAKER_PROBE_DELAYS, capped=True)
        self.next_probe_at = now + timedelta(seconds=delay)

    @property
    def secret(self) -> str:
        """The signing secret in clear (CredentialUnreadable when no key of FERNET_KEYS opens it)."""
        return self._clear(self.secret_encrypted)

    @secret.setter
    def secret(self, value: str) -> None:
        self.secret_encrypted = crypto.encrypt(value)

    def readable_secret(self) -> str:
        """The secret, or "" when no key of FERNET_KEYS opens it (the key that encrypted it was
        dropped too early): then it signs for no one, and rotating gives the endpoint a new one."""
        try:
            return self.secret
        except crypto.CredentialUnreadable:
            return ""

    @property
    def previous_secret(self) -> str:
        """The secret before the last rotation in clear, "" when there is none."""
        return self._clear(self.previous_secret_encrypted) if self.previous_secret_encrypted else ""

    @previous_secret.setter
    def previous_secret(self, value: str) -> None:
        self.previous_secret_encrypted = crypto.encrypt(value) if value else ""

    def _clear(self, token: str) -> str:
        # Remembered per stored value: a batch signs each of its deliveries with the same endpoint.
        opened = self.__dict__.setdefault("_opened_secrets", {})
        if token not in opened:
            opened[token] = crypto.decrypt(token)
        return opened[token]

    def previous_secret_valid(self, now: datetime) -> bool:
        expires_at = self.previous_secret_expires_at
        return bool(self.previous_secret_encrypted) and expires_at is not None and expires_at > now

    def signing(self, now: datetime) -> dict[str, str]:
        """What transport.send signs an attempt made now with (its keyword arguments)."""
        previous = self.previous_secret if self.previous_secret_valid(now) else ""
        return {"secret": self.secret, "previous_secret": previous, "signature_format": self.signature_format}

    def failing_too_long(self, now: datetime) -> bool:
        return self.failing_since is not None and now - self.failing_since >= settings.WEBHOOK_DISABLE_AFTER

    def clear_failures(self) -> None:
        self.consecutive_failures, self.failing_since, self.next_probe_at, self.failed_probes = 0, None, None, 0

    def clear_health(self) -> None:
        self.clear_failures()
        self.disabled_reason = ""


@dataclass(frozen=True)
class EventInput:
    """One event a change emits (services.events_emit): its account, its body's `data`, and the post
    it is about, if any."""

    account: Account
    data: dict
    post_id: int | None = None


class Event(models.Model):
    """One thing that happened, with the exact body every delivery of it sends."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="webhook_events")
    kind = models.CharField(max_length=40, choices=EventKind.choices)
    # The serialized JSON body, fixed at the time of the event, so every attempt sends the same bytes.
    body = models.TextField()
    post_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class Delivery(models.Model):
    """One event for one endpoint. Its id is the X-Service-Delivery header, the same on every attempt."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    # Automatic attempts made, a breaker's probe among them: manual retries do not use up the
    # schedule. The breaker keeps an outage from using up the others' (they are not attempted).
    attempts = models.PositiveSmallIntegerField(default=0, verbose_name="attempts counted")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A worker holds the delivery until then; a crashed worker's hold simply runs out.
    locked_until = models.DateTimeField(null=True, blank=True)
    # When a task for it was last handed to the broker (null: the broker has none, or lost it).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="delivery_due_idx",
                condition=models.Q(status="pending"),
            ),
            models.Index(fields=["endpoint", "status", "created_at"]),
            # An endpoint's newest deliveries, whatever their status (the endpoint list and page).
            models.Index(fields=["endpoint", "created_at"], name="delivery_endpoint_newest"),
            # The batches an endpoint has in flight (its concurrency cap), and the deliveries that
            # wait for it with no task at the broker (held back, or dropped while it was busy).
            # New deliveries are in neither, so writing them costs no entry here.
            models.Index(
                fields=["endpoint", "locked_until"],
                name="delivery_endpoint_leased",
                condition=models.Q(status="pending", locked_until__isnull=False),
            ),
            models.Index(
                fields=["endpoint", "created_at"],
                name="delivery_endpoint_waiting",
                condition=models.Q(status="pending", enqueued_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return str(self.id)

    def record_success(self, at: datetime, status_code: int) -> None:
        self.status, self.delivered_at, self.next_attempt_at = DeliveryStatus.SUCCEEDED, at, None
        self.last_status_code, self.last_error = status_code, ""

    def record_failure(self, at: datetime, retry_delays: list[int], *, automatic: bool) -> None:
        """Schedule the next automatic attempt, or give up once the schedule is used up."""
        if not automatic:
            return  # a manual retry leaves the schedule (and a failed delivery's verdict) as it was
        delay = retry_delay(self.attempts, retry_delays)
        if delay is None:
            self.status, self.next_attempt_at = DeliveryStatus.FAILED, None
        else:
            self.next_attempt_at = at + timedelta(seconds=delay)


class AttemptTrigger(models.TextChoices):
    AUTOMATIC = "automatic", "Automatic"
    MANUAL = "manual", "Manual"


class Attempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    trigger = models.CharField(max_length=16, choices=AttemptTrigger.choices, default=AttemptTrigger.AUTOMATIC)
    # Whether it used up one of the delivery's attempts (see Delivery.attempts): every automatic one.
    counted = models.BooleanField(default=True)
    started_at = models.DateTimeField()
    request_headers = JSONField(default=dict)
    request_body = models.TextField()
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_headers = JSONField(default=dict, blank=True)
    response_body = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"attempt {self.number}"

    @property
    def succeeded(self) -> bool:
        return self.response_status is not None and 200 <= self.response_status < 300
