"""Mastodon connections: the instance's address checked, the service's app registered on it (once per
instance and callback address), the access an account granted stored, the statuses' visibility and
language, the instance's limits kept fresh, and losing access. Tokens and the app's secret are
encrypted before they are stored and never returned; instances are called outside any transaction."""

import logging
from functools import partial
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from apps.channels.models import Channel
from apps.core import crypto
from apps.core.addresses import check_url
from apps.core.errors import DomainError
from apps.core.mail import tell_account_admins
from apps.core.validation import field_error
from apps.publishing import services as pipeline
from apps.publishing.mastodon import client
from apps.publishing.mastodon.models import LANGUAGES, PLATFORM, MastodonApp, MastodonConnection, Visibility

logger = logging.getLogger(__name__)

# A job that failed for want of access starts its error so; connecting the channel runs it again.
NOT_CONNECTED = "Connect Mastodon:"
RECONNECT = "Reconnect Mastodon:"


def _refused(exc: client.ApiError, what: str) -> DomainError:
    return DomainError(f"{what}: {exc.message}", code="mastodon_refused")


def instance_address(address: str) -> str:
    """The instance's base URL (https://host[:port]) from what a person typed ("mastodon.social",
    "https://mastodon.social/"), refused with a clear error where the address guard would refuse it."""
    base_url = _base_url((address or "").strip())
    if not settings.MASTODON_ALLOW_LOCAL_INSTANCES and (problem := check_url(base_url)):
        raise field_error("instance", "not_allowed", f"This instance cannot be connected: {problem}")
    return base_url


def _base_url(address: str) -> str:
    if not address:
        raise field_error("instance", "required", "Type the address of your Mastodon instance, e.g. mastodon.social.")
    parts = urlsplit(address if "://" in address else f"https://{address}")
    schemes = {"https", "http"} if settings.MASTODON_ALLOW_LOCAL_INSTANCES else {"https"}
    if parts.scheme not in schemes or not parts.hostname:
        raise field_error("instance", "invalid", "An instance's address is https://host, e.g. https://mastodon.social.")
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        raise field_error(
            "instance", "invalid", "Type the instance's address only, without a path: e.g. mastodon.social."
        )
    try:
        host = parts.hostname.encode("idna").decode("ascii")
        port = parts.port
        base_url = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
        # IDNA takes a space or a stray symbol in a label: a host name must be one Django's URLs take.
        URLValidator(schemes=["http", "https"])(base_url)
    except (UnicodeError, ValueError, ValidationError):
        raise field_error("instance", "invalid", f"{address!r} is not an instance's address.") from None
    return base_url


def app_for(*, base_url: str, redirect_uri: str) -> MastodonApp:
    """The service's app on the instance, registered now if it has none for this callback address
    (or for fewer scopes than the service asks)."""
    app = MastodonApp.objects.filter(base_url=base_url).first()
    if app is not None and app.redirect_uri == redirect_uri and app.scopes == client.SCOPES:
        return app
    try:
        registered = client.register_app(base_url=base_url, redirect_uri=redirect_uri)
    except client.ApiError as exc:
        raise _refused(exc, f"{base_url} did not register this service's app") from None
    with transaction.atomic():
        app, _created = MastodonApp.objects.select_for_update().update_or_create(
            base_url=base_url,
            defaults={
                "client_id": registered["client_id"],
                "client_secret_encrypted": crypto.encrypt(registered["client_secret"]),
                "redirect_uri": redirect_uri,
                "scopes": client.SCOPES,
                "registered_at": timezone.now(),
            },
        )
    return app


def language_check(language: str) -> str:
    language = (language or "").strip().lower()
    if language and language not in LANGUAGES:
        raise field_error(
            "language", "invalid", f"{language!r} is no ISO 639-1 language code (two letters, such as en, de or ja)."
        )
    return language


def visibility_check(visibility: str) -> str:
    if visibility not in Visibility.values:
        raise field_error("visibility", "invalid", f"The visibility is one of {', '.join(Visibility.values)}.")
    return visibility


