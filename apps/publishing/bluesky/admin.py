"""Settings → Publishing: Bluesky → Bluesky connections: which Bluesky account each Bluesky channel
posts as. A connection is made on the channel's page ("Connect Bluesky": a handle, an app password
and, optionally, the account's server); the app password is write-only: no page shows it, nor the
session's tokens."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.defaultfilters import linebreaksbr
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from apps.channels.models import Channel
from apps.core.admin import (
    DomainErrorsAsMessages,
    ObjectButton,
    ObjectButtonsAdmin,
    SetupLink,
    add_input_error,
    page_url,
)
from apps.core.admin_scoping import scoped
from apps.core.destinations import Document, PublishError
from apps.core.errors import DomainError, InvalidInput
from apps.core.social import graphemes
from apps.core.step_up import StepUp
from apps.publishing.bluesky import record, services
from apps.publishing.bluesky.models import PLATFORM, BlueskyConnection


class ConnectForm(forms.Form):
    handle = forms.CharField(max_length=253, help_text="The account's handle, such as alice.bsky.social.")
    app_password = forms.CharField(
        max_length=100,
        widget=forms.PasswordInput(render_value=False),
        help_text="An app password made under Bluesky's Settings → Privacy and security → App passwords "
        "(xxxx-xxxx-xxxx-xxxx). Stored encrypted, never shown again.",
    )
    server = forms.CharField(
        max_length=500,
        required=False,
        label="Server (optional)",
        help_text="The account's server (PDS), such as https://bsky.social. Left empty, it is found from the handle.",
    )


@admin.register(BlueskyConnection)
class BlueskyConnectionAdmin(DomainErrorsAsMessages, ObjectButtonsAdmin):
    change_form_template = "admin/publishing_bluesky/connection_change_form.html"
    list_display = ("channel", "handle", "did", "pds_url", "connected_at")
    list_select_related = ("channel",)
    search_fields = ("channel__title", "handle")
    fields = ("channel", "handle", "did", "pds_url", "status", "connected_by", "connected_at")
    readonly_fields = fields
    # Where a channel publishes, with its credentials: an SSO session confirms its password first.
    step_up = StepUp.ALL_BUT_THE_LIST
    object_buttons = (
        ObjectButton(
            "test-connection",
            "Test connection",
            lambda connection: services.connection_check(connection=connection),
            "{result}",
            permission="view",
        ),
    )

    def has_add_permission(self, request):
        return False  # a connection is made by "Connect Bluesky" on the channel's page

    @admin.display(description="status")
    def status(self, obj: BlueskyConnection) -> str:
        if obj.needs_reconnect:
            return format_html('<strong class="errornote">{}</strong>', f"Reconnect Bluesky: {obj.reconnect_reason}")
        return "Connected (the app password is stored encrypted and never shown)."

    def get_urls(self):
        view = self.admin_site.admin_view
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path("connect/<int:channel_id>/", view(self.connect_view), name=self._url_name("connect")),
            path("<path:object_id>/disconnect/", view(self.disconnect_view), name=self._url_name("disconnect")),
            *super().get_urls(),
        ]

    def _channel(self, request, channel_id) -> Channel:
        """The Bluesky channel an account admin of its own account may connect (operators do not:
        the account is the account's)."""
        if not self.has_change_permission(request) or request.user.account_id is None:
            raise PermissionDenied
        channel = scoped(request, Channel.objects.filter(platform=PLATFORM)).filter(pk=channel_id).first()
        if channel is None or channel.account_id != request.user.account_id:
            raise Http404("No such Bluesky channel.")
        return channel

    def connect_view(self, request, channel_id: int):
        channel = self._channel(request, channel_id)
        connection = BlueskyConnection.objects.filter(channel=channel).first()
        form = ConnectForm(request.POST or None, initial={"handle": connection.handle if connection else ""})
        if request.method == "POST" and form.is_valid():
            try:
                connection = services.connection_save(
                    channel=channel,
                    handle=form.cleaned_data["handle"],
                    app_password=form.cleaned_data["app_password"],
                    server=form.cleaned_data["server"],
                    connected_by=f"{request.user.email} (Settings area)",
                )
            except InvalidInput as exc:
                add_input_error(form, exc)
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                self.message_user(
                    request, f"Bluesky connected: posts appear as @{connection.handle}.", messages.SUCCESS
                )
                return HttpResponseRedirect(page_url(self, "change", connection.pk))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{'Reconnect' if connection else 'Connect'} Bluesky: {channel.title}",
            "form": form,
            "channel": channel,
        }
        return TemplateResponse(request, "admin/publishing_bluesky/connect.html", context)

    def disconnect_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        connection = self.get_object(request, object_id)
        if not self.has_delete_permission(request, connection):
            raise PermissionDenied
        if connection is None:
            raise Http404("No such Bluesky connection.")
        services.connection_delete(connection=connection)
        self.message_user(
            request,
            "Bluesky disconnected: the channel's posts are not published until it is connected again. Revoke the app "
            "password on Bluesky too (Settings → Privacy and security → App passwords).",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(
            reverse("admin:channels_channel_change", args=[connection.channel_id], current_app=self.admin_site.name)
        )

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            if self.has_change_permission(request, obj) and request.user.account_id == obj.channel.account_id:
                context["reconnect_url"] = page_url(self, "connect", obj.channel_id)
            if self.has_delete_permission(request, obj):
                context["disconnect_url"] = page_url(self, "disconnect", obj.pk)
        return super().render_change_form(request, context, add, change, form_url, obj)


def setup_link(channel_id: int) -> SetupLink:
    connection = BlueskyConnection.objects.filter(channel_id=channel_id).first()
    if connection is None:
        return SetupLink(
            "Not connected:",
            "publishing_bluesky_blueskyconnection_connect",
            "Connect Bluesky",
            (channel_id,),
            button=True,
        )
    warning = f"Reconnect Bluesky: {connection.reconnect_reason}" if connection.needs_reconnect else ""
    return SetupLink(
        "Bluesky, posting as",
        "publishing_bluesky_blueskyconnection_change",
        f"@{connection.handle}",
        (connection.pk,),
        warning=warning,
    )


def post_preview(document: Document) -> str:
    """The post's Bluesky text as it will be posted, its length as Bluesky counts it, and the card."""
    text = record.text_of(document)
    try:
        record.post(text, embed=None, langs=[])
    except PublishError as exc:
        return format_html('<strong class="errornote">{}</strong>', exc.message)
    card = format_html('<p class="help">With the card of {}.</p>', document.link) if document.link else ""
    return format_html(
        '<div class="readonly">{}</div><p class="help">{} of {} characters.</p>{}',
        linebreaksbr(text),
        graphemes(text),
        record.LIMIT,
        card,
    )
