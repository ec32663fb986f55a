"""The start-up checks: whether the settings fit together, as Django system checks (`manage.py check`).

config/settings reads each value (one that cannot be read stops there); these hold production to its
policies. Every process runs them at start-up and refuses to start on an error: manage.py's commands
(Django runs the checks before a command), the web process (config/server/process.py) and Celery's worker and
beat (config/celery.py), through `refuse_to_start_on_errors`.

They live in config, not in an app: they judge the deployment's settings, which config owns, and the
import contracts let config read the apps' names (apps.core.mail_files) while no app may import config.
They are registered when config is imported (config/__init__.py), which every process does first: its
settings are config.settings.
"""

import subprocess
import sys

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from apps.core import env
from apps.media.storage import LOCAL_BACKEND


# Production refuses what would expose it: debug pages (settings, code, SQL), a secret short enough
# to guess (Django's deploy check asks for 50 characters, 5 of them different), and a Host header
# taken from anyone (password-reset and invitation links are built from it).
@register(Tags.security)
def production_exposes_nothing(app_configs=None, **kwargs) -> list[Error]:
    if not settings.IS_PRODUCTION:
        return []
    errors = []
    if settings.DEBUG:
        errors.append(Error("DEBUG must be false when ENVIRONMENT=production", id="cps.E001"))
    if len(settings.SECRET_KEY) < settings.SECRET_KEY_MIN_LENGTH or len(set(settings.SECRET_KEY)) < 5:
        errors.append(
            Error(
                f"SECRET_KEY must be at least {settings.SECRET_KEY_MIN_LENGTH} characters, at least 5 of them "
                "different, when ENVIRONMENT=production (for example: python -c 'import secrets; "
                "print(secrets.token_urlsafe(50))')",
                id="cps.E002",
            )
        )
    if "*" in settings.ALLOWED_HOSTS or not settings.ALLOWED_HOSTS:
        errors.append(
            Error(
                "ALLOWED_HOSTS must name the service's host names (not '*') when ENVIRONMENT=production",
                id="cps.E003",
            )
        )
    return errors


# Production sends e-mail: the backends that would write it, with its one-time tokens, to a log or a
# file (or keep it in memory, unsent) are refused. A provider's bounce and complaint webhooks are
# served only with their basic-auth secret, and a provider sending the mail needs them: unanswered
# bounces ruin a sender's name.
@register(Tags.security)
def production_sends_e_mail(app_configs=None, **kwargs) -> list[Error]:
    if not settings.IS_PRODUCTION:
        return []
    if settings.EMAIL_BACKEND in settings.UNSENT_EMAIL_BACKENDS:
        return [
            Error(
                f"EMAIL_BACKEND {settings.EMAIL_BACKEND!r} writes e-mails (and the tokens in them) where they are "
                "not sent; set a backend that sends them (for example django.core.mail.backends.smtp.EmailBackend) "
                "in production",
                id="cps.E004",
            )
        ]
    if settings.EMAIL_BACKEND.startswith("anymail.") and "WEBHOOK_SECRET" not in settings.ANYMAIL:
        return [
            Error(
                "ANYMAIL_WEBHOOK_SECRET (user:password) must be set when EMAIL_BACKEND is a provider's in "
                "production: its bounce and complaint webhooks are not served without it",
                id="cps.E005",
            )
        ]
    return []


# Production's stored credentials are encrypted with keys of its own, never with one derived from
# the secret (development's).
@register(Tags.security)
def production_has_its_keys(app_configs=None, **kwargs) -> list[Error]:
    if settings.IS_PRODUCTION and not settings.FERNET_KEYS:
        return [
            Error(
                "FERNET_KEYS must be set when ENVIRONMENT=production (comma-separated, newest first; make one with "
                "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')",
                id="cps.E006",
            )
        ]
    return []


# Uploads in the checkout's var/media are on one machine's disk: a worker elsewhere could not read
# them to make their copies, nor another machine's web process serve them. A broker other than the
# embedded one (which is one machine's folder) is what lets processes run on several machines; a
# folder named on purpose (MEDIA_ROOT, file://) may be a shared mount, so only the default warns.
@register()
def production_shares_its_media(app_configs=None, **kwargs) -> list[Warning]:
    on_one_disk = settings.MEDIA_STORAGE["BACKEND"] == LOCAL_BACKEND and settings.MEDIA_ROOT == env.VAR_DIR / "media"
    if not settings.IS_PRODUCTION or not on_one_disk or settings.CELERY_BROKER_URL == "filesystem://":
        return []
    return [
        Warning(
            "Uploads are stored on this machine's disk (var/media) while the broker lets workers and web processes "
            "run on other machines, which would not see them",
            hint="Set MEDIA_STORAGE_URL to a shared store (s3://<bucket>/<prefix>?endpoint_url=..., docs/media.md), "
            "or MEDIA_ROOT to a folder every machine mounts",
            id="cps.W001",
        )
    ]


def refuse_to_start_on_errors() -> None:
    """Run the system checks as manage.py does before a command (Django set up first): warnings are
    printed, an error stops the process with the checks' report (SystemExit, status 1)."""
    import django
    from django.apps import apps
    from django.core.management.base import BaseCommand, CommandError

    if not apps.ready:
        django.setup()
    try:
        BaseCommand().check(display_num_errors=False)
    except CommandError as error:  # SystemCheckError, its report
        raise SystemExit(str(error)) from None


def refuse_to_serve_on_errors(*, preload: bool) -> None:
    """The web process's start-up checks, before granian binds its port. Without preloading, that
    process does not set Django up: the workers forked from it import the application themselves (a
    replaced one runs the code on disk), so the checks run in a process of their own."""
    if preload:
        refuse_to_start_on_errors()
        return
    checked = subprocess.run(
        [sys.executable, "-c", "from config.checks import refuse_to_start_on_errors; refuse_to_start_on_errors()"],
        check=False,
    )
    if checked.returncode:
        raise SystemExit(checked.returncode)
