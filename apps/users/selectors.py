"""Reads of users and their API keys that more than one caller shares. Every lookup of a user is
within one account: another account's user is never found."""

from django.db.models import Q, QuerySet

from apps.accounts.models import Account
from apps.core.coherence import Columns, Entries, Stored
from apps.core.prepared import PreparedLookup
from apps.core.scoping import of_account
from apps.users.models import ApiKey, User, parse_user_id, split_api_key


def user_of_account(*, account_id: int, user_id: object = None, email: str | None = None) -> User | None:
    """The account's user with this id (a user id as the API writes it, or an int) or this e-mail
    (any case); None when there is none."""
    users = of_account(User.objects.select_related("account"), account_id)
    if email is not None:
        return users.filter(email__iexact=email).first()
    pk = parse_user_id(user_id)
    return users.filter(pk=pk).first() if pk else None


def users_of_account(
    *, account_id: int, role: str | None = None, status: str | None = None, search: str = ""
) -> QuerySet[User]:
    """The users list, in creation order, with its filters; an empty value is no filter."""
    users = of_account(User.objects.order_by("id"), account_id)
    if role:
        users = users.filter(role=role)
    if status:
        users = users.filter(status=status)
    if search := search.strip():
        users = users.filter(Q(name__icontains=search) | Q(email__icontains=search))
    return users


# --- API keys ---------------------------------------------------------------------------------

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


def api_key_entry_values(api_key: ApiKey) -> tuple:
    """What a key's entry in the shared cache holds: the values of its row, its account's and its user's."""
    return _KEY.values(api_key), _ACCOUNT.values(api_key.account), _USER.values(api_key.user)


def _load(prefix: str) -> tuple | None:
    api_key = _key_by_prefix.first(prefix)
    return None if api_key is None else api_key_entry_values(api_key)


def _build(values: tuple) -> ApiKey:
    """The key, its account and its user as the ORM would have loaded them."""
    key_values, account_values, user_values = values
    api_key = _KEY.instance(key_values)
    api_key.account = _ACCOUNT.instance(account_values)
    api_key.user = _USER.instance(user_values)
    return api_key


# Keys by prefix: invalidated by accounts 0006's triggers (`k:<prefix>`).
_keys = Entries("k", _load)


def api_key_entry(api_key: ApiKey) -> Stored | None:
    """The key's entry in the shared cache when it holds exactly the values `api_key` was read with
    (its row, its account's and its user's); None when it is gone, being filled, or holds others."""
    stored = _keys.stored(api_key.prefix)
    return stored if stored is not None and stored.value == api_key_entry_values(api_key) else None


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
