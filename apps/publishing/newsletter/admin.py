"""Settings → Publishing: newsletter. A newsletter channel's sender (Newsletter settings), its
readers (Subscribers: add, import, export, erase), the account's suppression list (Lift, with a
reason) and each edition as it was mailed (its counts, the failed and uncertain addresses, the
e-mail as sent, Send test, Send to uncertain). A post not mailed yet is previewed, and tested,
from its own page ("as it will be posted").

Who sees what (apps/users/models.ADMIN_AREA): subscribers, suppressions and editions name readers,
whose addresses are personal data, so they are the account's admins' alone, as the channels'
credentials are. The preview and "Send test" of a post are for whoever may change posts (editors
too): they show no reader, and mail only the signed-in member's own address.
"""

import csv
import io
import logging
from datetime import UTC
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from apps.channels.models import Channel, Platform
from apps.core.admin import (
    DomainErrorsAsMessages,
    SetupLink,
    add_input_error,
    page_url,
    register_channel_setup,
    register_post_preview,
    scoped,
)
from apps.core.errors import DomainError, InvalidInput
from apps.core.step_up import StepUp
from apps.publishing.destinations import Document, subject
from apps.publishing.newsletter import message, sending, services
from apps.publishing.newsletter.csv_import import OPEN_OPTIONS, import_csv
from apps.publishing.newsletter.models import (
    Delivery,
    DeliveryState,
    Edition,
    Newsletter,
    Subscriber,
    SubscriberStatus,
    Suppression,
    email_hash,
)

logger = logging.getLogger(__name__)

# An edition's page lists at most this many failed (and uncertain) addresses, with the count of the rest.
ADDRESSES_SHOWN = 100
# The import's page lists at most this many bad lines, with the count of the rest.
INVALID_SHOWN = 100
DELETE_CHUNK = 500
EXPORT_COLUMNS = ("email", "name", "status", "created_at", "confirmed_at", "channel")
# A spreadsheet takes a cell that starts with one of these for a formula (CSV injection): the
# export starts such a cell with a quote, which spreadsheets show as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# The e-mail as sent, in the Settings area: no script, form or navigation of the page (sandbox="")
# and the admin's own Content-Security-Policy, which a srcdoc frame inherits.
PREVIEW_FRAME = '<iframe class="newsletter-preview" sandbox="" title="{}" srcdoc="{}" style="{}"></iframe>'
PREVIEW_STYLE = "width:760px;max-width:100%;height:640px;border:1px solid #ccc;background:#fff"


def _admin_url(model_admin, name: str, *args) -> str:
    return reverse(f"admin:{name}", args=args, current_app=model_admin.admin_site.name)


def _utc(value) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def csv_cell(value) -> str:
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_START) else text


def preview_frame(shown: message.Rendered) -> str:
    """The HTML part of message.preview()'s parts, in the page."""
    return format_html(PREVIEW_FRAME, f"The e-mail “{shown.subject}”", shown.html, PREVIEW_STYLE)


class NewsletterChannelFilter(admin.RelatedOnlyFieldListFilter):
    """The channel filter of these lists: the user's newsletter channels (the only ones with
    readers), found without reading the list. Its choices are scoped here, with the one rule; as a
    RelatedOnly filter, the site's scoping (AccountScopedAdmin) keeps it instead of offering every
    channel of the account."""

    def field_choices(self, field, request, model_admin):
        channels = scoped(request, Channel.objects.filter(platform=Platform.NEWSLETTER)).values("pk")
        ordering = self.field_admin_ordering(field, request, model_admin)
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to={"pk__in": channels})


def _newsletter_channels(field) -> None:
    if field is not None:
        field.queryset = field.queryset.filter(platform=Platform.NEWSLETTER)


# --- Newsletter settings -------------------------------------------------------------------------


class NewsletterForm(forms.ModelForm):
    class Meta:
        model = Newsletter
        fields = ("channel", "sender_name", "reply_to")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        channel = self.fields.get("channel")
        _newsletter_channels(channel)
        if channel is not None:
            # A channel has one sender: those set already are changed on their own page.
            channel.queryset = channel.queryset.filter(newsletter__isnull=True)


