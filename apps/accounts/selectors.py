"""Reads of the accounts app that more than one caller shares."""

from apps.accounts.models import Account, ApiKey, split_api_key
from apps.core.coherence import Columns, Entries
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
_KEY = Columns(ApiKey)
_ACCOUNT = Columns(Account)
_USER = Columns(User, lambda field: field.attname != "password")


def _dump(api_key: ApiKey) -> tuple:
    return _KEY.values(api_key), _ACCOUNT.values(api_key.account), _USER.values(api_key.user)


def _load(prefix: str) -> tuple | None:
    api_key = _key_by_prefix.first(prefix)
    return None if api_key is None else _dump(api_key)


def _build(values: tuple) -> ApiKey:
    """The key, its account and its user as the ORM would have loaded them."""
    key_values, account_values, user_values = values
    api_key = _KEY.instance(key_values)
    api_key.account = _ACCOUNT.instance(account_values)
    api_key.user = _USER.instance(user_values)
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
