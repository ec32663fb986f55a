"""The admin site, with sign-ins reported as user.login events (the house rule keeps events out
of signals, so the login view itself reports them). Installed by `ServiceAdminConfig`
(apps/users/admin_apps.py) in place of django.contrib.admin."""

from django.contrib import admin

from apps.users.models import LoginMethod
from apps.users.services import user_record_login


class ServiceAdminSite(admin.AdminSite):
    site_header = "Content Publishing administration"
    site_title = "Content Publishing admin"

    def login(self, request, extra_context=None):
        response = super().login(request, extra_context)
        # Django's LoginView answers a POST with a redirect only when the credentials were valid
        # and the user has been logged in; a failed attempt re-renders the form (200).
        if request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
            user_record_login(user=request.user, via=LoginMethod.ADMIN)
        return response
