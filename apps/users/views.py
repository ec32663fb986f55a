"""The invitation page: an invited user sets a password through the e-mailed one-time link."""

from django.contrib.auth.forms import SetPasswordForm
from django.shortcuts import render
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
