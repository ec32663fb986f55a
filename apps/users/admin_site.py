"""The admin site: the operator's console and every account's Settings area in one.

Who gets in follows the user's role and status on every request (User.admin_area): the operator
sees every account; an account's admins get its Settings area, its editors its content; viewers
and users who are not active get no admin. Every registered ModelAdmin is scoped to the user's
account by AccountScopedAdmin, mixed in here at registration. Sign-ins are reported as user.login
events (the house rule keeps events out of signals, so the login view itself reports them).
Installed by `ServiceAdminConfig` (apps/users/admin_apps.py) in place of django.contrib.admin.
"""

from functools import update_wrapper

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.core.admin import AccountScopedAdmin
from apps.users.models import ADMIN_AREA, OPERATOR, LoginMethod, Role
from apps.users.services import user_record_login

AREA_NAMES = {
    OPERATOR: "Operator console",
    Role.ADMIN: "Settings",
    Role.EDITOR: "Content",
}


class SettingsAuthenticationForm(AdminAuthenticationForm):
    """Says why a right password does not open the admin, instead of Django's "staff account"."""

    def confirm_login_allowed(self, user):
        if user.is_active and user.admin_area is None:
            raise ValidationError(_no_access_reason(user), code="no_admin_access")
        super().confirm_login_allowed(user)


def _no_access_reason(user) -> str:
    if user.account_id is None:
        return f"{user.email} belongs to no account and is not an operator, so the admin is closed to it."
    return (
        f"{user.email} is a {user.get_role_display().lower()} of {user.account}: only the account's "
        "admins (Settings) and editors (content) use the admin. Ask an admin of your account."
    )


class ServiceAdminSite(admin.AdminSite):
    site_title = "Content Publishing admin"
    login_form = SettingsAuthenticationForm
    index_template = "admin/service_index.html"

    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, AccountScopedAdmin):
            # First in the order of classes, so the scoping wraps whatever the admin class does.
            admin_class = type(
                admin_class.__name__,
                (AccountScopedAdmin, admin_class),
                {"__module__": admin_class.__module__, "__doc__": admin_class.__doc__},
            )
        super().register(model_or_iterable, admin_class, **options)

    def each_context(self, request):
        context = super().each_context(request)
        user = request.user
        area = getattr(user, "admin_area", None)
        context["admin_area"] = area
        context["site_header"] = self._header(user, area)
        if area in ADMIN_AREA:
            context["area_account"] = user.account
        return context

    def _header(self, user, area) -> str:
        if area in ADMIN_AREA:
            return f"{user.account} · {AREA_NAMES[area]}"
        return "Content Publishing administration"

    def admin_view(self, view, cacheable=False):
        inner = super().admin_view(view, cacheable)

        def signed_in_without_access(request, *args, **kwargs):
            if self._signed_in_without_access(request):
                if request.path == reverse("admin:logout", current_app=self.name):
                    return view(request, *args, **kwargs)  # LogoutView: POST with a CSRF token only
                # Django would send them back to the login form without a word; say why.
                return self.no_access(request)
            return inner(request, *args, **kwargs)

        return update_wrapper(signed_in_without_access, inner)

    def _signed_in_without_access(self, request) -> bool:
        return request.user.is_authenticated and not self.has_permission(request)

    def no_access(self, request):
        context = {
            **self.each_context(request),
            "title": "No access",
            "reason": _no_access_reason(request.user),
            "logout_url": reverse("admin:logout", current_app=self.name),
        }
        return TemplateResponse(request, "admin/no_access.html", context, status=403)

    def login(self, request, extra_context=None):
        if request.method == "GET" and self._signed_in_without_access(request):
            return self.no_access(request)
        response = super().login(request, extra_context)
        # Django's LoginView answers a POST with a redirect only when the credentials were valid
        # and the user has been logged in; a failed attempt re-renders the form (200).
        if request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
            user_record_login(user=request.user, via=LoginMethod.ADMIN)
        return response
