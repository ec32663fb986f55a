"""The web pages of users: signing in (one-time SSO links, the password sign-in page, and the page a
signed-in user lands on) and e-mailed one-time links (an invitation, and a first password for a user
who has none)."""

from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.api.errors import status_of
from apps.core import step_up
from apps.core.errors import DomainError
from apps.core.local_paths import is_local_path
from apps.users.credentials import sso_token_redeem
from apps.users.models import LoginMethod
from apps.users.services import invitation_accept, invitation_user, user_record_login


@never_cache
@require_GET
def sso_login(request):
    """`GET /sso/login?token=...`: sign the token's user in once, then redirect. A missing,
    unknown, used or expired token (or an inactive user) gets an error page and no session."""
    try:
        token = sso_token_redeem(raw=request.GET.get("token", ""))
    except DomainError as exc:
        context = {"code": exc.code, "message": exc.message}
        return render(request, "users/sso_error.html", context, status=status_of(exc))
    login(request, token.user, backend="apps.settings_area.access.AccessBackend")
    # A key made this link: the session is limited until a password is typed in it (core/step_up.py).
    step_up.mark_started_by_sso(request.session)
    user_record_login(user=token.user, via=LoginMethod.SSO)
    # Checked when the token was created; checked again because this is where an open redirect would happen.
    target = token.redirect_to if is_local_path(token.redirect_to) else resolve_url("web-home")
    return redirect(target)


class SignInView(auth_views.LoginView):
    template_name = "web/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form):
        response = super().form_valid(form)
        step_up.mark_started_with_password(self.request.session)
        user_record_login(user=form.get_user(), via=LoginMethod.PASSWORD)
        return response


@login_required
def home(request):
    return render(request, "web/home.html")


@never_cache
def accept_invitation(request):
    token = request.POST.get("token") or request.GET.get("token", "")
    user = invitation_user(token) if token else None
    if user is None:
        return render(request, "users/invitation_invalid.html", status=404)
    form = SetPasswordForm(user, request.POST if request.method == "POST" else None)
    if form.is_valid():
        try:
            invitation_accept(token=token, password=form.cleaned_data["new_password1"])
        except DomainError:  # the same link submitted twice at once: the other submission won
            return render(request, "users/invitation_invalid.html", status=404)
        return render(request, "users/invitation_done.html", {"invited": user})
    return render(request, "users/invitation_accept.html", {"form": form, "token": token, "invited": user})


class SetPasswordView(auth_views.PasswordResetConfirmView):
    """The e-mailed link of a user who has no password yet (password_link_send): Django's view, which
    moves the token out of the address before showing the form. Setting the password ends the
    user's other sessions (their session hash changes), the SSO one included."""

    template_name = "users/password_set.html"
    success_url = reverse_lazy("password-set-done")


def password_set_done(request):
    return render(request, "users/password_set_done.html")
