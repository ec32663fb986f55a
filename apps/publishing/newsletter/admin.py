"""Settings → Publishing: newsletter. A newsletter channel's sender (Newsletter settings), its
readers (Subscribers: add, import, export, erase), the account's suppression list (Lift, with a
reason) and each edition as it was mailed (its counts, the failed and uncertain addresses, the
e-mail as sent, Send test, Send to uncertain). A post not mailed yet is previewed, and tested,
from its own page ("as it will be posted").

Who sees what (apps/settings_area/access.py): subscribers, suppressions and editions name readers,
whose addresses are personal data, so they are the account's admins' alone, as the channels'
credentials are. The preview and "Send test" of a post are for whoever may change posts (editors
too): they show no reader, and mail only the signed-in member's own address.
"""

from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from apps.channels.models import Channel
from apps.core.admin import (
    DomainErrorsAsMessages,
    SettingsModelAdmin,
    SetupLink,
    page_url,
)
from apps.core.destinations import Document
from apps.core.step_up import StepUp
from apps.publishing.newsletter import message, services
from apps.publishing.newsletter.admin_forms import NewsletterChannelFilter, NewsletterForm, SubscriberAddForm
from apps.publishing.newsletter.admin_views import EditionPages, LiftPage, SubscriberFiles, admin_url, preview_frame
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

# An edition's page lists at most this many failed (and uncertain) addresses, with the count of the rest.
ADDRESSES_SHOWN = 100
DELETE_CHUNK = 500


# --- Newsletter settings -------------------------------------------------------------------------


@admin.register(Newsletter)
class NewsletterAdmin(DomainErrorsAsMessages, SettingsModelAdmin):
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
        url = admin_url(self, "publishing_newsletter_subscriber_changelist")
        return format_html(
            '<a href="{}?channel__id__exact={}">{} confirmed, {} yet to confirm, {} unsubscribed</a> · '
            '<a href="{}?channel={}">Import CSV</a>',
            url,
            obj.channel_id,
            counts[SubscriberStatus.CONFIRMED],
            counts[SubscriberStatus.UNCONFIRMED],
            counts[SubscriberStatus.UNSUBSCRIBED],
            admin_url(self, "publishing_newsletter_subscriber_import"),
            obj.channel_id,
        )

    @admin.display(description="pages")
    def pages(self, obj: Newsletter) -> str:
        if obj.pk is None:
            return "—"
        editions = admin_url(self, "publishing_newsletter_edition_changelist")
        public = obj.channel.public_url()
        return format_html(
            '<a href="{}?channel__id__exact={}">Editions</a>{}',
            editions,
            obj.channel_id,
            format_html(
                ' · <a href="{}" target="_blank" rel="noopener">Public page (subscribe form and archive)</a>', public
            )
            if public
            else "",
        )

    def get_readonly_fields(self, request, obj=None):
        # The settings stay with their channel.
        return (*self.readonly_fields, "channel") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        saved = services.newsletter_settings_save(
            channel=obj.channel, sender_name=data.get("sender_name", ""), reply_to=data.get("reply_to", "")
        )
        obj.pk, obj._state.adding = saved.pk, False


def setup_link(channel_id: int) -> SetupLink:
    confirmed = Subscriber.objects.filter(channel_id=channel_id, status=SubscriberStatus.CONFIRMED).count()
    readers = f"Mailed to its {confirmed:,} confirmed subscriber(s)"
    newsletter = Newsletter.objects.filter(channel_id=channel_id).only("pk").first()
    if newsletter is None:
        return SetupLink(
            f"{readers}, from the channel's title:",
            "publishing_newsletter_newsletter_add",
            "set the sender name and reply-to",
            query=f"channel={channel_id}",
        )
    return SetupLink(
        f"{readers}:", "publishing_newsletter_newsletter_change", "sender, reply-to and subscribers", (newsletter.pk,)
    )


# --- Subscribers ---------------------------------------------------------------------------------


@admin.register(Subscriber)
class SubscriberAdmin(SubscriberFiles, DomainErrorsAsMessages, SettingsModelAdmin):
    list_display = ("email", "name", "status", "channel", "created_at", "confirmed_at")
    list_filter = ("status", ("channel", NewsletterChannelFilter))
    list_select_related = ("channel",)
    search_fields = ("email", "name")
    search_help_text = "Part of an e-mail address or a name."
    readonly_fields = (
        "email",
        "name",
        "status",
        "channel",
        "created_at",
        "confirmed_at",
        "unsubscribed_at",
        "suppressed",
    )
    # Every page names readers (the list, its search, a subscriber, the export): an SSO session
    # confirms its password first, as the API asks a key for `read:subscribers`.
    step_up = StepUp.EVERY_PAGE

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
        url = f"{admin_url(self, 'publishing_newsletter_suppression_changelist')}?{urlencode({'q': obj.email})}"
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


# --- Suppression list ----------------------------------------------------------------------------


@admin.register(Suppression)
class SuppressionAdmin(LiftPage, DomainErrorsAsMessages, SettingsModelAdmin):
    list_display = ("reason", "applies_to", "created_at", "detail_shown")
    list_filter = ("reason", ("channel", NewsletterChannelFilter))
    list_select_related = ("channel",)
    # The list keeps no address, only its hash: the search box hashes the address typed in.
    search_fields = ("email_hash",)
    search_help_text = "A whole e-mail address: the list keeps only a hash of it, so parts of one find nothing."
    fields = readonly_fields = ("reason", "applies_to", "created_at", "detail", "email_hash")
    # A mail server's words (the detail) often name the address, and the search says whether an address
    # typed in is suppressed; lifting one lets the account mail it again: an SSO session confirms its
    # password first.
    step_up = StepUp.EVERY_PAGE

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


# --- Editions ------------------------------------------------------------------------------------


@admin.register(Edition)
class EditionAdmin(EditionPages, SettingsModelAdmin):
    list_display = ("subject", "channel", "started_at", "finished_at", "sent_of_total", "failed", "uncertain")
    list_filter = (("channel", NewsletterChannelFilter),)
    list_select_related = ("channel",)
    search_fields = ("subject",)
    readonly_fields = (
        "post_link",
        "channel",
        "subject",
        "archive",
        "started_at",
        "finished_at",
        "counts",
        "failed_addresses",
        "uncertain_addresses",
        "preview",
        "text_part",
    )
    # An edition's page lists its failed and uncertain addresses; the list shows counts only. A post's
    # preview and test (EditionPages) name no reader and stay open (step_up.not_needed).
    step_up = StepUp.ALL_BUT_THE_LIST
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

    def view_on_site(self, obj: Edition) -> str | None:
        return obj.archive_url or None

    @admin.display(description="sent")
    def sent_of_total(self, obj: Edition) -> str:
        return f"{obj.sent:,} of {obj.total:,}"

    @admin.display(description="post")
    def post_link(self, obj: Edition) -> str:
        url = admin_url(self, "posts_post_change", obj.post_id)
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

    # Each part renders the edition again (the page shows one edition): no state kept between fields.
    @admin.display(description="HTML part")
    def preview(self, obj: Edition) -> str:
        return preview_frame(message.preview(edition=obj))

    @admin.display(description="text part")
    def text_part(self, obj: Edition) -> str:
        return format_html('<pre style="white-space:pre-wrap">{}</pre>', message.preview(edition=obj).text)


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
        sent,
        url,
        preview_frame(shown),
    )
