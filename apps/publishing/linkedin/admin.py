"""Settings → Publishing: LinkedIn → LinkedIn connections: which LinkedIn account each LinkedIn
channel posts with, and as whom (the member or a page they administer).

A connection is made by "Connect LinkedIn" on the channel's page: OAuth 2.0's authorization code
flow (Authlib), with a one-time `state` kept in the admin's session, so an answer LinkedIn sends to
the callback is taken only from the session that asked for it, and only once. The tokens are
write-only: no page shows them.
"""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.defaultfilters import linebreaksbr
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from apps.channels.models import Channel
from apps.core import oauth_state
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
from apps.core.step_up import StepUp
from apps.publishing.linkedin import client, services
from apps.publishing.linkedin.commentary import LIMIT, commentary, shown
from apps.publishing.linkedin.models import PLATFORM, LinkedInConnection

# Where the session keeps the authorizations under way (apps/core/oauth_state.py).
SESSION_KEY = "linkedin.oauth"


def warning(connection: LinkedInConnection) -> str:
    """What the connection's pages warn of: lost access, or access about to end with no way to renew it."""
    if connection.needs_reconnect:
        return f"Reconnect LinkedIn: {connection.reconnect_reason}"
    if connection.expires_within() and not connection.can_refresh():
        if connection.expires_at <= timezone.now():
            return "The access LinkedIn granted has expired: reconnect LinkedIn."
        ends = f"{connection.expires_at:%Y-%m-%d %H:%M} UTC"
        return f"The access LinkedIn granted ends on {ends}: reconnect LinkedIn before then."
    return ""


