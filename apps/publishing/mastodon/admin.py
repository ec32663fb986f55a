"""Settings → Publishing: Mastodon → Mastodon connections: which account on which instance each
Mastodon channel posts with, who sees its statuses and in which language.

A connection is made by "Connect Mastodon" on the channel's page: the instance's address is asked
(and checked as every outside host is), the service's app is registered there once, then OAuth 2.0's
authorization code flow runs with a one-time `state` kept in the admin's session
(apps/core/oauth_state.py). The token is write-only: no page shows it.
"""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.defaultfilters import linebreaksbr
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from apps.api.middleware import PAGE_CSP
from apps.channels.models import Channel
from apps.core import crypto, oauth_state
from apps.core.admin import (
    DomainErrorsAsMessages,
    ObjectButton,
    ObjectButtonsAdmin,
    SetupLink,
    add_input_error,
    page_url,
)
from apps.core.admin_scoping import scoped
from apps.core.destinations import Document
from apps.core.errors import DomainError, InvalidInput
from apps.core.step_up import StepUp
from apps.publishing.mastodon import client, services
from apps.publishing.mastodon.models import PLATFORM, MastodonApp, MastodonConnection
from apps.publishing.mastodon.text import length, status_text

# Where the session keeps the authorizations under way (apps/core/oauth_state.py).
SESSION_KEY = "mastodon.oauth"


def connect_policy() -> str:
    """The connect page's Content-Security-Policy: the pages' own, but its form may lead to the
    instance (its answer redirects there, which browsers hold to form-action), known only once typed."""
    schemes = "https: http:" if settings.MASTODON_ALLOW_LOCAL_INSTANCES else "https:"
    return PAGE_CSP.replace("form-action 'self'", f"form-action 'self' {schemes}")


def warning(connection: MastodonConnection) -> str:
    if connection.needs_reconnect:
        return f"{services.RECONNECT} {connection.reconnect_reason}"
    return ""


class InstanceForm(forms.Form):
    instance = forms.CharField(
        label="Your Mastodon instance",
        max_length=300,
        help_text="The address of the server your account is on, e.g. mastodon.social.",
    )

    def clean_instance(self) -> str:
        try:
            return services.instance_address(self.cleaned_data["instance"])
        except InvalidInput as exc:
            add_input_error(self, exc)
            return ""


class MastodonConnectionForm(forms.ModelForm):
    class Meta:
        model = MastodonConnection
        fields = ("visibility", "language")

    def clean(self):
        cleaned = super().clean()
        try:
            cleaned["language"] = services.language_check(cleaned.get("language") or "")
        except InvalidInput as exc:
            add_input_error(self, exc)
        return cleaned


