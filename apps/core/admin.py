"""What every app's admin shares: the base of every model admin (scoped to one account, lists that
take from their address only what they offer: apps/core/admin_scoping.py), domain errors shown as
messages, actions that run a service on each selected row, and buttons on an object's page. The
admin changes nothing itself; it calls the same services as the API."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse

from apps.core.admin_scoping import AccountScopedAdmin
from apps.core.destinations import kind_for
from apps.core.errors import DomainError, InvalidInput


class SettingsModelAdmin(AccountScopedAdmin, admin.ModelAdmin):
    """The base of a model admin of the Settings area: Django's, scoped to the user's account."""

    def _url_name(self, page: str) -> str:
        """The URL name (without "admin:") of this model admin's own page `page`, as Django names its own."""
        return f"{self.opts.app_label}_{self.opts.model_name}_{page}"


def also_read_only(fields, *names) -> tuple:
    """`fields` (a model admin's read-only fields) with `names` after them, each once."""
    return tuple(dict.fromkeys((*fields, *names)))


@dataclass
class PageState:
    """What one Settings-area request learns while it runs, for later steps of the same request:
    whether a refusal was reported (Django's success message then stays out), the account's public
    site address once looked up (a page builds its context several times), and a secret made by
    this request that its answer shows once (an API key: never stored in clear, never put in a
    message, which travels in a cookie). The one place this service keeps state on an admin
    request: `page_state(request)`, under PAGE_STATE."""

    refused: bool = False
    site_url_known: bool = False
    site_url: str | None = None
    shown_once: str | None = None


class ShownOnce:
    """A secret for a page to show: written out in full where the template puts it, but never in a
    repr, which is what reaches logs (the template engine logs a failed variable lookup, at DEBUG,
    with the whole context)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def __str__(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret, shown once>"


PAGE_STATE = "settings_area_page_state"


def page_state(request) -> PageState:
    state = getattr(request, PAGE_STATE, None)
    if state is None:
        state = PageState()
        setattr(request, PAGE_STATE, state)
    return state


class DomainErrorsAsMessages:
    """ModelAdmin mixin: a service's DomainError raised while saving or deleting (a rule the form
    cannot know, such as "the last admin" or a slug taken a moment ago) is shown as an error
    message on the same page instead of a server error, and everything the view did is rolled back.
    Where the model admin itself reports a refusal as an error (a post saved, its status refused),
    Django's "… was changed successfully" is left out: the error is the answer."""

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs):
        if level == messages.ERROR:
            page_state(request).refused = True
        elif level == messages.SUCCESS and page_state(request).refused:
            return
        super().message_user(request, message, level, *args, **kwargs)

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


# --- Buttons on an object's page ---------------------------------------------------------------


@dataclass(frozen=True)
class ObjectButton:
    """A button on an object's change page that POSTs to `<id>/<slug>/` and runs `service(obj)`
    for a user with `permission` ("change", "view"...) on the object; `done` is the message shown
    after it ran ("{result}" in it: what the service returned). `shown(obj)`: whether the page
    offers it now (pressed from a page left open, the service says why it does nothing).
    `unavailable(obj)`: why it cannot be pressed now ("" when it can): the page shows it disabled,
    with the reason as its title."""

    slug: str
    label: str
    service: Callable
    done: str
    permission: str = "change"
    shown: Callable | None = None
    unavailable: Callable | None = None


def first_message(exc: DomainError) -> str:
    """What a person is told of a refusal: its first error's own words (an InvalidInput's message
    names the API's field before them)."""
    return ((exc.details or {}).get("errors") or [{"message": exc.message}])[0]["message"]


def add_input_error(form, exc: InvalidInput) -> None:
    """A service's InvalidInput on an admin form: its first error, on the field it names where the
    form has that field (else above the form)."""
    field = (exc.details or {}).get("field")
    form.add_error(field if field in form.fields else None, first_message(exc))


def page_url(model_admin: admin.ModelAdmin, page: str, *args) -> str:
    """The URL of one of a model admin's own pages (`add`, `changelist`, `change` with the quoted pk,
    a button's) on the admin site it is registered with."""
    opts = model_admin.opts
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_{page}", args=args, current_app=model_admin.admin_site.name
    )


