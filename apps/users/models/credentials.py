"""API keys and SSO tokens: how a user's programs and links sign in as them.

They belong to the accounts app in Django's registry (`Meta.app_label`): their tables, their
migrations (apps/accounts/migrations) and their Settings area pages (/admin/accounts/apikey/) keep
the names they were created with. Their code lives here, with the users they sign in, so that
apps.accounts, which every app imports, imports no app itself (no cycle of packages)."""

import secrets
from datetime import datetime

from django.db import models
from django.utils import timezone

from apps.accounts.models import Account
from apps.core.crypto import hash_secret
from apps.core.fields import JSONField
from apps.core.local_paths import validate_local_path

KEY_PREFIX = "cps"


def split_api_key(raw: str) -> tuple[str, str] | None:
    """Return (lookup prefix, whole key) for a well-formed key, None otherwise."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or len(parts[1]) != 8 or not parts[2]:
        return None
    return parts[1], raw


class ApiKey(models.Model):
    """An API key. Only the SHA-256 of the key is stored; the key is shown once, at creation."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey("users.User", on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=8, unique=True, editable=False, help_text="Non-secret lookup part.")
    key_hash = models.CharField(max_length=64, editable=False)
    scopes = JSONField(default=list, blank=True)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "accounts"
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({KEY_PREFIX}_{self.prefix}_…)"

    def set_new_secret(self) -> str:
        """Give the key a fresh secret and return the full key, which is never stored."""
        self.prefix = secrets.token_hex(4)
        raw = f"{KEY_PREFIX}_{self.prefix}_{secrets.token_urlsafe(32)}"
        self.key_hash = hash_secret(raw)
        return raw

    def matches(self, raw: str) -> bool:
        return secrets.compare_digest(self.key_hash, hash_secret(raw))

    def is_usable(self, at: datetime | None = None) -> bool:
        at = at or timezone.now()
        return self.revoked_at is None and self.expires_at > at

    @property
    def display_key(self) -> str:
        return f"{KEY_PREFIX}_{self.prefix}_…"


SSO_TOKEN_PREFIX = "sso"  # noqa: S105 - a label, not a secret


class SsoTokenState(models.TextChoices):
    UNUSED = "unused", "Unused"
    USED = "used", "Used"
    EXPIRED = "expired", "Expired"


class SsoToken(models.Model):
    """A one-time sign-in link for a user. Only the SHA-256 of the token is stored; the token is
    returned once, when created."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="sso_tokens")
    user = models.ForeignKey("users.User", on_delete=models.CASCADE, related_name="sso_tokens")
    api_key = models.ForeignKey(
        ApiKey,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sso_tokens",
        help_text="The API key that created the token.",
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    redirect_to = models.CharField(max_length=2000, blank=True, validators=[validate_local_path])
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "accounts"
        ordering = ["-created_at"]
        verbose_name = "SSO token"

    def __str__(self) -> str:
        return f"SSO token #{self.pk} for {self.user_id}"

    def set_new_secret(self) -> str:
        """Give the token a fresh secret and return it; only its hash is kept."""
        raw = f"{SSO_TOKEN_PREFIX}_{secrets.token_urlsafe(32)}"
        self.token_hash = hash_secret(raw)
        return raw

    def state(self, at: datetime | None = None) -> str:
        if self.used_at is not None:
            return SsoTokenState.USED
        return SsoTokenState.EXPIRED if self.expires_at <= (at or timezone.now()) else SsoTokenState.UNUSED
