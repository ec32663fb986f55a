"""What every app's admin shares: the scoping of each page to one account, lists that take from
their address only what they offer, domain errors shown as messages, and actions that run a
service on each selected row. The admin changes nothing itself; it calls the same services as the API."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, reduce

from django.contrib import admin, messages
from django.contrib.admin import RelatedFieldListFilter, RelatedOnlyFieldListFilter
from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import get_fields_from_path, quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db import models, transaction
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import path, reverse

from apps.core.errors import DomainError, InvalidInput
from apps.core.json_input import storable_text
from apps.core.scoping import account_path, is_account, of_account


class DomainErrorsAsMessages:
    """ModelAdmin mixin: a service's DomainError raised while saving or deleting (a rule the form
    cannot know, such as "the last admin" or a slug taken a moment ago) is shown as an error
    message on the same page instead of a server error, and everything the view did is rolled back.
    Where the model admin itself reports a refusal as an error (a post saved, its status refused),
    Django's "… was changed successfully" is left out: the error is the answer."""

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs):
        if level == messages.ERROR:
            request._admin_refused = True
        elif level == messages.SUCCESS and getattr(request, "_admin_refused", False):
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
    offers it now (pressed from a page left open, the service says why it does nothing)."""

    slug: str
    label: str
    service: Callable
    done: str
    permission: str = "change"
    shown: Callable | None = None


def add_input_error(form, exc: InvalidInput) -> None:
    """A service's InvalidInput on an admin form: its first error, on the field it names where the
    form has that field (else above the form)."""
    details = exc.details or {}
    message = (details.get("errors") or [{"message": exc.message}])[0]["message"]
    field = details.get("field")
    form.add_error(field if field in form.fields else None, message)


def page_url(model_admin: admin.ModelAdmin, page: str, *args) -> str:
    """The URL of one of a model admin's own pages (`add`, `changelist`, `change` with the quoted pk,
    a button's) on the admin site it is registered with."""
    opts = model_admin.opts
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_{page}", args=args, current_app=model_admin.admin_site.name
    )


class ObjectButtonsAdmin(admin.ModelAdmin):
    """ModelAdmin with per-object buttons (`object_buttons`): the bulk actions' services, one
    object at a time, from its own page."""

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

    def _url_name(self, page: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{page}"

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
                {"label": button.label, "url": self.object_url(self._button_url_name(button), obj)}
                for button in self.object_buttons
                if self._may_press(request, obj, button) and (button.shown is None or button.shown(obj))
            ]
        return super().render_change_form(request, context, add, change, form_url, obj)


# --- What a channel's page says of where its posts go (each publishing destination's admin registers it) ---


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
    # Drawn as a button (an action to take, such as "Connect LinkedIn"), not as a plain link.
    button: bool = False


_channel_setups: dict[str, Callable[[int], SetupLink]] = {}


def register_channel_setup(platform: str, describe: Callable[[int], SetupLink]) -> None:
    _channel_setups[platform] = describe


def channel_setup(*, channel_id: int, platform: str) -> SetupLink | None:
    describe = _channel_setups.get(platform)
    return describe(channel_id) if describe is not None else None


# A post's page shows it as its channel's destination will post it (the LinkedIn text): the
# destination's admin registers a function of the post's publishing document, giving HTML.
_post_previews: dict[str, Callable] = {}


def register_post_preview(platform: str, preview: Callable) -> None:
    _post_previews[platform] = preview


def post_preview(platform: str) -> Callable | None:
    return _post_previews.get(platform)


# --- One account's data: the scoping of every admin page (see apps/core/scoping.py) ----------


def own_account_id(request) -> int | None:
    """The account a signed-in user of an account works in; None for an operator."""
    return None if request.user.is_superuser else request.user.account_id


