"""Settings → Webhooks: endpoints (their signing secrets, state, recent deliveries, test events,
secret rotation, re-sending what failed) and the delivery history with its attempts (Retry now)."""

import json
import uuid
from datetime import timedelta

from django.contrib import admin
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.db.models import OuterRef, Subquery
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from apps.core.admin import ObjectButton, ObjectButtonsAdmin, run_on_selected
from apps.core.counts import count_of
from apps.core.step_up import StepUp
from apps.webhooks import services
from apps.webhooks.admin_forms import EndpointStateFilter, ResendFailedForm, WebhookEndpointForm
from apps.webhooks.models import Attempt, AttemptTrigger, Delivery, DeliveryStatus, WebhookEndpoint

RECENT_DELIVERIES = 20
SUCCESS_RATE_WINDOW = timedelta(hours=24)


def _url(endpoint: WebhookEndpoint) -> str:
    return endpoint.url


def pretty(value) -> str:
    """A body or a set of headers as people read them: JSON indented, anything else as it came."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def payload(value) -> str:
    # The text comes from outside (event data, receivers' answers): escaped, never marked safe.
    return format_html('<pre class="webhook-payload">{}</pre>', pretty(value))


def endpoint_state(endpoint: WebhookEndpoint) -> tuple[str, str]:
    """The endpoint's state, and why: what an operator reads first about a misbehaving receiver."""
    if not endpoint.enabled:
        return "Disabled", endpoint.disabled_reason
    if not endpoint.consecutive_failures:
        return "Enabled", ""
    failing = (
        f"failing since {endpoint.failing_since:%Y-%m-%d %H:%M} UTC "
        f"({endpoint.consecutive_failures} failed attempts in a row)"
    )
    if endpoint.held_back:
        probe = f"{endpoint.next_probe_at:%Y-%m-%d %H:%M:%S} UTC" if endpoint.next_probe_at else "now"
        return "Held back", f"{failing}; its deliveries wait, next probe at {probe}"
    return "Failing", failing


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ObjectButtonsAdmin):
    form = WebhookEndpointForm
    list_display = ("url", "account", "state", "event_list", "last_result", "success_rate", "pending", "created_at")
    list_filter = (EndpointStateFilter, "account")
    search_fields = ("url", "description")
    readonly_fields = ("secret_display", "state", "created_at", "updated_at", "recent_deliveries")
    actions = ["send_test_event", "rotate_secret", "resend_failed", "enable", "disable"]
    # The page of an endpoint shows its signing secret; an SSO session confirms its password first.
    step_up = StepUp.ALL_BUT_THE_LIST
    object_buttons = (
        ObjectButton(
            "send-test",
            "Send test event",
            lambda endpoint: services.endpoint_send_test(endpoint=endpoint),
            "Test event queued; it is listed under Recent deliveries.",
        ),
        ObjectButton(
            "rotate-secret",
            "Rotate secret",
            lambda endpoint: services.endpoint_rotate_secret(endpoint=endpoint),
            "Signing secret rotated; the previous one stays valid beside it until the time shown.",
        ),
        ObjectButton(
            "expire-previous-secret",
            "Expire previous secret",
            lambda endpoint: services.endpoint_expire_previous_secret(endpoint=endpoint),
            "The previous secret has expired: only the current one signs deliveries.",
            shown=lambda endpoint: endpoint.previous_secret_valid(timezone.now()),
        ),
    )

    class Media:
        css = {"all": ["webhooks/admin.css"]}
        js = ["webhooks/copy.js"]

    def get_queryset(self, request):
        newest = Delivery.objects.filter(endpoint=OuterRef("pk")).order_by("-created_at")
        recent = {"created_at__gte": timezone.now() - SUCCESS_RATE_WINDOW}
        return (
            super()
            .get_queryset(request)
            .annotate(
                last_status=Subquery(newest.values("status")[:1]),
                last_code=Subquery(newest.values("last_status_code")[:1]),
                last_at=Subquery(newest.values("created_at")[:1]),
                succeeded_recently=count_of(Delivery, "endpoint", status=DeliveryStatus.SUCCEEDED, **recent),
                failed_recently=count_of(Delivery, "endpoint", status=DeliveryStatus.FAILED, **recent),
                pending_count=count_of(Delivery, "endpoint", status=DeliveryStatus.PENDING),
            )
        )

    def get_fieldsets(self, request, obj=None):
        fields = [name for name in self.get_fields(request, obj) if name != "recent_deliveries"]
        fieldsets = [(None, {"fields": fields})]
        if obj is not None:
            fieldsets.append(("Recent deliveries", {"fields": ["recent_deliveries"]}))
        return fieldsets

    @admin.display(description="state", ordering="enabled")
    def state(self, obj: WebhookEndpoint) -> str:
        label, why = endpoint_state(obj)
        return format_html('{}<div class="help">{}</div>', label, why) if why else label

    @admin.display(description="last delivery", ordering="last_at")
    def last_result(self, obj: WebhookEndpoint) -> str:
        if obj.last_at is None:
            return "—"
        return format_html(
            '{} · {} · <time datetime="{}" title="{}">{}</time>',
            DeliveryStatus(obj.last_status).label,
            f"HTTP {obj.last_code}" if obj.last_code is not None else "no response",
            obj.last_at.isoformat(),
            f"{obj.last_at:%Y-%m-%d %H:%M:%S} UTC",
            naturaltime(obj.last_at),
        )

    @admin.display(description="success, 24 h")
    def success_rate(self, obj: WebhookEndpoint) -> str:
        finished = obj.succeeded_recently + obj.failed_recently
        if not finished:
            return "—"
        return f"{obj.succeeded_recently / finished:.0%} ({obj.succeeded_recently} of {finished})"

    @admin.display(description="pending", ordering="pending_count")
    def pending(self, obj: WebhookEndpoint) -> int:
        return obj.pending_count

    @admin.display(description="events")
    def event_list(self, obj: WebhookEndpoint) -> str:
        return ", ".join(obj.events) if obj.events else "all"

    @admin.display(description="signing secret")
    def secret_display(self, obj: WebhookEndpoint) -> str:
        if not obj.pk:
            return "Generated when the endpoint is saved."
        clear = obj.readable_secret()
        if not clear:
            return (
                "The stored secret cannot be read with the configured Fernet keys (the key that encrypted it "
                "was removed), so deliveries cannot be signed: rotate the secret and give receivers the new one."
            )
        secret = format_html(
            '<code id="webhook-secret">{}</code> '
            '<button type="button" class="button" data-copy-target="webhook-secret">Copy</button>',
            clear,
        )
        if not obj.previous_secret_valid(timezone.now()):
            return secret
        # The previous secret itself is not shown: receivers have it, and no one needs it again.
        return format_html(
            '{}<div class="help">The previous secret still signs deliveries beside this one until {} UTC '
            "so receivers can move to this one; <b>Expire previous secret</b> ends that now.</div>",
            secret,
            f"{obj.previous_secret_expires_at:%Y-%m-%d %H:%M:%S}",
        )

    @admin.display(description="latest")
    def recent_deliveries(self, obj: WebhookEndpoint) -> str:
        deliveries = obj.deliveries.select_related("event").order_by("-created_at")[:RECENT_DELIVERIES]
        all_url = reverse("admin:webhooks_delivery_changelist", current_app=self.admin_site.name)
        return render_to_string(
            "admin/webhooks/recent_deliveries.html",
            {
                "deliveries": [(d, self.object_url("webhooks_delivery_change", d)) for d in deliveries],
                "all_url": f"{all_url}?endpoint__id__exact={obj.pk}",
            },
        )

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        services.endpoint_save(
            endpoint=obj,
            account=obj.account,
            url=data["url"],
            events=data["events"],
            enabled=data["enabled"],
            description=data["description"],
            signature_format=data["signature_format"],
        )

    @admin.action(description="Send a test event (webhook.test)", permissions=["change"])
    def send_test_event(self, request, queryset):
        self._each(
            request, queryset, services.endpoint_send_test, "Test event queued for {count} endpoint(s); see Deliveries."
        )

    @admin.action(description="Rotate signing secret", permissions=["change"])
    def rotate_secret(self, request, queryset):
        self._each(
            request,
            queryset,
            services.endpoint_rotate_secret,
            "Rotated the secret of {count} endpoint(s); each previous one stays valid beside it for the overlap.",
        )

    @admin.action(description="Re-send all failed deliveries since a date", permissions=["change"])
    def resend_failed(self, request, queryset):
        if "apply" in request.POST:
            form = ResendFailedForm(request.POST)
            if form.is_valid():
                count = sum(
                    services.endpoint_resend_failed(endpoint=e, since=form.cleaned_data["since"]) for e in queryset
                )
                self.message_user(request, f"Re-sending {count} failed deliveries.")
                return None
        else:
            form = ResendFailedForm(initial={"since": timezone.now() - timezone.timedelta(days=1)})
        return render(
            request,
            "admin/webhooks/resend_failed.html",
            {**self.admin_site.each_context(request), "form": form, "endpoints": queryset, "opts": self.model._meta},
        )

    def _each(self, request, queryset, service, done: str | None = None) -> None:
        """Run `service(endpoint=...)` on each selected endpoint (see run_on_selected)."""
        run_on_selected(self, request, queryset, lambda endpoint: service(endpoint=endpoint), done=done, label=_url)

    def _set_enabled(self, request, queryset, enabled: bool):
        def save(*, endpoint: WebhookEndpoint) -> None:
            services.endpoint_save(
                endpoint=endpoint,
                account=endpoint.account,
                url=endpoint.url,
                events=endpoint.events,
                enabled=enabled,
                description=endpoint.description,
            )

        self._each(request, queryset, save)

    @admin.action(description="Enable selected endpoints", permissions=["change"])
    def enable(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description="Disable selected endpoints", permissions=["change"])
    def disable(self, request, queryset):
        self._set_enabled(request, queryset, False)


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    can_delete = False
    fields = ("number", "trigger", "result", "counts", "started_at", "duration_ms", "error", "headers_and_bodies")
    readonly_fields = fields

    @admin.display(description="result")
    def result(self, obj: Attempt) -> str:
        answer = f"HTTP {obj.response_status}" if obj.response_status is not None else "no response"
        return f"{'Succeeded' if obj.succeeded else 'Failed'} · {answer}"

    # In words, not Django's ✓/✗ icons: a red cross on a manual retry that succeeded read as a failure.
    @admin.display(description="counted")
    def counts(self, obj: Attempt) -> str:
        if obj.counted:
            return "Yes"
        if obj.trigger == AttemptTrigger.MANUAL:
            return "No: a manual retry"
        return "No: the endpoint was held back"

    @admin.display(description="request / response")
    def headers_and_bodies(self, obj: Attempt) -> str:
        return render_to_string(
            "admin/webhooks/attempt_exchange.html",
            {
                "parts": [
                    ("Request headers", payload(obj.request_headers)),
                    ("Request body", payload(obj.request_body)),
                    ("Response headers", payload(obj.response_headers)),
                    ("Response body", payload(obj.response_body) if obj.response_body else "(empty)"),
                ]
            },
        )

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(ObjectButtonsAdmin):
    # Narrow enough for a 1400 px window beside the menu and the filters: the id on one line, the
    # endpoint under its event, the status with its HTTP code, the time as numbers.
    list_display = ("delivery_id", "event_and_endpoint", "last_status", "attempts", "created")
    list_filter = ("status", "event__kind", "endpoint", "created_at")
    date_hierarchy = "created_at"
    search_help_text = "Search by delivery id or post id."
    search_fields = ("=id",)
    list_select_related = ("event", "endpoint")
    inlines = [AttemptInline]
    actions = ["retry_now"]
    # A delivery's page shows its event's body, and subscriber.* events name a person a channel mails by address.
    step_up = StepUp.ALL_BUT_THE_LIST
    fields = (
        "id",
        "event_kind",
        "endpoint",
        "status",
        "attempts",
        "next_attempt_at",
        "last_status_code",
        "last_error",
        "delivered_at",
        "created_at",
        "event_body",
    )
    readonly_fields = fields
    # "view", as the retry_now action: sending a delivery again changes nothing of it but its history.
    object_buttons = (
        ObjectButton(
            "retry",
            "Retry now",
            lambda delivery: services.delivery_retry_now(delivery=delivery),
            "Retrying now; the attempt is listed below once it is made.",
            permission="view",
        ),
    )

    class Media:
        css = {"all": ["webhooks/admin.css"]}

    @admin.display(description="event", ordering="event__kind")
    def event_kind(self, obj: Delivery) -> str:
        return obj.event.kind

    @admin.display(description="id", ordering="id")
    def delivery_id(self, obj: Delivery) -> str:
        return format_html('<code class="webhook-delivery-id">{}</code>', obj.pk)

    @admin.display(description="event / endpoint", ordering="event__kind")
    def event_and_endpoint(self, obj: Delivery) -> str:
        return format_html('{}<div class="webhook-endpoint-url">{}</div>', obj.event.kind, obj.endpoint.url)

    @admin.display(description="last status", ordering="status")
    def last_status(self, obj: Delivery) -> str:
        code = obj.last_status_code
        answer = f"HTTP {code}" if code is not None else ("no response" if obj.last_error else "not sent yet")
        return format_html('{}<div class="help">{}</div>', obj.get_status_display(), answer)

    @admin.display(description="created at", ordering="created_at")
    def created(self, obj: Delivery) -> str:
        at = obj.created_at
        return format_html('<time datetime="{}">{}<br>{}</time>', at.isoformat(), f"{at:%Y-%m-%d}", f"{at:%H:%M:%S}")

    @admin.display(description="body")
    def event_body(self, obj: Delivery) -> str:
        return payload(obj.event.body)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        # ASCII digits only: "²" is a digit to str.isdigit() that int() refuses (a 500).
        if term.isascii() and term.isdigit():
            return queryset.filter(event__post_id=int(term)), False
        try:
            return queryset.filter(pk=uuid.UUID(term)), False
        except ValueError:
            return queryset.none(), False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Retry selected deliveries now", permissions=["view"])
    def retry_now(self, request, queryset):
        for delivery in queryset:
            services.delivery_retry_now(delivery=delivery)
        failed = queryset.filter(status=DeliveryStatus.FAILED).count()
        self.message_user(request, f"Retrying {queryset.count()} deliveries ({failed} had failed).")
