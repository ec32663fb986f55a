"""The admin site: the operator's console and every account's Settings area in one.

Who gets in follows the user's role and status on every request (User.admin_area): the operator
sees every account; an account's admins get its Settings area, its editors its content; viewers
and users who are not active get no admin. Every registered ModelAdmin is scoped to the user's
account by AccountScopedAdmin, mixed in here at registration. Sign-ins are reported as user.login
events (the house rule keeps events out of signals, so the login view itself reports them).
Installed by `ServiceAdminConfig` (apps/users/admin_apps.py) in place of django.contrib.admin.
"""

from functools import update_wrapper
from urllib.parse import urlencode

from django import forms
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from apps.accounts.models import is_local_path
from apps.channels.models import Channel, Platform
from apps.core import step_up
from apps.core.admin import AccountScopedAdmin
from apps.core.errors import DomainError
from apps.users.models import ADMIN_AREA, OPERATOR, LoginMethod, Role
from apps.users.services import password_link_send, user_record_login

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


class ConfirmPasswordForm(forms.Form):
    """The step-up: the signed-in person's password, checked by authenticate() so that the sign-in
    throttle (django-axes) counts wrong ones as it counts them at the sign-in form."""

    password = forms.CharField(strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))

    def __init__(self, request, *args, **kwargs):
        self.request = request
        super().__init__(*args, **kwargs)

    def clean_password(self):
        user = self.request.user
        password = self.cleaned_data["password"]
        confirmed = authenticate(self.request, username=user.email, password=password)
        if confirmed is None or confirmed.pk != user.pk:
            raise ValidationError("That is not your password.", code="wrong_password")
        return password


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
        if area != OPERATOR:
            # "View site": the operator's is the service's home page (Django's); a member's, their blog.
            context["site_url"] = self._members_site_url(request, user.account_id) if area else None
        context["step_up_needed"] = user.is_authenticated and step_up.is_limited(request.session)
        return context

    @staticmethod
    def _members_site_url(request, account_id: int) -> str | None:
        """The public address of the account's first blog channel (by id) that has one, or None
        (no link). Read once per request, however many times a page builds its context."""
        if not hasattr(request, "_admin_site_url"):
            blog = (
                Channel.objects.filter(account_id=account_id, platform=Platform.BLOG)
                .filter(Q(handle__isnull=False) | Q(domain__isnull=False))
                .order_by("id")
                .only("platform", "handle", "domain")
                .first()
            )
            request._admin_site_url = blog.public_url() if blog is not None else None
        return request._admin_site_url

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
            if self._needs_step_up(request, view):
                return self.ask_for_password(request)
            return inner(request, *args, **kwargs)

        return update_wrapper(signed_in_without_access, inner)

    @staticmethod
    def _needs_step_up(request, view) -> bool:
        """A page of a ModelAdmin whose `step_up` covers it, in a session an SSO link started and no
        password has raised since. ModelAdmin pages arrive here as the model admin's bound methods;
        other views (buttons) carry the model admin as `model_admin`."""
        model_admin = getattr(view, "__self__", None) or getattr(view, "model_admin", None)
        policy = getattr(model_admin, "step_up", None)
        return (
            policy is not None
            and request.user.is_authenticated
            and step_up.is_limited(request.session)
            and step_up.applies(policy, getattr(view, "__name__", ""), request.method)
        )

    def ask_for_password(self, request):
        # After a refused POST the person comes back to the page, not to a repeat of the POST.
        query = urlencode({"next": request.get_full_path()})
        return HttpResponseRedirect(f"{reverse('admin:confirm_password', current_app=self.name)}?{query}")

    def get_urls(self):
        return [
            path("confirm-password/", self.admin_view(self.confirm_password), name="confirm_password"),
            *super().get_urls(),
        ]

    @staticmethod
    def _next_url(request) -> str:
        target = request.POST.get("next") or request.GET.get("next") or ""
        # The SSO links' rule for where a redirect may go: a path on this service.
        return target if is_local_path(target) else reverse("admin:index")

    @method_decorator(sensitive_post_parameters("password"))
    def confirm_password(self, request):
        """The step-up page: the password, or, for a user who has none, an e-mailed link to set one."""
        next_url = self._next_url(request)
        if not step_up.is_limited(request.session):
            return HttpResponseRedirect(next_url)
        user = request.user
        context = {**self.each_context(request), "title": "Confirm your password", "next": next_url}
        if not user.has_usable_password():
            if request.method == "POST":
                try:
                    context["sent"] = password_link_send(user=user)
                except DomainError as exc:
                    context["error"] = exc.message
                context["asked"] = True
            return TemplateResponse(request, "admin/confirm_password.html", context)
        form = ConfirmPasswordForm(request, request.POST if request.method == "POST" else None)
        if form.is_valid():
            step_up.confirm(request.session)
            return HttpResponseRedirect(next_url)
        return TemplateResponse(request, "admin/confirm_password.html", {**context, "form": form})

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
            step_up.mark_started_with_password(request.session)
            user_record_login(user=request.user, via=LoginMethod.ADMIN)
        return response
