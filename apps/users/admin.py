from django import forms
from django.contrib import admin
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group
from django.db import transaction
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers

from apps.accounts.models import ALL_SCOPES
from apps.core.admin import (
    DomainErrorsAsMessages,
    SettingsModelAdmin,
    ShownOnce,
    also_read_only,
    page_state,
    page_url,
    run_on_selected,
)
from apps.core.step_up import StepUp
from apps.users.credentials import api_key_create, api_key_revoke
from apps.users.models import ApiKey, Permission, SsoToken, SsoTokenState, Status, User
from apps.users.services import UPDATABLE_FIELDS, user_create, user_delete, user_invite, user_update


def _email(user: User) -> str:
    return user.email


def permissions_field(help_text: str) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        choices=Permission.choices, widget=forms.CheckboxSelectMultiple, required=False, help_text=help_text
    )


class UserAddForm(forms.ModelForm):
    permissions = permissions_field("Leave all unticked for the role's default permissions.")
    send_invitation = forms.BooleanField(
        required=False, initial=True, help_text="E-mail a link to set a password; the user stays invited until then."
    )

    class Meta:
        model = User
        fields = ("account", "email", "name", "role", "permissions", "metadata")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Operators pick the account; an account's admin adds users to their own (not a field then).
        if "account" in self.fields:
            self.fields["account"].required = True


class UserChangeForm(forms.ModelForm):
    permissions = permissions_field("Changing only the role resets these to the new role's defaults.")

    class Meta:
        model = User
        fields = (
            "name",
            "role",
            "status",
            "permissions",
            "timezone",
            "language",
            "notification_preferences",
            "metadata",
        )


# Access follows the role and the permissions (User.admin_area, has_perm), so Django's groups have
# nothing to grant.
if admin.site.is_registered(Group):
    admin.site.unregister(Group)


@admin.register(User)
class UserAdmin(DomainErrorsAsMessages, SettingsModelAdmin):
    """Changes go through the same services as the API: last-admin protection, validation and the
    user.* webhook events, and nobody grants a role or permission they do not hold. No form offers
    a privilege field: admin access follows the role and the permissions (apps/settings_area/access.py)."""

    list_display = ("email", "name", "account", "role", "status", "permission_list", "last_login")
    list_filter = ("role", "status", "account")
    search_fields = ("email", "name")
    list_select_related = ("account",)
    readonly_fields = ("last_login", "created_at", "updated_at", "invitation_sent_at")
    actions = ["suspend_selected", "activate_selected", "resend_invitation"]
    # Roles are access (and a new user is an invitation to an address of the session's choosing).
    step_up = StepUp.ALL_BUT_THE_LIST
    add_fieldsets = (
        (None, {"fields": ("account", "email", "name")}),
        ("Access", {"fields": ("role", "permissions", "send_invitation")}),
        ("Profile", {"fields": ("metadata",)}),
    )
    fieldsets = (
        (None, {"fields": ("email", "name", "account")}),
        ("Access", {"fields": ("role", "status", "permissions")}),
        ("Profile", {"fields": ("timezone", "language", "notification_preferences", "metadata")}),
        ("Dates", {"fields": ("last_login", "invitation_sent_at", "created_at", "updated_at")}),
    )

    @admin.display(description="permissions")
    def permission_list(self, obj: User) -> str:
        return ", ".join(obj.permissions) or "—"

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = UserChangeForm if obj else UserAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        return self.fieldsets if obj else self.add_fieldsets

    def get_readonly_fields(self, request, obj=None):
        # The e-mail is the sign-in name and the account is fixed once the user exists.
        fields = super().get_readonly_fields(request, obj)
        if obj is None:
            # A user to be has no dates yet (the scoping may have added their account).
            return tuple(name for name in fields if name not in self.readonly_fields)
        return also_read_only(fields, "email", "account")

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if not change:
            created = user_create(
                account=obj.account,
                email=data["email"],
                name=data["name"],
                role=data["role"],
                permissions=data["permissions"] or None,
                metadata=data["metadata"],
                send_invitation=data["send_invitation"],
                granted_by=request.user,
            )
            obj.pk, obj._state.adding = created.pk, False
            return
        governed = {field: data[field] for field in form.changed_data if field in UPDATABLE_FIELDS}
        if governed:
            user_update(user=obj, granted_by=request.user, **governed)

    def delete_model(self, request, obj):
        user_delete(user=obj)

    def delete_queryset(self, request, queryset):
        # All or none: a refused deletion (the last admin) leaves every selected user in place.
        with transaction.atomic():
            for user in queryset:
                user_delete(user=user)

    def _each(self, request, queryset, change, done: str) -> None:
        run_on_selected(self, request, queryset, change, done=f"{done} {{count}} user(s).", label=_email)

    @admin.action(description="Suspend selected users", permissions=["change"])
    def suspend_selected(self, request, queryset):
        self._each(request, queryset, lambda user: user_update(user=user, status=Status.SUSPENDED), "Suspended")

    @admin.action(description="Activate selected users", permissions=["change"])
    def activate_selected(self, request, queryset):
        self._each(request, queryset, lambda user: user_update(user=user, status=Status.ACTIVE), "Activated")

    @admin.action(description="Send the invitation e-mail again", permissions=["change"])
    def resend_invitation(self, request, queryset):
        self._each(request, queryset, lambda user: user_invite(user=user), "Sent an invitation to")


