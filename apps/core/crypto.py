"""Credentials stored encrypted (destinations' tokens and keys): MultiFernet over FERNET_KEYS, newest key
first. A value is encrypted with the newest key and read with any, so a key is rotated by putting
a new one in front, running `manage.py rotate_credentials`, then dropping the old one. And the
random secrets the service only compares (API keys, SSO tokens, the confirm links of subscriptions), stored
as their digest (hash_secret)."""

import hashlib
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class CredentialUnreadable(Exception):
    """A stored credential that none of FERNET_KEYS opens (a key dropped too early)."""


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def _current() -> MultiFernet:
    return _fernet(tuple(settings.FERNET_KEYS))


def encrypt(value: str) -> str:
    return _current().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise CredentialUnreadable(
            "A stored credential cannot be read with the configured FERNET_KEYS (was the key that "
            "encrypted it removed?); enter the credential again."
        ) from None


def reencrypt(token: str) -> str:
    """The same value encrypted with the newest key."""
    try:
        return _current().rotate(token.encode()).decode()
    except InvalidToken:
        raise CredentialUnreadable("A stored credential cannot be read with the configured FERNET_KEYS.") from None


def hash_secret(raw: str) -> str:
    """How a random secret that is only ever compared is stored: whoever reads the table cannot use it.

    The secrets are 256-bit (or at least 192-bit) random values, so a fast hash is as safe as a slow
    one and keeps a lookup to one digest per request."""
    return hashlib.sha256(raw.encode()).hexdigest()