def scoped(request, queryset: models.QuerySet) -> models.QuerySet:
    """`queryset` cut down to what the request's user may see: everything for an operator, the
    rows of their own account for anyone else, nothing of a model that belongs to no account."""
    if request.user.is_superuser:
        return queryset
    return of_account(queryset, request.user.account_id)


class AccountRelatedFilter(RelatedFieldListFilter):
    """A list filter on a related object that offers only the related objects the user may see."""

    def field_choices(self, field, request, model_admin):
        visible = scoped(request, field.related_model._default_manager.all()).values("pk")
        ordering = self.field_admin_ordering(field, request, model_admin)
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to={"pk__in": visible})


# --- Lists: what a list page takes from its address ---------------------------------------------

# Longer than any value a list's own links carry or a person types into its search box. A longer
# one only makes the database work: each word of a search is a LIKE on every search field.
LIST_VALUE_MAX_CHARS = 1000


def list_value_taken(text: str) -> bool:
    """Whether a list may pass `text` from its address on to the database: not over-long, and no
    NUL or lone surrogate, which PostgreSQL refuses as a parameter (the issue's 500)."""
    return len(text) <= LIST_VALUE_MAX_CHARS and storable_text(text)


class OwnFiltersChangeList(ChangeList):
    """Every model admin's list (AccountScopedAdmin.get_changelist). It takes from its address only
    what the page offers, and answers anything else with the admin's own errors, never a 500:
    - a name or value with NUL or a lone surrogate, or over LIST_VALUE_MAX_CHARS: Django's "?e=1"
      redirect to the list without filters;
    - a lookup that none of the page's filters and date links makes: 400, as Django answers a
      lookup across relations it does not allow. Django allows any lookup on a model's own fields,
      which would read what no page shows (`password__startswith=`, a key's hash, a signing secret:
      letter by letter) or fail in the database (`__regex=(`, `__range=x`, `__year=-1`);
    - a date link's year, month or day that makes no date (year 10^30, the year after 9999): ?e=1.
    Ordering (`o=`), pages (`p=`) and `_to_field` (400) Django itself checks. (A raw-id popup's
    `limit_choices_to` lookups would be refused too: no model admin has raw_id_fields.)"""

    def __init__(self, request, *args, **kwargs):
        if not all(list_value_taken(text) for name, values in request.GET.lists() for text in (name, *values)):
            raise IncorrectLookupParameters("A name or value in the address is not one a list takes.")
        super().__init__(request, *args, **kwargs)

    def get_filters(self, request):
        try:
            found = super().get_filters(request)
        except (ValueError, OverflowError) as exc:
            # The date links' bounds: a year too large for datetime(), or the year after 9999
            # (Django guards only the first datetime() it makes, and for ValueError only).
            raise IncorrectLookupParameters(exc) from exc
        remaining_lookups = found[2]  # what no filter of the page took
        not_offered = set(remaining_lookups) - self._date_hierarchy_lookups(request)
        if not_offered:
            raise DisallowedModelAdminLookup(f"Filtering by {', '.join(sorted(not_offered))} not allowed")
        return found

    def _date_hierarchy_lookups(self, request) -> set[str]:
        """The bounds Django makes of the date links' year (month, day), in place of any given."""
        field = self.date_hierarchy
        if not field or f"{field}__year" not in request.GET:
            return set()
        return {f"{field}__gte", f"{field}__lt"}


@cache
def _own_filters_only(changelist_class: type[ChangeList]) -> type[ChangeList]:
    if issubclass(changelist_class, OwnFiltersChangeList):
        return changelist_class
    return type(changelist_class.__name__, (OwnFiltersChangeList, changelist_class), {})


