"""What every app's admin shares: domain errors shown as messages, and actions that run a service
on each selected row. The admin changes nothing itself; it calls the same services as the API."""

from collections.abc import Callable, Iterable

from django.contrib import messages
from django.db import transaction
from django.http import HttpResponseRedirect

from apps.core.errors import DomainError


class DomainErrorsAsMessages:
    """ModelAdmin mixin: a service's DomainError raised while saving or deleting (a rule the form
    cannot know, such as "the last admin" or a slug taken a moment ago) is shown as an error
    message on the same page instead of a server error, and everything the view did is rolled back."""

    def _with_domain_errors(self, view, request, *args, **kwargs):
        try:
            # One transaction for the whole view, so the admin's log entries go too when a rule refuses.
            with transaction.atomic():
                return view(request, *args, **kwargs)
        except DomainError as exc:
            self.message_user(request, f"Nothing was changed: {exc.message}", level=messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changeform_view(self, request, *args, **kwargs):
        return self._with_domain_errors(super().changeform_view, request, *args, **kwargs)

    def delete_view(self, request, *args, **kwargs):
        return self._with_domain_errors(super().delete_view, request, *args, **kwargs)

    def changelist_view(self, request, *args, **kwargs):
        return self._with_domain_errors(super().changelist_view, request, *args, **kwargs)


def run_on_selected(
    model_admin,
    request,
    selected: Iterable,
    service: Callable,
    *,
    done: str | None = None,
    label: Callable[[object], str] = str,
) -> int:
    """An admin action: `service(obj)` for each selected object. One that a rule refuses is
    reported as an error naming it (`label(obj)`) and the others go on; `done` (with `{count}`)
    reports those that succeeded. Returns their number."""
    succeeded = 0
    for obj in selected:
        try:
            service(obj)
        except DomainError as exc:
            model_admin.message_user(request, f"{label(obj)}: {exc.message}", level=messages.ERROR)
        else:
            succeeded += 1
    if succeeded and done:
        model_admin.message_user(request, done.format(count=succeeded))
    return succeeded
