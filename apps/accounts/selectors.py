"""Reads of the accounts app that more than one caller shares."""

from django.db import router

from apps.accounts.models import Account, ApiKey, split_api_key
from apps.core.coherence import Entries
from apps.core.prepared import PreparedLookup
from apps.users.models import User

# The prefix is unique: no ordering, one row.
_key_by_prefix = PreparedLookup(
    ApiKey,
    "prefix",
    ("00000000", "11111111"),
    lambda prefix: ApiKey.objects.select_related("account", "user").filter(prefix=prefix).order_by()[:1],
)

# What a key's entry in the shared cache holds of each row: every column but the user's password
# hash (nothing a request does with a key reads it; it is loaded from the database if asked for).
_KEY_FIELDS = tuple(field.attname for field in ApiKey._meta.concrete_fields)
_ACCOUNT_FIELDS = tuple(field.attname for field in Account._meta.concrete_fields)
_USER_FIELDS = tuple(field.attname for field in User._meta.concrete_fields if field.attname != "password")


def _values(instance, fields: tuple[str, ...]) -> tuple:
    return tuple(getattr(instance, name) for name in fields)


def _dump(api_key: ApiKey) -> tuple:
    return (
        _values(api_key, _KEY_FIELDS),
        _values(api_key.account, _ACCOUNT_FIELDS),
        _values(api_key.user, _USER_FIELDS),
    )


def _load(prefix: str) -> tuple | None:
    api_key = _key_by_prefix.first(prefix)
    return None if api_key is None else _dump(api_key)


def _build(values: tuple) -> ApiKey:
    """The key, its account and its user as the ORM would have loaded them (Model.from_db, the
    documented way to make instances from database values)."""
    key_values, account_values, user_values = values
    alias = router.db_for_read(ApiKey)
    api_key = ApiKey.from_db(alias, _KEY_FIELDS, key_values)
    api_key.account = Account.from_db(alias, _ACCOUNT_FIELDS, account_values)
    api_key.user = User.from_db(alias, _USER_FIELDS, user_values)
    return api_key


# Keys by prefix: invalidated by accounts 0006's triggers (`k:<prefix>`).
_keys = Entries("k", _load)


def api_key_find(raw: str) -> ApiKey | None:
    """The key (with its account and user) whose secret is `raw`, whatever its state; None for
    a malformed or unknown key. One SHA-256 and one constant-time comparison, after one read of
    the shared cache or, on a miss, one indexed query."""
    parts = split_api_key(raw)
    if parts is None:
        return None
    values = _keys.get(parts[0])
    if values is None:
        return None
    api_key = _build(values)
    if not api_key.matches(raw):
        return None
    return api_key