class ObjectButtonsAdmin(SettingsModelAdmin):
    """ModelAdmin with per-object buttons (`object_buttons`): the bulk actions' services, one
    object at a time, from its own page.

    Kept rather than django-object-actions (installed, 5.1.2): its change-action view looks the
    object up through the model's default manager, not the model admin's scoped get_object, so
    another account's id would be found (and a missing one answered 404, not as Django's change
    view answers it); it checks no permission, allows GET unless told otherwise, and its view
    carries no model admin for the step-up to read. Each of those would be written back here."""

    change_form_template = "admin/object_buttons_change_form.html"
    object_buttons: tuple[ObjectButton, ...] = ()

    def get_urls(self):
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path(f"<path:object_id>/{button.slug}/", self._button_view(button), name=self._button_url_name(button))
            for button in self.object_buttons
        ] + super().get_urls()

    def object_url(self, url_name: str, obj) -> str:
        """The URL of this site's page `url_name` (without "admin:") for `obj`."""
        return reverse(f"admin:{url_name}", args=(quote(obj.pk),), current_app=self.admin_site.name)

    def _button_url_name(self, button: ObjectButton) -> str:
        return self._url_name(button.slug.replace("-", "_"))

    def _may_press(self, request, obj, button: ObjectButton) -> bool:
        return getattr(self, f"has_{button.permission}_permission")(request, obj)

    def _button_view(self, button: ObjectButton):
        def view(request, object_id):
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            # get_object is scoped: another account's id is answered as one that does not exist.
            obj = self.get_object(request, unquote(object_id))
            # The order of Django's change view: no permission, no word on whether the id exists.
            if not self._may_press(request, obj, button):
                raise PermissionDenied
            if obj is None:
                return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
            # `done` may name what the service returned ("{result}": a connection test's answer).
            results: list = []
            run_on_selected(self, request, [obj], lambda target: results.append(button.service(target)))
            if results:
                self.message_user(request, button.done.format(result=results[0]))
            return HttpResponseRedirect(page_url(self, "change", quote(obj.pk)))

        # As ModelAdmin's own views carry it: the admin site reads the model admin's rules (step_up) from it.
        view.model_admin = self
        return self.admin_site.admin_view(view)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["object_buttons"] = [
                {
                    "label": button.label,
                    "url": self.object_url(self._button_url_name(button), obj),
                    "unavailable": button.unavailable(obj) if button.unavailable else "",
                }
                for button in self.object_buttons
                if self._may_press(request, obj, button) and (button.shown is None or button.shown(obj))
            ]
        return super().render_change_form(request, context, add, change, form_url, obj)


# --- What a channel's page says of where its posts go, and a post's preview: each destination's
# Settings-area module (its DestinationKind.admin) defines `setup_link` and may define `post_preview`.


@dataclass(frozen=True)
class SetupLink:
    """A sentence, a link to the page that sets the channel's destination up (an admin URL name,
    without "admin:", and its arguments), and a warning where something needs doing."""

    text: str
    url_name: str
    link_text: str
    args: tuple = ()
    query: str = ""
    warning: str = ""
    # Drawn as a button (an action to take, such as "Connect" an account), not as a plain link.
    button: bool = False


def _kind_admin(platform: str, name: str) -> Callable | None:
    """A function of the platform's destination's Settings-area module, or None (no destination, or
    it defines none). Found by name in the module the kind declares, so that module needs no
    registration of its own beside the kind's."""
    kind = kind_for(platform)
    if kind is None or not kind.admin:
        return None
    return getattr(import_module(kind.admin), name, None)


def channel_setup(*, channel_id: int, platform: str) -> SetupLink | None:
    describe = _kind_admin(platform, "setup_link")
    return describe(channel_id) if describe is not None else None


def post_preview(platform: str) -> Callable | None:
    """The post as its channel's destination will post it (HTML, from the post's publishing
    document), where the destination shows one."""
    return _kind_admin(platform, "post_preview")
