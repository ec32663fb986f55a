from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import ALL_SCOPES, Account, ApiKey
from apps.api.exceptions import InvalidInput
from apps.users.models import User


@transaction.atomic
def api_key_create(
    *,
    account: Account,
    user: User,
    name: str,
    scopes: list[str],
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with the full secret, which is shown to the caller only now."""
    unknown = sorted(set(scopes) - set(ALL_SCOPES))
    if unknown:
        raise InvalidInput(f"Unknown scopes: {', '.join(unknown)}", details={"field": "scopes", "rule": "choice"})
    if user.account_id != account.id:
        raise InvalidInput("The key's user must belong to the key's account", details={"field": "user"})
    if not name.strip():
        raise InvalidInput("A key needs a name", details={"field": "name", "rule": "required"})
    if expires_at is None:
        expires_at = timezone.now() + timedelta(days=settings.API_KEY_DEFAULT_TTL_DAYS)
    api_key = ApiKey(
        account=account,
        user=user,
        name=name.strip(),
        scopes=[s for s in ALL_SCOPES if s in scopes],
        expires_at=expires_at,
    )
    raw = api_key.set_new_secret()
    api_key.save()
    return api_key, raw


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def api_key_touch(*, api_key: ApiKey) -> None:
    """Record use, at most once per API_KEY_LAST_USED_RESOLUTION seconds per key."""
    now = timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION):
        return
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    api_key.last_used_at = now
