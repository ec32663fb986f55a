"""Every account's data is scoped by one rule: a row belongs to the account its foreign keys lead
to. The admin scopes every page with it (apps/core/admin.py), and reads of the API that take an
account use it too, so a model added later is scoped the same way in both."""

from functools import cache

from django.apps import apps as django_apps
from django.conf import settings
from django.db import models


def is_account(model) -> bool:
    return model is django_apps.get_model(settings.ACCOUNT_MODEL)


@cache
def account_path(model: type[models.Model]) -> str | None:
    """The lookup from `model` to the id of the account its rows belong to: "pk" for the account
    itself, "account" for a model with the field, "channel__account" for a post, and so on
    (the shortest chain of foreign keys that every row has, else the shortest chain: a user's
    `account`, which operators lack). None when no chain leads to an account: such a model is the
    operator's alone. A row's optional link (a post's media item to an uploaded medium) never
    decides whose it is: the item of an external address has none."""
    if is_account(model):
        return "pk"
    return _shortest_path(model, required_only=True) or _shortest_path(model, required_only=False)


def _shortest_path(model: type[models.Model], *, required_only: bool) -> str | None:
    target = django_apps.get_model(settings.ACCOUNT_MODEL)
    paths: list[tuple[type[models.Model], str]] = [(model, "")]
    seen = {model}
    for _depth in range(4):
        further = []
        for current, prefix in paths:
            for field in current._meta.get_fields():
                if not (field.concrete and (field.many_to_one or field.one_to_one)) or field.related_model in seen:
                    continue
                if required_only and field.null:
                    continue
                path = f"{prefix}{field.name}"
                if field.related_model is target:
                    return path
                seen.add(field.related_model)
                further.append((field.related_model, f"{path}__"))
        paths = further
    return None


def of_account(queryset: models.QuerySet, account_id: int | None) -> models.QuerySet:
    """The rows of `queryset` that belong to the account; none for a model that belongs to no
    account, or for no account."""
    path = account_path(queryset.model)
    if path is None or account_id is None:
        return queryset.none()
    return queryset.filter(**{path: account_id})
