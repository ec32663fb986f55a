from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import transaction

from apps.core.admin import DomainErrorsAsMessages, SettingsModelAdmin, also_read_only, run_on_selected
from apps.core.step_up import StepUp
from apps.users.models import Permission, Status, User
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
