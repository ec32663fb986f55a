import uuid

from django import forms
from django.contrib import admin
from django.shortcuts import render
from django.utils import timezone
from django.utils.html import format_html

from apps.core.admin import run_on_selected
from apps.webhooks import services
from apps.webhooks.models import SUBSCRIBABLE_EVENTS, Attempt, Delivery, DeliveryStatus, WebhookEndpoint


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https", help_text="http(s) URL that receives the POSTs.")
    events = forms.MultipleChoiceField(
        choices=[(e, e) for e in SUBSCRIBABLE_EVENTS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Leave all unticked to receive every event.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("account", "url", "events", "enabled", "description")

    def clean_url(self):
        from apps.webhooks.transport import check_url

        url = self.cleaned_data["url"]
        problem = check_url(url)
        if problem:
            raise forms.ValidationError(problem)
        return url


def _url(endpoint: WebhookEndpoint) -> str:
    return endpoint.url


class ResendFailedForm(forms.Form):
    since = forms.DateTimeField(help_text="Re-send failed deliveries created at or after this time (UTC).")


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ("url", "account", "enabled", "event_list", "disabled_reason", "created_at")
    list_filter = ("enabled", "account")
    search_fields = ("url", "description")
    readonly_fields = ("secret_display", "disabled_reason", "created_at", "updated_at")
    actions = ["send_test_event", "rotate_secret", "resend_failed", "enable", "disable"]

    @admin.display(description="events")
    def event_list(self, obj: WebhookEndpoint) -> str:
        return ", ".join(obj.events) if obj.events else "all"

    @admin.display(description="signing secret")
    def secret_display(self, obj: WebhookEndpoint) -> str:
        if not obj.pk:
            return "Generated when the endpoint is saved."
        return format_html("<code>{}</code>", obj.secret)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        services.endpoint_save(
            endpoint=obj,
            account=obj.account,
            url=data["url"],
            events=data["events"],
            enabled=data["enabled"],
            description=data["description"],
        )

    @admin.action(description="Send a test event (webhook.test)")
    def send_test_event(self, request, queryset):
        self._each(
            request, queryset, services.endpoint_send_test, "Test event queued for {count} endpoint(s); see Deliveries."
        )

    @admin.action(description="Rotate signing secret")
    def rotate_secret(self, request, queryset):
        self._each(
            request,
            queryset,
            services.endpoint_rotate_secret,
            "Rotated the secret of {count} endpoint(s); receivers need the new one.",
        )

    @admin.action(description="Re-send all failed deliveries since a date")
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

    @admin.action(description="Enable selected endpoints")
    def enable(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description="Disable selected endpoints")
    def disable(self, request, queryset):
        self._set_enabled(request, queryset, False)


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    can_delete = False
    fields = ("number", "trigger", "started_at", "response_status", "duration_ms", "error", "headers_and_bodies")
    readonly_fields = fields

    @admin.display(description="request / response")
    def headers_and_bodies(self, obj: Attempt) -> str:
        return format_html(
            "<details><summary>show</summary><pre>{}</pre><pre>{}</pre><pre>{}</pre><pre>{}</pre></details>",
            obj.request_headers,
            obj.request_body,
            obj.response_headers,
            obj.response_body,
        )

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("id", "event_kind", "endpoint", "status", "attempts", "last_status_code", "created_at")
    list_filter = ("status", "event__kind", "endpoint", "created_at")
    date_hierarchy = "created_at"
    search_help_text = "Search by delivery id or post id."
    search_fields = ("=id",)
    list_select_related = ("event", "endpoint")
    inlines = [AttemptInline]
    actions = ["retry_now"]
    fields = (
        "id", "event_kind", "endpoint", "status", "attempts", "next_attempt_at", "last_status_code",
        "last_error", "delivered_at", "created_at", "event_body",
    )  # fmt: skip
    readonly_fields = fields

    @admin.display(description="event", ordering="event__kind")
    def event_kind(self, obj: Delivery) -> str:
        return obj.event.kind

    @admin.display(description="body")
    def event_body(self, obj: Delivery) -> str:
        return format_html("<pre>{}</pre>", obj.event.body)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        if term.isdigit():
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