def connection_save(*, channel: Channel, app: MastodonApp, token: dict, connected_by: str) -> MastodonConnection:
    """Store the access in a token response: the instance is asked whose account it is and what its
    limits are first. A reconnection keeps the channel, its scheduled posts, its visibility and
    language, and runs again the jobs that failed for want of access."""
    if channel.platform != PLATFORM:
        raise DomainError(
            f"Only Mastodon channels connect to Mastodon; this channel is {channel.platform}.", code="invalid_platform"
        )
    access_token = (token.get("access_token") or "").strip()
    if not access_token:
        raise field_error("token", "required", "The access token is empty.")
    mastodon = client.Client(app.base_url, access_token)
    try:
        account = mastodon.verify_credentials()
        limits = mastodon.limits()
    except client.ApiError as exc:
        raise _refused(exc, f"{app.base_url} did not accept the access token") from None
    host = urlsplit(app.base_url).hostname
    with transaction.atomic():
        connection = MastodonConnection.objects.select_for_update().filter(channel=channel).first()
        connection = connection or MastodonConnection(channel=channel)
        connection.app = app
        connection.account_id = account["id"]
        acct = str(account.get("acct") or account.get("username") or account["id"])
        connection.acct = (acct if "@" in acct else f"{acct}@{host}")[:300]
        connection.display_name = str(account.get("display_name") or "")[:300]
        connection.access_token_encrypted = crypto.encrypt(access_token)
        connection.scopes = str(token.get("scope") or "")[:300]
        _set_limits(connection, limits)
        connection.needs_reconnect_since, connection.reconnect_reason = None, ""
        connection.connected_by, connection.connected_at = connected_by[:300], timezone.now()
        connection.save()
        transaction.on_commit(partial(resume_jobs, channel_id=channel.pk))
    return connection


def _set_limits(connection: MastodonConnection, limits: dict) -> None:
    connection.max_characters = limits["max_characters"]
    connection.characters_reserved_per_url = limits["characters_reserved_per_url"]
    connection.max_media_attachments = limits["max_media_attachments"]
    connection.limits_read_at = timezone.now()


def limits_fresh(*, connection: MastodonConnection, mastodon: client.Client) -> MastodonConnection:
    """The connection with its instance's limits read again where they are stale (an instance may
    change them); kept as they were when the instance does not say now."""
    read_at = connection.limits_read_at
    if read_at is not None and timezone.now() - read_at < settings.MASTODON_LIMITS_MAX_AGE:
        return connection
    try:
        limits = mastodon.limits()
    except client.ApiError as exc:
        if exc.status == 401:
            raise
        logger.info("mastodon channel=%s limits not read now: %s", connection.channel_id, exc.message)
        return connection
    _set_limits(connection, limits)
    connection.save(
        update_fields=[
            "max_characters",
            "characters_reserved_per_url",
            "max_media_attachments",
            "limits_read_at",
            "updated_at",
        ]
    )
    return connection


def resume_jobs(*, channel_id: int) -> int:
    """Run again the channel's jobs that failed for want of access."""
    return pipeline.jobs_resume(channel_id=channel_id, errors_starting=(NOT_CONNECTED, RECONNECT))


@transaction.atomic
def connection_options_set(*, connection: MastodonConnection, visibility: str, language: str) -> MastodonConnection:
    """Who sees the channel's statuses and the language they name (empty: the account's own)."""
    connection = MastodonConnection.objects.select_for_update().get(pk=connection.pk)
    connection.visibility = visibility_check(visibility)
    connection.language = language_check(language)
    connection.save(update_fields=["visibility", "language", "updated_at"])
    return connection


def connection_delete(*, connection: MastodonConnection) -> None:
    """Disconnect: the token is deleted here (the account revokes the app under its instance's
    Preferences → Account → Authorized apps). Statuses already posted stay there."""
    MastodonConnection.objects.filter(pk=connection.pk).delete()


def connection_lost(*, connection: MastodonConnection, reason: str) -> None:
    """The instance no longer takes the channel's access: no job is tried until someone reconnects,
    and the account's admins are told once."""
    now = timezone.now()
    marked = MastodonConnection.objects.filter(pk=connection.pk, needs_reconnect_since=None).update(
        needs_reconnect_since=now, reconnect_reason=reason[:2000], updated_at=now
    )
    if marked:
        logger.warning("mastodon channel=%s needs reconnecting: %s", connection.channel_id, reason)
        transaction.on_commit(partial(_tell_admins, connection.pk))


def connection_check(*, connection: MastodonConnection) -> str:
    """ "Test connection": ask the instance whose access this is; DomainError with what went wrong."""
    try:
        account = client.Client(connection.base_url, connection.access_token()).verify_credentials()
    except crypto.CredentialUnreadable as exc:
        raise DomainError(str(exc), code="connection_failed") from None
    except client.ApiError as exc:
        if exc.status == 401:
            reason = f"{connection.base_url} refused the access token ({exc.message})."
            connection_lost(connection=connection, reason=reason)
        raise DomainError(f"{connection.base_url} refused: {exc.message}", code="connection_failed") from None
    who = account.get("display_name") or account.get("acct") or account["id"]
    return (
        f"Connected to {connection.base_url} as {who} (@{connection.acct}); its statuses are "
        f"{connection.get_visibility_display().lower()}, up to {connection.max_characters:,} characters."
    )


def _tell_admins(connection_id: int) -> None:
    connection = MastodonConnection.objects.select_related("channel__account").filter(pk=connection_id).first()
    if connection is None:
        return
    tell_account_admins(
        account=connection.channel.account,
        template="publishing/mastodon_reconnect_email",
        context={"connection": connection},
        page=("admin:publishing_mastodon_mastodonconnection_change", connection.pk),
    )
