"""The forms and list filter of the newsletter's Settings pages (apps/publishing/newsletter/admin.py)."""

from django import forms
from django.contrib import admin

from apps.channels.models import Channel
from apps.core.admin_scoping import scoped
from apps.core.errors import InvalidInput
from apps.publishing.newsletter import services
from apps.publishing.newsletter.models import PLATFORM, Newsletter, Subscriber


class NewsletterChannelFilter(admin.RelatedOnlyFieldListFilter):
    """The channel filter of these lists: the user's newsletter channels (the only ones with
    readers), found without reading the list. Its choices are scoped here, with the one rule; as a
    RelatedOnly filter, the site's scoping (AccountScopedAdmin) keeps it instead of offering every
    channel of the account."""

    def field_choices(self, field, request, model_admin):
        channels = scoped(request, Channel.objects.filter(platform=PLATFORM)).values("pk")
        ordering = self.field_admin_ordering(field, request, model_admin)
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to={"pk__in": channels})


def newsletter_channels(field) -> None:
    if field is not None:
        field.queryset = field.queryset.filter(platform=PLATFORM)


class NewsletterForm(forms.ModelForm):
    class Meta:
        model = Newsletter
        fields = ("channel", "sender_name", "reply_to")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        channel = self.fields.get("channel")
        newsletter_channels(channel)
        if channel is not None:
            # A channel has one sender: those set already are changed on their own page.
            channel.queryset = channel.queryset.filter(newsletter__isnull=True)


class SubscriberAddForm(forms.ModelForm):
    confirmed = forms.BooleanField(
        required=False,
        label="Confirmed",
        help_text="Tick only for a person who opted in elsewhere. Left unticked, they are sent the confirmation "
        "e-mail and mailed editions once they confirm.",
    )

    class Meta:
        model = Subscriber
        fields = ("channel", "email", "name")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        newsletter_channels(self.fields.get("channel"))

    def clean_email(self) -> str:
        try:
            return services.clean_email(self.cleaned_data.get("email", ""))
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None


class ImportForm(forms.Form):
    channel = forms.ModelChoiceField(queryset=Channel.objects.none(), label="Newsletter")
    file = forms.FileField(
        label="CSV file",
        help_text="UTF-8 text; the first row names the columns: email, and optionally name (others are ignored). "
        "Addresses on the list already or suppressed are skipped; a bad line is reported and the rest goes on.",
    )
    confirmed = forms.BooleanField(
        required=False,
        label="They all opted in elsewhere (confirmed)",
        help_text="Left unticked, each new person is sent the confirmation e-mail.",
    )

    def __init__(self, *args, channels, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["channel"].queryset = channels


class LiftForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=1000,
        help_text="Why this address may be mailed again (a mailbox that was full, a complaint made by mistake). "
        "It is written to the log with your address.",
    )
