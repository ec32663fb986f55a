import secrets
import uuid
from datetime import datetime, timedelta

from django.db import models
from django.utils import timezone


class EventKind(models.TextChoices):
    POST_UPDATED = "post.updated"
    POST_PUBLISHING_PENDING = "post.publishing_pending"
    POST_PUBLISHED = "post.published"
    POST_UNPUBLISHED = "post.unpublished"
    USER_CREATED = "user.created"
    USER_UPDATED = "user.updated"
    USER_DELETED = "user.deleted"
    USER_LOGIN = "user.login"
    USER_ROLE_CHANGED = "user.role_changed"
    WEBHOOK_TEST = "webhook.test"


# webhook.test goes only to the endpoint it was sent from; it is not a subscription.
SUBSCRIBABLE_EVENTS: list[str] = [k.value for k in EventKind if k != EventKind.WEBHOOK_TEST]


def new_secret() -> str:
    return f"whsec_{secrets.token_hex(32)}"


class WebhookEndpoint(models.Model):
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000, help_text="http(s) URL that receives the POSTs.")
    events = models.JSONField(default=list, blank=True, help_text="Subscribed event kinds; empty means all.")
    enabled = models.BooleanField(default=True)
    description = models.CharField(max_length=300, blank=True)
    secret = models.CharField(max_length=80, default=new_secret, editable=False)
    disabled_reason = models.CharField(max_length=300, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return self.url

    def subscribes_to(self, kind: str) -> bool:
        return not self.events or kind in self.events


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
    # Automatic attempts made; manual retries from the admin do not use up the schedule.
    attempts = models.PositiveSmallIntegerField(default=0)
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
        if self.attempts > len(retry_delays):
            self.status, self.next_attempt_at = DeliveryStatus.FAILED, None
        else:
            self.next_attempt_at = at + timedelta(seconds=retry_delays[self.attempts - 1])


class AttemptTrigger(models.TextChoices):
    AUTOMATIC = "automatic", "Automatic"
    MANUAL = "manual", "Manual"


class Attempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    trigger = models.CharField(max_length=16, choices=AttemptTrigger.choices, default=AttemptTrigger.AUTOMATIC)
    started_at = models.DateTimeField()
    request_headers = models.JSONField(default=dict)
    request_body = models.TextField()
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_headers = models.JSONField(default=dict, blank=True)
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
