"""The pages of e-mailed one-time links: an invitation, and a first password for a user who has none."""

from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import SetPasswordForm
from django.shortcuts import render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache

from apps.core.errors import DomainError
from apps.users.services import invitation_accept, invitation_user


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
