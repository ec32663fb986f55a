"""The forms and list filter of the webhooks' Settings pages (apps/webhooks/admin.py)."""

from django import forms
from django.contrib import admin

from apps.core import addresses
from apps.webhooks.models import SUBSCRIBABLE_EVENTS, SignatureFormat, WebhookEndpoint, held_back_endpoints


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(
        label="URL",
        max_length=2000,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"class": "vURLField webhook-url"}),
        help_text="http(s) URL that receives the POSTs.",
    )
    events = forms.MultipleChoiceField(
        choices=[(e, e) for e in SUBSCRIBABLE_EVENTS],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Leave all unticked to receive every event.",
    )
    # Not required: a form posted without it (a page from before the choice existed) keeps the format.
    signature_format = forms.ChoiceField(
        choices=SignatureFormat.choices,
        required=False,
        help_text=(
            "The specification's X-Service-* headers, or Standard Webhooks (webhook-id, webhook-timestamp, "
            "webhook-signature). Switching keeps the secret: both formats verify with it."
        ),
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("account", "url", "events", "enabled", "description", "signature_format")

    def clean_signature_format(self):
        return self.cleaned_data["signature_format"] or self.instance.signature_format

    def clean_url(self):
        url = self.cleaned_data["url"]
        problem = addresses.check_url(url)
        if problem:
            raise forms.ValidationError(problem)
        return url


class ResendFailedForm(forms.Form):
    since = forms.DateTimeField(help_text="Re-send failed deliveries created at or after this time (UTC).")


class EndpointStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("enabled", "Enabled"), ("failing", "Failing"), ("held", "Held back"), ("disabled", "Disabled")]

    def queryset(self, request, queryset):
        enabled = queryset.filter(enabled=True)
        return {
            "enabled": enabled.filter(consecutive_failures=0),
            "failing": enabled.filter(consecutive_failures__gt=0).exclude(held_back_endpoints()),
            "held": enabled.filter(held_back_endpoints()),
            "disabled": queryset.filter(enabled=False),
        }.get(self.value(), queryset)