# --- API keys and SSO tokens (listed under Accounts, their Django app: models/credentials.py) -----


class ApiKeyForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in ALL_SCOPES], widget=forms.CheckboxSelectMultiple, required=False
    )
    expires_at = forms.DateTimeField(
        required=False, help_text="Leave empty for the default lifetime (API_KEY_DEFAULT_TTL_DAYS)."
    )

    class Meta:
        model = ApiKey
        fields = ("account", "user", "name", "scopes", "expires_at")

    def clean(self):
        cleaned = super().clean()
        account, user = cleaned.get("account"), cleaned.get("user")
        if account and user and user.account_id != account.id:
            self.add_error("user", "The key's user must belong to the key's account.")
        return cleaned


@admin.register(ApiKey)
class ApiKeyAdmin(SettingsModelAdmin):
    form = ApiKeyForm
    list_display = ("name", "display_key", "account", "user", "scope_list", "expires_at", "last_used_at", "state")
    list_filter = ("account",)
    search_fields = ("name", "prefix", "user__email")
    readonly_fields = ("display_key", "last_used_at", "revoked_at", "created_at")
    list_select_related = ("account", "user")
    actions = ["revoke_selected"]
    # Keys are access: an SSO session confirms its password before it sees, makes or revokes one.
    step_up = StepUp.EVERY_PAGE

    def get_readonly_fields(self, request, obj=None):
        # Owner and account are fixed once the key exists: moving a key would hand its access on.
        fields = super().get_readonly_fields(request, obj)
        return also_read_only(fields, "account", "user") if obj else fields

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes) or "—"

    @admin.display(description="state")
    def state(self, obj: ApiKey) -> str:
        if obj.revoked_at:
            return "revoked"
        return "active" if obj.is_usable() else "expired"

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        created, raw = api_key_create(
            account=obj.account,
            user=obj.user,
            name=obj.name,
            scopes=form.cleaned_data["scopes"],
            expires_at=form.cleaned_data.get("expires_at"),
        )
        obj.pk, obj._state.adding = created.pk, False
        for field in ("prefix", "key_hash", "scopes", "expires_at", "created_at"):
            setattr(obj, field, getattr(created, field))
        # For response_add to show, on this request's answer only.
        page_state(request).shown_once = raw

    def response_add(self, request, obj, post_url_continue=None):
        """The key, once, on the answer to the POST that created it, whichever save button was
        pressed: a redirect could carry it to the next page only in the session or a cookie."""
        may_view = self.has_view_or_change_permission
        preserved = {"preserved_filters": self.get_preserved_filters(request), "opts": self.opts}
        context = {
            **self.admin_site.each_context(request),
            "title": "API key created",
            "opts": self.opts,
            "api_key": obj,
            "raw_key": ShownOnce(page_state(request).shown_once),
            "change_url": page_url(self, "change", quote(obj.pk)) if may_view(request, obj) else None,
            "changelist_url": add_preserved_filters(preserved, page_url(self, "changelist"))
            if may_view(request)
            else None,
            "add_url": add_preserved_filters(preserved, page_url(self, "add"))
            if self.has_add_permission(request)
            else None,
        }
        response = TemplateResponse(request, "admin/accounts/apikey/created.html", context)
        add_never_cache_headers(response)  # no copy of the page, and so of the key, in any cache
        return response

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_selected(self, request, queryset):
        count = run_on_selected(
            self, request, queryset.filter(revoked_at__isnull=True), lambda api_key: api_key_revoke(api_key=api_key)
        )
        self.message_user(request, f"Revoked {count} key(s) at {timezone.now():%Y-%m-%d %H:%M} UTC.")


class SsoTokenStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return SsoTokenState.choices

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == SsoTokenState.USED:
            return queryset.filter(used_at__isnull=False)
        if self.value() == SsoTokenState.EXPIRED:
            return queryset.filter(used_at__isnull=True, expires_at__lte=now)
        if self.value() == SsoTokenState.UNUSED:
            return queryset.filter(used_at__isnull=True, expires_at__gt=now)
        return queryset


@admin.register(SsoToken)
class SsoTokenAdmin(SettingsModelAdmin):
    """Read-only: tokens are created through POST /v1/sso_tokens and their secret is never stored."""

    list_display = ("id", "user", "account", "state", "created_at", "expires_at", "used_at", "api_key")
    list_filter = (SsoTokenStateFilter, "account")
    search_fields = ("user__email",)
    list_select_related = ("user", "account", "api_key")
    fields = ("account", "user", "api_key", "redirect_to", "state", "created_at", "expires_at", "used_at")
    readonly_fields = fields

    @admin.display(description="state")
    def state(self, obj: SsoToken) -> str:
        return SsoTokenState(obj.state()).label

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
