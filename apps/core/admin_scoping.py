"""One account's data: the scoping of every admin page (see apps/core/scoping.py), and lists that
take from their address only what they offer. Every model admin of the Settings area is built on
AccountScopedAdmin (the site refuses any other)."""

from functools import cache, reduce

from django.contrib.admin import RelatedFieldListFilter, RelatedOnlyFieldListFilter
from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from apps.core.json_input import storable_text
from apps.core.scoping import account_path, is_account, of_account


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
