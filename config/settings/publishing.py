"""Publishing (apps/publishing): the jobs that put posts on their channel's destination, and the keys
that encrypt the destinations' stored credentials. A destination kind's own settings are declared
by its package (its `conf` module: config/settings/__init__.py)."""

import base64
import hashlib

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from apps.core import env
from config.settings.environment import IS_PRODUCTION, SECRET_KEY


def _fernet_keys() -> list[str]:
    """FERNET_KEYS: Fernet keys, comma-separated, newest first. Production must set them (a start-up
    check: config/checks.py); development derives one of this checkout's own from its secret."""
    raw = env.text("FERNET_KEYS", "").strip()
    if not raw:
        return (
            [] if IS_PRODUCTION else [base64.urlsafe_b64encode(hashlib.sha256(SECRET_KEY.encode()).digest()).decode()]
        )
    keys = [key.strip() for key in raw.split(",") if key.strip()]
    for position, key in enumerate(keys, 1):
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                f"FERNET_KEYS: key {position} is not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from None
    return keys


# The destinations' stored credentials (tokens, deploy keys), encrypted with the first key and read
# with any of them.
FERNET_KEYS = _fernet_keys()

# Automatic retries of a job after its first attempt, in seconds (the webhook schedule by default).
PUBLISH_RETRY_DELAYS = env.int_list("PUBLISH_RETRY_DELAYS", "60,300,1800,7200")
# Seconds a destination gets for one operation (a fetch, a push); a job's whole run stops trying
# new operations after this too, so a hanging destination holds one thread for about twice it.
PUBLISH_TIMEOUT = env.positive_int("PUBLISH_TIMEOUT", 30)
# Jobs in flight at once per worker process (threads); a channel's jobs run one at a time.
PUBLISH_WORKERS = env.positive_int("PUBLISH_WORKERS", 8)
PUBLISH_SWEEP_INTERVAL = env.positive_int("PUBLISH_SWEEP_INTERVAL", 30)