class AccountScopedAdmin:
    """Mixed into every ModelAdmin by the admin site (ServiceAdminSite.register), so that a model
    registered later is scoped without a line of its own: rows, the objects of change, delete and
    history pages (another account's id is answered as an id that does not exist), actions,
    autocomplete and raw-id lookups (through the related model's admin), foreign-key and
    many-to-many choices, and list filters. For a user of an account the account itself is
    never a choice: forms show it read-only and fill it in. Lists and searches take only what
    they offer from their address (OwnFiltersChangeList)."""

    def get_queryset(self, request):
        return scoped(request, super().get_queryset(request))

    def get_changelist(self, request, **kwargs):
        return _own_filters_only(super().get_changelist(request, **kwargs))

    def get_search_results(self, request, queryset, search_term):
        # The autocomplete's term comes here unchecked (a list's `q` was checked with its address).
        if not list_value_taken(search_term):
            return queryset.none(), False  # no row holds NUL; an over-long term is not searched for
        return super().get_search_results(request, queryset, search_term)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        return _scoped_choices(request, super().formfield_for_foreignkey(db_field, request, **kwargs))

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        return _scoped_choices(request, super().formfield_for_manytomany(db_field, request, **kwargs))

    def _fills_in_account(self, request) -> bool:
        """Whether the model's own `account` field is the user's to leave alone (not an operator)."""
        return own_account_id(request) is not None and account_path(self.model) == "account"

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        if self._fills_in_account(request) and "account" not in fields:
            fields += ("account",)
        return fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None or not self._fills_in_account(request):
            return form
        account_id = own_account_id(request)

        class InOwnAccount(form):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.instance.account_id = account_id

        return InOwnAccount

    def get_list_display(self, request):
        columns = list(super().get_list_display(request))
        path = account_path(self.model)
        if path in (None, "pk"):
            return columns
        if not request.user.is_superuser:
            return [column for column in columns if column != "account"]
        if path != "account":
            # The operator's lists all say whose a row is, however far the account is.
            columns.append(_account_column(path))
        elif "account" not in columns:
            columns.append("account")
        return columns

    def get_list_select_related(self, request):
        related = super().get_list_select_related(request)
        path = account_path(self.model)
        if not request.user.is_superuser or path in (None, "pk") or related is True:
            return related
        if related is False:  # Django would have joined the related columns shown; still do
            related = [name for name in self.list_display if _is_relation(self.model, name)]
        return (*related, path)

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        path = account_path(self.model)
        if request.user.is_superuser:
            if path not in (None, "pk") and not any(_names_account(self.model, item) for item in filters):
                filters.append(path)
            return filters
        return [scoped_filter for item in filters if (scoped_filter := self._scoped_filter(item)) is not None]

    def _scoped_filter(self, item):
        if isinstance(item, type):
            return item  # a filter of the admin's own, which filters the scoped rows
        name, filter_class = (item, None) if isinstance(item, str) else item
        related = get_fields_from_path(self.model, name)[-1].related_model
        if related is None:
            return item
        if is_account(related):
            return None  # their own account is the only one
        if filter_class is not None and issubclass(filter_class, RelatedOnlyFieldListFilter):
            return item  # offers only what the (scoped) rows refer to
        return (name, AccountRelatedFilter)


def _is_relation(model, name) -> bool:
    try:
        return model._meta.get_field(name).many_to_one
    except (FieldDoesNotExist, TypeError):
        return False


def _names_account(model, item) -> bool:
    return isinstance(item, str) and is_account(get_fields_from_path(model, item)[-1].related_model)


@cache
def _account_column(path: str):
    def account(obj):
        return reduce(getattr, path.split("__"), obj)

    account.short_description = "account"
    account.admin_order_field = path
    return account


def _scoped_choices(request, formfield):
    queryset = getattr(formfield, "queryset", None)
    if queryset is None:
        return formfield
    formfield.queryset = scoped(request, queryset)
    path = account_path(queryset.model)
    if request.user.is_superuser and path not in (None, "pk"):
        # The operator picks among every account's objects: each choice names its account.
        formfield.queryset = formfield.queryset.select_related(path)
        formfield.label_from_instance = lambda obj: f"{obj} ({reduce(getattr, path.split('__'), obj)})"
    return formfield
