"""Every change to API keys and SSO tokens: creating, revoking and using them (their models are in
models/credentials.py). Users themselves change in services.py."""

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import ALL_SCOPES, Account
from apps.core.coherence import claim
from apps.core.errors import DomainError, Forbidden, Gone, NotFound
from apps.core.local_paths import validate_local_path
from apps.core.validation import field_error
from apps.users.models import ROLE_RANK, ApiKey, SsoToken, User, hash_secret


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
        raise field_error("scopes", "choice", f"Unknown scopes: {', '.join(unknown)}")
    if user.account_id != account.id:
        raise field_error("user", "account", "The key's user must belong to the key's account")
    if not name.strip():
        raise field_error("name", "required", "A key needs a name")
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
    resolution = settings.API_KEY_LAST_USED_RESOLUTION
    if api_key.last_used_at and now - api_key.last_used_at < timedelta(seconds=resolution):
        return
    # Requests that all found the key due at once (its cached copy is renewed by this very write)
    # leave the write to the first of them.
    if not claim(f"api-key-touch:{api_key.pk}", resolution):
        return
    ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    api_key.last_used_at = now


@transaction.atomic
def sso_token_create(
    *, account: Account, user: User, redirect_to: str = "", api_key: ApiKey | None = None
) -> tuple[SsoToken, str]:
    """Create a one-time sign-in token for an active user of the account; return it with the
    token itself, which is shown to the caller only now."""
    # An operator can never be signed in by an API key; the database keeps operators out of
    # every account, and this says so where the rule matters.
    if user.account_id != account.id or user.is_superuser:
        raise NotFound("No such user in this account.")
    # A link signs in as its user: a key must not reach a role above its owner's.
    if api_key is not None and ROLE_RANK[user.role] > ROLE_RANK[api_key.user.role]:
        raise Forbidden(
            f"The key's owner has the role {api_key.user.role}; it cannot make sign-in links for a user whose "
            f"role ({user.role}) is above that.",
            code="admin_required",
        )
    if not user.is_active:
        raise DomainError(f"{user.email} is {user.status}; only active users can sign in.", code="user_not_active")
    try:
        validate_local_path(redirect_to)
    except ValidationError as exc:
        raise field_error("redirect_to", "local_path", exc.messages[0]) from None
    token = SsoToken(
        account=account,
        user=user,
        api_key=api_key,
        redirect_to=redirect_to,
        expires_at=timezone.now() + timedelta(seconds=settings.SSO_TOKEN_TTL),
    )
    raw = token.set_new_secret()
    token.save()
    return token, raw


def sso_token_redeem(*, raw: str) -> SsoToken:
    """Use a token: return it (with its user) when it was unused, unexpired and its user is active.

    Raises NotFound (unknown token), Gone (used or expired; codes `sso_token_used`,
    `sso_token_expired`) or Forbidden (`user_not_active`). A token is used up by its first
    redemption, successful or refused for an inactive user.
    """
    tokens = SsoToken.objects.select_related("user__account")
    token = tokens.filter(token_hash=hash_secret(raw)).first() if raw else None
    if token is None:
        raise NotFound("This sign-in link is not valid.", code="sso_token_unknown")
    now = timezone.now()
    # One conditional UPDATE claims the token: of two concurrent redemptions the database lets
    # exactly one change the row, so a token signs in at most once.
    with transaction.atomic():
        claimed = SsoToken.objects.filter(pk=token.pk, used_at__isnull=True, expires_at__gt=now).update(used_at=now)
    if not claimed:
        if token.expires_at <= now:
            raise Gone("This sign-in link has expired.", code="sso_token_expired")
        raise Gone("This sign-in link has already been used.", code="sso_token_used")
    token.used_at = now
    if not token.user.is_active:
        raise Forbidden(f"The account of {token.user.email} is not active.", code="user_not_active")
    return token


def sso_tokens_prune(*, older_than_days: int | None = None) -> int:
    """Delete tokens that expired more than the history window ago."""
    days = older_than_days if older_than_days is not None else settings.SSO_TOKEN_HISTORY_DAYS
    deleted, _ = SsoToken.objects.filter(expires_at__lt=timezone.now() - timedelta(days=days)).delete()
    return deleted