@admin.register(Newsletter)
class NewsletterAdmin(DomainErrorsAsMessages, admin.ModelAdmin):
    form = NewsletterForm
    list_display = ("channel", "sender", "reply_to", "updated_at")
    list_select_related = ("channel",)
    search_fields = ("channel__title", "sender_name", "reply_to")
    readonly_fields = ("readers", "pages", "updated_at")
    fields = ("channel", "sender_name", "reply_to", "readers", "pages", "updated_at")

    def has_delete_permission(self, request, obj=None):
        return False  # the sender of a newsletter channel is changed, not removed

    @admin.display(description="From")
    def sender(self, obj: Newsletter) -> str:
        return services.sender_address(obj)

    @admin.display(description="subscribers")
    def readers(self, obj: Newsletter) -> str:
        if obj.pk is None:
            return "—"
        counts = dict.fromkeys(SubscriberStatus.values, 0)
        rows = Subscriber.objects.filter(channel_id=obj.channel_id).order_by().values("status")
        counts |= dict(rows.annotate(n=Count("pk")).values_list("status", "n"))
        url = _admin_url(self, "publishing_newsletter_subscriber_changelist")
        return format_html(
            '<a href="{}?channel__id__exact={}">{} confirmed, {} yet to confirm, {} unsubscribed</a> · '
            '<a href="{}?channel={}">Import CSV</a>',
            url, obj.channel_id, counts[SubscriberStatus.CONFIRMED], counts[SubscriberStatus.UNCONFIRMED],
            counts[SubscriberStatus.UNSUBSCRIBED], _admin_url(self, "publishing_newsletter_subscriber_import"),
            obj.channel_id,
        )  # fmt: skip

    @admin.display(description="pages")
    def pages(self, obj: Newsletter) -> str:
        if obj.pk is None:
            return "—"
        editions = _admin_url(self, "publishing_newsletter_edition_changelist")
        public = obj.channel.public_url()
        return format_html(
            '<a href="{}?channel__id__exact={}">Editions</a>{}',
            editions, obj.channel_id,
            format_html(' · <a href="{}" target="_blank" rel="noopener">Public page (subscribe form and archive)</a>',
                        public) if public else "",
        )  # fmt: skip

    def get_readonly_fields(self, request, obj=None):
        # The settings stay with their channel.
        return (*self.readonly_fields, "channel") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        saved = services.newsletter_settings_save(
            channel=obj.channel, sender_name=data.get("sender_name", ""), reply_to=data.get("reply_to", "")
        )
        obj.pk, obj._state.adding = saved.pk, False


def describe(channel_id: int) -> SetupLink:
    confirmed = Subscriber.objects.filter(channel_id=channel_id, status=SubscriberStatus.CONFIRMED).count()
    readers = f"Mailed to its {confirmed:,} confirmed subscriber(s)"
    newsletter = Newsletter.objects.filter(channel_id=channel_id).only("pk").first()
    if newsletter is None:
        return SetupLink(
            f"{readers}, from the channel's title:", "publishing_newsletter_newsletter_add",
            "set the sender name and reply-to", query=f"channel={channel_id}",
        )  # fmt: skip
    return SetupLink(
        f"{readers}:", "publishing_newsletter_newsletter_change", "sender, reply-to and subscribers", (newsletter.pk,)
    )


register_channel_setup(Platform.NEWSLETTER, describe)


# --- Subscribers ---------------------------------------------------------------------------------


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
        _newsletter_channels(self.fields.get("channel"))

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


class Echo:
    """csv.writer's file: each row written is handed back, for a streamed answer."""

    def write(self, value: str) -> str:
        return value