class LinkedInConnectionForm(forms.ModelForm):
    class Meta:
        model = LinkedInConnection
        fields = ("organization_urn",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields.get("organization_urn")
        pages = [page for page in self.instance.organizations if isinstance(page, dict)] if self.instance.pk else []
        if field is not None and pages:
            # The pages LinkedIn said the member administers; without that list (no
            # r_organization_admin) the page's URN is typed in.
            member = self.instance.member_name or self.instance.member_urn
            choices = [("", f"{member} (the member's own profile)")]
            choices += [(page["urn"], f"{page.get('name') or page['urn']} ({page['urn']})") for page in pages]
            self.fields["organization_urn"] = forms.ChoiceField(
                label=field.label, choices=choices, required=False, help_text="Whom the channel's posts appear as."
            )

    def clean(self):
        cleaned = super().clean()
        pages = self.instance.organizations if self.instance.pk else []
        try:
            cleaned["organization_urn"] = services.organization_check(cleaned.get("organization_urn") or "", pages)
        except InvalidInput as exc:
            add_input_error(self, exc)
        return cleaned


@admin.register(LinkedInConnection)
class LinkedInConnectionAdmin(DomainErrorsAsMessages, ObjectButtonsAdmin):
    form = LinkedInConnectionForm
    change_form_template = "admin/publishing_linkedin/connection_change_form.html"
    list_display = ("channel", "member_name", "posts_as", "access", "connected_at")
    list_select_related = ("channel",)
    search_fields = ("channel__title", "member_name")
    readonly_fields = ("channel", "connected_as", "access", "connected_by", "connected_at", "redirect_url")
    fieldsets = (
        (None, {"fields": ("channel", "connected_as", "organization_urn")}),
        (
            "Access (the tokens are stored encrypted and never shown)",
            {"fields": ("access", "connected_by", "connected_at")},
        ),
        ("LinkedIn app", {"fields": ("redirect_url",)}),
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
        return False  # a connection is made by "Connect LinkedIn" on the channel's page

    # --- Columns and read-only fields ---

    @admin.display(description="connected as")
    def connected_as(self, obj: LinkedInConnection) -> str:
        return f"{obj.member_name} ({obj.member_urn})" if obj.member_name else obj.member_urn

    @admin.display(description="posts as")
    def posts_as(self, obj: LinkedInConnection) -> str:
        return obj.author_name

    @admin.display(description="access")
    def access(self, obj: LinkedInConnection) -> str:
        problem = warning(obj)
        if problem:
            return format_html('<strong class="errornote">{}</strong>', problem)
        until = f"until {obj.expires_at:%Y-%m-%d %H:%M} UTC" if obj.expires_at else "no expiry given"
        renew = "; renewed by itself before then" if obj.can_refresh() else ""
        return f"Granted {until}{renew}."

    @admin.display(description="redirect URL to register with the LinkedIn app")
    def redirect_url(self, obj=None) -> str:
        return self.callback_url()

    # --- Connect, callback, disconnect ---

    def callback_url(self) -> str:
        """The address LinkedIn sends the member back to: fixed (registered with the LinkedIn app),
        so it is built from SITE_URL, not from the request."""
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
        """The LinkedIn channel an account admin of its own account may connect (operators do
        not: the access is the account's)."""
        if not self.has_change_permission(request) or request.user.account_id is None:
            raise PermissionDenied
        channel = scoped(request, Channel.objects.filter(platform=PLATFORM)).filter(pk=channel_id).first()
        if channel is None or channel.account_id != request.user.account_id:
            raise Http404("No such LinkedIn channel.")
        return channel

    def _channel_page(self, channel_id: int) -> HttpResponseRedirect:
        return HttpResponseRedirect(
            reverse("admin:channels_channel_change", args=[channel_id], current_app=self.admin_site.name)
        )

    def connect_view(self, request, channel_id: int):
        channel = self._channel(request, channel_id)
        if not settings.LINKEDIN_CLIENT_ID or not settings.LINKEDIN_CLIENT_SECRET:
            self.message_user(
                request,
                "LinkedIn is not set up on this server: the operator makes a LinkedIn app whose redirect URL is "
                f"{self.callback_url()} and sets LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET (see the publishing "
                "guide), or connects the channel with the connect_linkedin command.",
                messages.ERROR,
            )
            return self._channel_page(channel.pk)
        state = oauth_state.begin(request, key=SESSION_KEY, channel=channel.pk)
        return HttpResponseRedirect(client.authorization_url(redirect_uri=self.callback_url(), state=state))

    def callback_view(self, request):
        entry = oauth_state.take(request, key=SESSION_KEY)
        if entry is None:
            self.message_user(
                request,
                "This answer from LinkedIn belongs to no connection started in this session (or was used already, or "
                "is too old). Start again with “Connect LinkedIn” on the channel's page.",
                messages.ERROR,
            )
            return HttpResponseRedirect(reverse("admin:channels_channel_changelist", current_app=self.admin_site.name))
        channel = self._channel(request, entry.get("channel"))
        error = request.GET.get("error")
        code = request.GET.get("code", "")
        if error or not code:
            said = request.GET.get("error_description") or error or "no authorization code"
            self.message_user(request, f"LinkedIn did not grant access: {said[:300]}.", messages.ERROR)
            return self._channel_page(channel.pk)
        try:
            token = client.exchange_code(code=code, redirect_uri=self.callback_url())
            connection = services.connection_save(
                channel=channel, token=token, connected_by=f"{request.user.email} (Settings area)"
            )
        except (client.ApiError, DomainError) as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return self._channel_page(channel.pk)
        self.message_user(
            request,
            f"LinkedIn connected: {connection.member_name or connection.member_urn}. Posts appear as "
            f"{connection.author_name}; choose a page below to post as it instead.",
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
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        services.connection_delete(connection=connection)
        self.message_user(
            request,
            "LinkedIn disconnected: the channel's posts are not published until it is connected again. To end the "
            "access on LinkedIn's side too, remove the app under LinkedIn's Settings → Data privacy.",
            messages.SUCCESS,
        )
        return self._channel_page(connection.channel_id)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            if self.has_change_permission(request, obj) and request.user.account_id == obj.channel.account_id:
                context["reconnect_url"] = page_url(self, "connect", obj.channel_id)
            if self.has_delete_permission(request, obj):
                context["disconnect_url"] = page_url(self, "disconnect", obj.pk)
            context["linkedin_warning"] = warning(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        saved = services.connection_author_set(connection=obj, organization=form.cleaned_data["organization_urn"])
        obj.organization_urn = saved.organization_urn


def setup_link(channel_id: int) -> SetupLink:
    connection = LinkedInConnection.objects.filter(channel_id=channel_id).first()
    if connection is None:
        return SetupLink(
            "Not connected:",
            "publishing_linkedin_linkedinconnection_connect",
            "Connect LinkedIn",
            (channel_id,),
            button=True,
        )
    problem = warning(connection)
    # The warning says when a lost or ending access ends; otherwise the page says it here.
    text = "LinkedIn, posting as" if problem else f"LinkedIn ({access_end(connection)}), posting as"
    return SetupLink(
        text,
        "publishing_linkedin_linkedinconnection_change",
        connection.author_name,
        (connection.pk,),
        warning=problem,
    )


def access_end(connection: LinkedInConnection) -> str:
    """When the channel's access to LinkedIn ends, as the channel's page says it."""
    if connection.expires_at is None:
        # A token made in LinkedIn's portal comes without its lifetime (connect_linkedin).
        return "LinkedIn gave no end date for this access; a token made in its portal lasts 60 days"
    until = f"{connection.expires_at:%Y-%m-%d %H:%M} UTC"
    if not connection.can_refresh():
        return f"access ends on {until}"
    if connection.refresh_expires_at is None:
        return f"access until {until}, renewed by itself"
    return f"access until {until}, renewed by itself until {connection.refresh_expires_at:%Y-%m-%d %H:%M} UTC"


def post_preview(document: Document) -> str:
    """The post's LinkedIn text as its readers will see it, with its length as LinkedIn counts it,
    or the sentence that says why it cannot be posted."""
    try:
        length = len(commentary(document))
    except PublishError as exc:
        return format_html('<strong class="errornote">{}</strong>', exc.message)
    return format_html(
        '<div class="readonly">{}</div><p class="help">{} of {} characters.</p>',
        linebreaksbr(shown(document)),
        f"{length:,}",
        f"{LIMIT:,}",
    )
