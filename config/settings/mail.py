"""E-mail: the backend that sends it (SMTP, or a provider through django-anymail) and the sender.
Production's refusals (a backend that does not send, a provider's webhooks without their secret)
are start-up checks: config/checks.py."""

import json
import re

from django.core.exceptions import ImproperlyConfigured

from apps.core import env
from config.settings.environment import BASE_DIR, IS_PRODUCTION, VAR_DIR

# Development prints each e-mail (invitation links included) to the process's output and writes it
# to EMAIL_FILE_PATH as an .eml file of its own (apps/core/mail_files.py); production sends them over
# SMTP and refuses the backends that would write them, with their one-time tokens, to a log or a
# file (or keep them in memory, unsent).
EMAIL_BACKEND = env.text(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if IS_PRODUCTION else "apps.core.mail_files.EmailBackend",
)
# A relative path is the checkout's, wherever the process was started from.
EMAIL_FILE_PATH = BASE_DIR / env.text("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
UNSENT_EMAIL_BACKENDS = {
    *(f"django.core.mail.backends.{name}.EmailBackend" for name in ("console", "filebased", "locmem")),
    "apps.core.mail_files.EmailBackend",
}
EMAIL_HOST = env.text("EMAIL_HOST", "localhost")
EMAIL_PORT = env.integer("EMAIL_PORT", 25)
EMAIL_HOST_USER = env.text("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env.text("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env.boolean("EMAIL_USE_TLS", default=False)
# Seconds a mail server may take to answer: a hung one must not hold a request or a thread for ever.
EMAIL_TIMEOUT = env.positive_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env.text("DEFAULT_FROM_EMAIL", "Content Publishing <noreply@localhost>")


def _anymail() -> dict:
    """Every ANYMAIL_<NAME> variable as django-anymail's setting <NAME>: a provider's API key, sender
    domain or webhook signing key (ANYMAIL_POSTMARK_SERVER_TOKEN, ANYMAIL_MAILGUN_WEBHOOK_SIGNING_KEY...).
    Text, except true/false (a flag), a JSON object or list (SEND_DEFAULTS, AMAZON_SES_CLIENT_PARAMS)
    and REQUESTS_TIMEOUT (seconds). WEBHOOK_SECRET is `user:password`, several comma-separated while
    a provider's webhook moves to a new one."""
    found: dict = {}
    for name, written in sorted(env.starting_with("ANYMAIL_").items()):
        raw = written.strip()
        if not raw:
            continue
        key = name.removeprefix("ANYMAIL_")
        if raw.lower() in {"true", "false"}:
            found[key] = raw.lower() == "true"
        elif raw[0] in "{[":
            try:
                found[key] = json.loads(raw)
            except ValueError as exc:
                raise ImproperlyConfigured(f"{name} must be valid JSON, got {raw!r}: {exc}") from exc
        elif key == "REQUESTS_TIMEOUT":
            if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", raw) or float(raw) <= 0:
                raise ImproperlyConfigured(f"{name} must be a positive number of seconds, got {raw!r}")
            found[key] = float(raw)
        elif key == "WEBHOOK_SECRET":
            found[key] = [secret.strip() for secret in raw.split(",")]
            if not all(re.fullmatch(r"[^:\s]+:\S+", secret) for secret in found[key]):
                raise ImproperlyConfigured(
                    f"{name} must be user:password (several comma-separated while rotating), without spaces"
                )
        else:
            found[key] = raw
    return found


# E-mail providers through django-anymail (EMAIL_BACKEND=anymail.backends.<esp>.EmailBackend).
ANYMAIL = _anymail()