@admin.register(Subscriber)
class SubscriberAdmin(DomainErrorsAsMessages, admin.ModelAdmin):
    list_display = ("email", "name", "status", "channel", "created_at", "confirmed_at")
    list_filter = ("status", ("channel", NewsletterChannelFilter))
    list_select_related = ("channel",)
    search_fields = ("email", "name")
    search_help_text = "Part of an e-mail address or a name."
    readonly_fields = (
        "email", "name", "status", "channel", "created_at", "confirmed_at", "unsubscribed_at", "suppressed",
    )  # fmt: skip
    # The whole list of readers leaves by its export: an SSO session confirms its password first.
    step_up = StepUp.ALL_BUT_THE_LIST

    def has_change_permission(self, request, obj=None):
        return False  # people are added, imported and erased; their status is theirs to change

    def get_fields(self, request, obj=None):
        return ("channel", "email", "name", "confirmed") if obj is None else self.readonly_fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = SubscriberAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    @admin.display(description="suppressed")
    def suppressed(self, obj: Subscriber) -> str:
        reason = services.suppression_of(obj.channel, obj.email)
        if reason is None:
            return "No"
        url = f"{_admin_url(self, 'publishing_newsletter_suppression_changelist')}?{urlencode({'q': obj.email})}"
        return format_html('<a href="{}">{}</a>', url, Suppression(reason=reason).get_reason_display())

    def save_model(self, request, obj, form, change):
        saved = services.subscriber_create(
            channel=obj.channel, email=obj.email, name=obj.name, confirmed=form.cleaned_data.get("confirmed", False)
        )
        obj.pk, obj.email, obj._state.adding = saved.pk, saved.email, False

    def delete_model(self, request, obj):
        services.subscriber_delete(subscriber=obj)

    def delete_queryset(self, request, queryset):
        # By id, a chunk at a time: a cursor is not kept open on the rows being deleted.
        ids = list(queryset.values_list("pk", flat=True))
        for start in range(0, len(ids), DELETE_CHUNK):
            for subscriber in Subscriber.objects.select_related("channel").filter(
                pk__in=ids[start : start + DELETE_CHUNK]
            ):
                services.subscriber_delete(subscriber=subscriber)

    def get_urls(self):
        view = self.admin_site.admin_view
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path("import/", view(self.import_view), name=self._url_name("import")),
            path("export/", view(self.export_view), name=self._url_name("export")),
            *super().get_urls(),
        ]

    def _url_name(self, page: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{page}"

    def changelist_view(self, request, extra_context=None):
        # The export takes the list's own filters and search, as the list shows them.
        query = request.GET.copy()
        query.pop("p", None)
        export = f"{page_url(self, 'export')}?{query.urlencode()}" if query else page_url(self, "export")
        context = {"export_url": export, "import_url": page_url(self, "import"), **(extra_context or {})}
        return super().changelist_view(request, context)

    def import_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied
        posted = request.method == "POST"
        channel = request.GET.get("channel", "")
        form = ImportForm(
            request.POST if posted else None,
            request.FILES if posted else None,
            channels=scoped(request, Channel.objects.filter(platform=Platform.NEWSLETTER)),
            initial={"channel": channel} if channel.isdigit() else None,
        )
        result = self._import(request, form) if form.is_valid() else None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import subscribers",
            "form": form,
            "result": result,
            "invalid": result.invalid[:INVALID_SHOWN] if result else [],
            "invalid_more": max(len(result.invalid) - INVALID_SHOWN, 0) if result else 0,
        }
        return TemplateResponse(request, "admin/publishing_newsletter/subscriber_import.html", context)

    def _import(self, request, form) -> services.ImportResult | None:
        """The uploaded file's people into the list, streamed from the file (kept on disk when large)."""
        data = form.cleaned_data
        try:
            # The form offers the user's newsletter channels only.
            result = import_csv(
                channel=data["channel"],
                file=io.TextIOWrapper(data["file"].file, **OPEN_OPTIONS),
                confirmed=data["confirmed"],
            )
        except InvalidInput as exc:  # no header row naming `email`: the file, not a line of it, is wrong
            form.add_error("file", exc.message)
            return None
        self.message_user(
            request,
            f"{data['channel'].title}: {result.created:,} added, {result.skipped:,} skipped, "
            f"{len(result.invalid):,} invalid line(s).",
            messages.WARNING if result.invalid else messages.SUCCESS,
        )
        return result

    def export_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        query = request.GET.copy()
        query.pop("p", None)  # the whole list, not the page the list showed
        request.GET = query
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseRedirect(f"{page_url(self, 'changelist')}?e=1")
        rows = changelist.queryset.values_list(
            "email", "name", "status", "created_at", "confirmed_at", "channel__title"
        ).iterator(chunk_size=2000)
        response = StreamingHttpResponse(self._csv_lines(rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="subscribers-{timezone.now():%Y-%m-%d}.csv"'
        response["Cache-Control"] = "no-store"  # personal data: no copy kept on the way
        return response

    @staticmethod
    def _csv_lines(rows):
        writer = csv.writer(Echo())
        yield writer.writerow(EXPORT_COLUMNS)
        for email, name, status, created_at, confirmed_at, channel in rows:
            yield writer.writerow(
                [csv_cell(email), csv_cell(name), status, _utc(created_at), _utc(confirmed_at), csv_cell(channel)]
            )


# --- Suppression list ----------------------------------------------------------------------------


class LiftForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=1000,
        help_text="Why this address may be mailed again (a mailbox that was full, a complaint made by mistake). "
        "It is written to the log with your address.",
    )


@admin.register(Suppression)
class SuppressionAdmin(DomainErrorsAsMessages, admin.ModelAdmin):
    list_display = ("reason", "applies_to", "created_at", "detail_shown")
    list_filter = ("reason", ("channel", NewsletterChannelFilter))
    list_select_related = ("channel",)
    # The list keeps no address, only its hash: the search box hashes the address typed in.
    search_fields = ("email_hash",)
    search_help_text = "A whole e-mail address: the list keeps only a hash of it, so parts of one find nothing."
    fields = readonly_fields = ("reason", "applies_to", "created_at", "detail", "email_hash")
    # Lifting one lets the account mail an address again: an SSO session confirms its password first.
    step_up = StepUp.ALL_BUT_THE_LIST

    def has_add_permission(self, request):
        return False  # an address is suppressed by its person, its mail server or its provider

    def has_change_permission(self, request, obj=None):
        return False

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # lifted one at a time, each with its reason
        return actions

    @admin.display(description="applies to", ordering="channel__title")
    def applies_to(self, obj: Suppression) -> str:
        return obj.channel.title if obj.channel_id else "All newsletters of the account"

    @admin.display(description="detail")
    def detail_shown(self, obj: Suppression) -> str:
        return Truncator(obj.detail).chars(120) or "—"

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(email_hash=email_hash(term)) if term else queryset), False

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["show_delete"] = False  # "Lift…" instead, which asks for the reason
        if obj is not None and self.has_delete_permission(request, obj):
            context["lift_url"] = page_url(self, "delete", quote(obj.pk))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def delete_view(self, request, object_id, extra_context=None):
        """Django's delete page, as "Lift": the address may be mailed again, for a reason that is
        logged with who gave it (the account's admins, and the operator on their behalf)."""
        # The order of Django's own: no permission, no word on whether the id exists.
        if not self.has_delete_permission(request):
            raise PermissionDenied
        suppression = self.get_object(request, unquote(object_id))
        if suppression is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        form = LiftForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            try:
                services.suppression_lift(
                    suppression=suppression, reason=form.cleaned_data["reason"], by=request.user.email
                )
            except InvalidInput as exc:
                add_input_error(form, exc)
            else:
                self.message_user(
                    request,
                    f"Lifted: the address may be mailed again ({suppression.get_reason_display().lower()}). It is "
                    "mailed once it is a confirmed subscriber.",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(page_url(self, "changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Lift a suppression",
            "suppression": suppression,
            "applies_to": self.applies_to(suppression),
            "form": form,
        }
        return TemplateResponse(request, "admin/publishing_newsletter/suppression_lift.html", context)


# --- Editions ------------------------------------------------------------------------------------


@admin.register(Edition)
class EditionAdmin(admin.ModelAdmin):
    list_display = ("subject", "channel", "started_at", "finished_at", "sent_of_total", "failed", "uncertain")
    list_filter = (("channel", NewsletterChannelFilter),)
    list_select_related = ("channel",)
    search_fields = ("subject",)
    readonly_fields = (
        "post_link", "channel", "subject", "archive", "started_at", "finished_at", "counts", "failed_addresses",
        "uncertain_addresses", "preview", "text_part",
    )  # fmt: skip
    fieldsets = (
        (None, {"fields": ("post_link", "channel", "subject", "archive", "started_at", "finished_at")}),
        ("Recipients", {"fields": ("counts", "failed_addresses", "uncertain_addresses")}),
        ("The e-mail as sent", {"fields": ("preview", "text_part")}),
    )

    def has_add_permission(self, request):
        return False  # an edition is made by its post's send

    def has_delete_permission(self, request, obj=None):
        return False  # its records say who was mailed: nobody is mailed twice

    def has_change_permission(self, request, obj=None):
        return False  # as the sender recorded it; the page's buttons decide what is sent

    def _may_decide(self, request, obj=None) -> bool:
        """Send to uncertain: an edition's "change" permission (the account's admins)."""
        return super().has_change_permission(request, obj)

    def view_on_site(self, obj: Edition) -> str | None:
        return obj.archive_url or None

    @admin.display(description="sent")
    def sent_of_total(self, obj: Edition) -> str:
        return f"{obj.sent:,} of {obj.total:,}"

    @admin.display(description="post")
    def post_link(self, obj: Edition) -> str:
        url = _admin_url(self, "posts_post_change", obj.post_id)
        return format_html('<a href="{}">{}</a> (post {})', url, obj.subject, obj.post_id)

    @admin.display(description="archive page")
    def archive(self, obj: Edition) -> str:
        if not obj.archive_url:
            return "—"
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', obj.archive_url, obj.archive_url)

    @admin.display(description="counts")
    def counts(self, obj: Edition) -> str:
        return format_html(
            "<table><tr>{}</tr><tr>{}</tr></table>",
            format_html_join("", "<th>{}</th>", ((name,) for name in obj.recipients())),
            format_html_join("", "<td>{}</td>", ((f"{count:,}",) for count in obj.recipients().values())),
        )

    def _addresses(self, obj: Edition, state: str, count: int) -> str:
        shown = list(
            Delivery.objects.filter(edition=obj, state=state)
            .select_related("subscriber")
            .only("error", "settled_at", "subscriber__email")
            .order_by("id")[:ADDRESSES_SHOWN]
        )
        if not shown:
            return "None"
        rows = (
            (
                delivery.subscriber.email if delivery.subscriber else "erased",
                f" — {Truncator(delivery.error).chars(200)}" if delivery.error else "",
            )
            for delivery in shown
        )
        more = count - len(shown)
        return format_html(
            "<ul>{}</ul>{}",
            format_html_join("", "<li>{}{}</li>", rows),
            format_html("<p>… and {} more.</p>", f"{more:,}") if more > 0 else "",
        )

    @admin.display(description="failed (refused for good; the address is suppressed)")
    def failed_addresses(self, obj: Edition) -> str:
        return self._addresses(obj, DeliveryState.FAILED, obj.failed)

    @admin.display(description="uncertain (the server may or may not have taken the message)")
    def uncertain_addresses(self, obj: Edition) -> str:
        return self._addresses(obj, DeliveryState.UNCERTAIN, obj.uncertain)

    @staticmethod
    def _shown(obj: Edition) -> message.Rendered:
        if not hasattr(obj, "_shown"):
            obj._shown = message.preview(edition=obj)
        return obj._shown

    @admin.display(description="HTML part")
    def preview(self, obj: Edition) -> str:
        return preview_frame(self._shown(obj))

    @admin.display(description="text part")
    def text_part(self, obj: Edition) -> str:
        return format_html('<pre style="white-space:pre-wrap">{}</pre>', self._shown(obj).text)

    def get_urls(self):
        view = self.admin_site.admin_view
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path("post/<int:post_id>/preview/", view(self.post_preview_view), name=self._url_name("post_preview")),
            path("post/<int:post_id>/send-test/", view(self.post_send_test_view), name=self._url_name("post_test")),
            path("<path:object_id>/send-test/", view(self.send_test_view), name=self._url_name("send_test")),
            path("<path:object_id>/send-uncertain/", view(self.send_uncertain_view), name=self._url_name("uncertain")),
            *super().get_urls(),
        ]

    def _url_name(self, page: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{page}"

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["send_test_url"] = page_url(self, "send_test", quote(obj.pk))
            if obj.uncertain and self._may_decide(request, obj):
                context["send_uncertain_url"] = page_url(self, "uncertain", quote(obj.pk))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _edition(self, request, object_id, may) -> Edition:
        # The order of Django's change view: no permission, no word on whether the id exists.
        if not may(request):
            raise PermissionDenied
        edition = self.get_object(request, unquote(object_id))
        if edition is None:
            raise Http404("No such edition.")
        return edition

    def _send_test(self, request, *, edition, channel: Channel) -> None:
        """One message marked [Test] to the signed-in member's own address only (no address is
        typed in: the button cannot mail anyone else); nothing is recorded as sent. `edition`: an
        Edition, or the Rendered parts of a post not sent yet."""
        newsletter = services.newsletter_of(channel)
        try:
            message.send_test(edition_or_rendered=edition, newsletter=newsletter, to_email=request.user.email)
        except Exception as exc:  # smtplib's, sockets' and providers' errors vary by backend
            logger.warning("newsletter test not sent channel=%s: %r", channel.pk, exc)
            self.message_user(request, f"The test was not sent: the mail server said {exc}", messages.ERROR)
        else:
            self.message_user(request, f"A test was sent to {request.user.email} (only).", messages.SUCCESS)

    def send_test_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        edition = self._edition(request, object_id, self.has_view_permission)
        self._send_test(request, edition=edition, channel=edition.channel)
        return HttpResponseRedirect(page_url(self, "change", quote(edition.pk)))

    def send_uncertain_view(self, request, object_id):
        edition = self._edition(request, object_id, self._may_decide)
        if request.method == "POST":
            try:
                count = sending.edition_send_uncertain(edition=edition)
            except DomainError as exc:
                self.message_user(request, f"Nothing was sent: {exc.message}", messages.ERROR)
            else:
                self.message_user(
                    request, f"{count:,} uncertain recipient(s) are being sent the edition again.", messages.SUCCESS
                )
            return HttpResponseRedirect(page_url(self, "change", quote(edition.pk)))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Send to uncertain recipients",
            "edition": edition,
            "change_url": page_url(self, "change", quote(edition.pk)),
        }
        return TemplateResponse(request, "admin/publishing_newsletter/edition_send_uncertain.html", context)

    # --- A post not mailed yet (its own page links here) ---

    def _post(self, request, post_id: int) -> tuple[Channel, Document]:
        """The newsletter post of the user's account, as it would be mailed now, for whoever may
        change posts."""
        if not request.user.has_perm("posts.change_post"):
            raise PermissionDenied
        channel = scoped(request, Channel.objects.filter(platform=Platform.NEWSLETTER, posts__pk=post_id)).first()
        document = subject().document(post_id=post_id, action="publish", published_at=None) if channel else None
        if document is None:
            raise Http404("No such newsletter post.")
        return channel, document

    def post_preview_view(self, request, post_id: int):
        channel, document = self._post(request, post_id)
        shown = message.preview(channel=channel, document=document)
        newsletter = Newsletter.objects.filter(channel=channel).first() or Newsletter(channel=channel)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"E-mail preview: {shown.subject}",
            "shown": shown,
            "sender": services.sender_address(newsletter),
            "reply_to": newsletter.reply_to,
            "frame": preview_frame(shown),
            "post_url": _admin_url(self, "posts_post_change", post_id),
            "send_test_url": page_url(self, "post_test", post_id),
            "edition": Edition.objects.filter(post_id=post_id).first(),
        }
        return TemplateResponse(request, "admin/publishing_newsletter/post_preview.html", context)

    def post_send_test_view(self, request, post_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        channel, document = self._post(request, post_id)
        self._send_test(request, edition=message.render(channel=channel, document=document), channel=channel)
        return HttpResponseRedirect(page_url(self, "post_preview", post_id))


def post_preview(document: Document) -> str:
    """A newsletter post's page: the e-mail as it would be mailed now, and where to send oneself a test."""
    # The post's page found the post in the user's account: its channel is found by it.
    channel = Channel.objects.filter(posts__pk=document.post_id).first()
    if channel is None:
        return "—"
    shown = message.preview(channel=channel, document=document)
    edition = Edition.objects.filter(post_id=document.post_id).only("started_at").first()
    sent = (
        format_html(
            "<p>Mailed as an edition on {} UTC: later edits change its archive page only.</p>",
            f"{edition.started_at:%Y-%m-%d %H:%M}",
        )
        if edition is not None
        else ""
    )
    url = reverse("admin:publishing_newsletter_edition_post_preview", args=[document.post_id])
    return format_html(
        '{}<p><a href="{}">Open the e-mail preview and send yourself a test</a></p>{}',
        sent, url, preview_frame(shown),
    )  # fmt: skip


register_post_preview(Platform.NEWSLETTER, post_preview)
