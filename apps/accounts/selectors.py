"""Reads of the accounts app that more than one caller shares."""

from apps.accounts.models import ApiKey, split_api_key
from apps.core.prepared import PreparedLookup

# The prefix is unique: no ordering, one row.
_key_by_prefix = PreparedLookup(
    ApiKey,
    "prefix",
    ("00000000", "11111111"),
    lambda prefix: ApiKey.objects.select_related("account", "user").filter(prefix=prefix).order_by()[:1],
)


def api_key_find(raw: str) -> ApiKey | None:
    """The key (with its account and user) whose secret is `raw`, whatever its state; None for
    a malformed or unknown key. One indexed query, one SHA-256, one constant-time comparison."""
    parts = split_api_key(raw)
    if parts is None:
        return None
    api_key = _key_by_prefix.first(parts[0])
    if api_key is None or not api_key.matches(raw):
        return None
    return api_key