@admin.register(MastodonConnection)
class MastodonConnectionAdmin(DomainErrorsAsMessages, ObjectButtonsAdmin):
    form = MastodonConnectionForm
    change_form_template = "admin/publishing_mastodon/connection_change_form.html"
    list_display = ("channel", "acct", "visibility", "connected_at")
    list_select_related = ("channel", "app")
    search_fields = ("channel__title", "acct")
    readonly_fields = ("channel", "mastodon_account", "instance", "limits", "access", "connected_by", "connected_at")
    fieldsets = (
        (None, {"fields": ("channel", "mastodon_account", "instance", "visibility", "language", "limits")}),
        (
            "Access (the token is stored encrypted and never shown)",
            {"fields": ("access", "connected_by", "connected_at")},
        ),
    )
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
        return False  # a connection is made by "Connect Mastodon" on the channel's page

    @admin.display(description="Mastodon account")
    def mastodon_account(self, obj: MastodonConnection) -> str:
        return f"{obj.display_name} (@{obj.acct})" if obj.display_name else f"@{obj.acct}"

    @admin.display(description="instance")
    def instance(self, obj: MastodonConnection) -> str:
        return obj.base_url

    @admin.display(description="the instance's limits")
    def limits(self, obj: MastodonConnection) -> str:
        read = f", read {obj.limits_read_at:%Y-%m-%d %H:%M} UTC" if obj.limits_read_at else ""
        return (
            f"{obj.max_characters:,} characters a status (a link counts as {obj.characters_reserved_per_url}), "
            f"{obj.max_media_attachments} images{read}."
        )

    @admin.display(description="access")
    def access(self, obj: MastodonConnection) -> str:
        problem = warning(obj)
        if problem:
            return format_html('<strong class="errornote">{}</strong>', problem)
        return f"Granted ({obj.scopes or client.SCOPES}); Mastodon's access does not expire."

    # --- Connect, callback, disconnect ---

    def callback_url(self) -> str:
        """The address the instance sends the account back to: registered with the app, so built
        from SITE_URL, not from the request."""
        return f"{settings.SITE_URL}{page_url(self, 'callback')}"

    def get_urls(self):
        view = self.admin_site.admin_view
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path("connect/<int:channel_id>/", view(self.connect_view), name=self._url_name("connect")),
            path("callback/", view(self.callback_view), name=self._url_name("callback")),
            path("<path:object_id>/disconnect/", view(self.disconnect_view), name=self._url_name("disconnect")),
            *super().get_urls(),
        ]

    def _channel(self, request, channel_id) -> Channel:
        """The Mastodon channel an account admin of its own account may connect (operators do not:
        the access is the account's)."""
        if not self.has_change_permission(request) or request.user.account_id is None:
            raise PermissionDenied
        channel = scoped(request, Channel.objects.filter(platform=PLATFORM)).filter(pk=channel_id).first()
        if channel is None or channel.account_id != request.user.account_id:
            raise Http404("No such Mastodon channel.")
        return channel

    def _channel_page(self, channel_id: int) -> HttpResponseRedirect:
        return HttpResponseRedirect(
            reverse("admin:channels_channel_change", args=[channel_id], current_app=self.admin_site.name)
        )

    def connect_view(self, request, channel_id: int):
        channel = self._channel(request, channel_id)
        current = MastodonConnection.objects.select_related("app").filter(channel=channel).first()
        initial = {"instance": current.base_url} if current else {}
        form = InstanceForm(request.POST if request.method == "POST" else None, initial=initial)
        if form.is_valid():
            try:
                app = services.app_for(base_url=form.cleaned_data["instance"], redirect_uri=self.callback_url())
                state = oauth_state.begin(request, key=SESSION_KEY, channel=channel.pk, app=app.pk)
                return HttpResponseRedirect(
                    client.authorization_url(
                        base_url=app.base_url, client_id=app.client_id, redirect_uri=self.callback_url(), state=state
                    )
                )
            except DomainError as exc:
                form.add_error("instance", exc.message)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Connect Mastodon: {channel.title}",
            "channel": channel,
            "form": form,
        }
        response = TemplateResponse(request, "admin/publishing_mastodon/connect.html", context)
        response.headers["Content-Security-Policy"] = connect_policy()
        return response

    def callback_view(self, request):
        entry = oauth_state.take(request, key=SESSION_KEY)
        app = MastodonApp.objects.filter(pk=(entry or {}).get("app")).first()
        if entry is None or app is None:
            self.message_user(
                request,
                "This answer from Mastodon belongs to no connection started in this session (or was used already, or "
                "is too old). Start again with “Connect Mastodon” on the channel's page.",
                messages.ERROR,
            )
            return HttpResponseRedirect(reverse("admin:channels_channel_changelist", current_app=self.admin_site.name))
        channel = self._channel(request, entry.get("channel"))
        error, code = request.GET.get("error"), request.GET.get("code", "")
        if error or not code:
            said = request.GET.get("error_description") or error or "no authorization code"
            self.message_user(request, f"Mastodon did not grant access: {said[:300]}.", messages.ERROR)
            return self._channel_page(channel.pk)
        try:
            token = client.exchange_code(
                base_url=app.base_url,
                client_id=app.client_id,
                client_secret=app.client_secret(),
                code=code,
                redirect_uri=app.redirect_uri,
            )
            connection = services.connection_save(
                channel=channel, app=app, token=token, connected_by=f"{request.user.email} (Settings area)"
            )
        except (client.ApiError, DomainError) as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return self._channel_page(channel.pk)
        except crypto.CredentialUnreadable as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return self._channel_page(channel.pk)
        self.message_user(
            request,
            f"Mastodon connected: @{connection.acct}. Its statuses are "
            f"{connection.get_visibility_display().lower()}; change it below.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(page_url(self, "change", connection.pk))

    def disconnect_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        connection = self.get_object(request, object_id)
        if not self.has_delete_permission(request, connection):
            raise PermissionDenied
        if connection is None:
            raise Http404("No such Mastodon connection.")
        services.connection_delete(connection=connection)
        self.message_user(
            request,
            "Mastodon disconnected: the channel's posts are not published until it is connected again. To end the "
            f"access on the instance too, revoke the app under {connection.base_url}'s Preferences → Account → "
            "Authorized apps.",
            messages.SUCCESS,
        )
        return self._channel_page(connection.channel_id)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            if self.has_change_permission(request, obj) and request.user.account_id == obj.channel.account_id:
                context["reconnect_url"] = page_url(self, "connect", obj.channel_id)
            if self.has_delete_permission(request, obj):
                context["disconnect_url"] = page_url(self, "disconnect", obj.pk)
            context["mastodon_warning"] = warning(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        saved = services.connection_options_set(
            connection=obj, visibility=form.cleaned_data["visibility"], language=form.cleaned_data["language"]
        )
        obj.visibility, obj.language = saved.visibility, saved.language


def setup_link(channel_id: int) -> SetupLink:
    connection = MastodonConnection.objects.select_related("app").filter(channel_id=channel_id).first()
    if connection is None:
        return SetupLink(
            "Not connected:",
            "publishing_mastodon_mastodonconnection_connect",
            "Connect Mastodon",
            (channel_id,),
            button=True,
        )
    return SetupLink(
        f"Mastodon ({connection.get_visibility_display().lower()} statuses), posting as",
        "publishing_mastodon_mastodonconnection_change",
        f"@{connection.acct}",
        (connection.pk,),
        warning=warning(connection),
    )


def post_preview(document: Document) -> str:
    """The status as the channel's instance will show it, with its length as Mastodon counts it
    against the instance's own limit (Mastodon's defaults until a channel is connected)."""
    connection = MastodonConnection.objects.filter(channel__posts__pk=document.post_id).first()
    limit = connection.max_characters if connection else client.DEFAULT_LIMITS["max_characters"]
    per_url = (
        connection.characters_reserved_per_url if connection else client.DEFAULT_LIMITS["characters_reserved_per_url"]
    )
    text = status_text(document, limit=limit, reserved_per_url=per_url)
    return format_html(
        '<div class="readonly">{}</div><p class="help">{} of {} characters.</p>',
        linebreaksbr(text),
        f"{length(text, reserved_per_url=per_url):,}",
        f"{limit:,}",
    )
