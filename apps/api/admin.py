"""Admin helpers shared by the apps."""

from django.contrib import messages
from django.db import transaction
from django.http import HttpResponseRedirect

from apps.api.exceptions import DomainError


class DomainErrorsAsMessages:
    """ModelAdmin mixin: a service's DomainError raised while saving or deleting (a rule the form
    cannot know, such as "the last admin") is shown as an error message on the same page instead
    of a server error, and everything the view did is rolled back."""

    def _with_domain_errors(self, view, request, *args, **kwargs):
        try:
            # One transaction for the whole view, so the admin's log entries go too when a rule refuses.
            with transaction.atomic():
                return view(request, *args, **kwargs)
        except DomainError as exc:
            self.message_user(request, exc.message, level=messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changeform_view(self, request, *args, **kwargs):
        return self._with_domain_errors(super().changeform_view, request, *args, **kwargs)

    def delete_view(self, request, *args, **kwargs):
        return self._with_domain_errors(super().delete_view, request, *args, **kwargs)

    def changelist_view(self, request, *args, **kwargs):
        return self._with_domain_errors(super().changelist_view, request, *args, **kwargs)
