"""The Settings area's own pages, beside Django's: the sign-in form's refusal, "No access", and the
step-up (the password asked of a session an SSO link started)."""

from urllib.parse import urlencode

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.core import step_up
from apps.core.errors import DomainError
from apps.core.local_paths import is_local_path
from apps.users.services import password_link_send


class SettingsAuthenticationForm(AdminAuthenticationForm):
    """Says why a right password does not open the admin, instead of Django's "staff account"."""

    def confirm_login_allowed(self, user):
        if user.is_active and user.admin_area is None:
            raise ValidationError(no_access_reason(user), code="no_admin_access")
        super().confirm_login_allowed(user)


def no_access_reason(user) -> str:
    if user.account_id is None:
        return f"{user.email} belongs to no account and is not an operator, so the admin is closed to it."
    return (
        f"{user.email} is a {user.get_role_display().lower()} of {user.account}: only the account's "
        "admins (Settings) and editors (content) use the admin. Ask an admin of your account."
    )


def no_access(site, request):
    context = {
        **site.each_context(request),
        "title": "No access",
        "reason": no_access_reason(request.user),
        "logout_url": reverse("admin:logout", current_app=site.name),
    }
    return TemplateResponse(request, "admin/no_access.html", context, status=403)


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


def ask_for_password(site, request):
    # After a refused POST the person comes back to the page, not to a repeat of the POST.
    query = urlencode({"next": request.get_full_path()})
    return HttpResponseRedirect(f"{reverse('admin:confirm_password', current_app=site.name)}?{query}")


def _next_url(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    # The SSO links' rule for where a redirect may go: a path on this service.
    return target if is_local_path(target) else reverse("admin:index")


def confirm_password(site, request):
    """The step-up page: the password, or, for a user who has none, an e-mailed link to set one."""
    next_url = _next_url(request)
    if not step_up.is_limited(request.session):
        return HttpResponseRedirect(next_url)
    user = request.user
    context = {**site.each_context(request), "title": "Confirm your password", "next": next_url}
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
