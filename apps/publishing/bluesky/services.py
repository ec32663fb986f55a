"""Bluesky connections: connecting a channel with a handle and an app password (the account's
server found from the handle through the directory, or given), losing the connection when Bluesky
refuses the app password, the connection's test, and disconnecting. Bluesky is called outside any
database transaction; the app password and the session's tokens are encrypted before they are stored
and never returned."""

import logging
import re
from functools import partial

from django.db import transaction
from django.utils import timezone

from apps.channels.models import Channel
from apps.core import crypto
from apps.core.errors import DomainError
from apps.core.mail import tell_account_admins
from apps.core.validation import field_error
from apps.publishing import services as pipeline
from apps.publishing.bluesky import client
from apps.publishing.bluesky.models import PLATFORM, BlueskyConnection
from apps.publishing.bluesky.session import AccessLost, Account, sign_in, store

logger = logging.getLogger(__name__)

# A job that failed for want of access starts its error so; connecting the channel runs it again.
NOT_CONNECTED = "Connect Bluesky:"
RECONNECT = "Reconnect Bluesky:"
# Bluesky's app passwords (Settings → Privacy and security → App passwords): four groups of four.
# The account's own password is refused: it would give this service the whole account.
APP_PASSWORD = re.compile(r"[a-z2-7]{4}(-[a-z2-7]{4}){3}")


def _refused(exc: client.XrpcError, what: str) -> DomainError:
    return DomainError(f"{what}: {exc.message}", code="bluesky_refused")


def handle_check(handle: str) -> str:
    handle = handle.strip().removeprefix("@").lower()
    if not client.HANDLE.fullmatch(handle) or len(handle) > 253:
        raise field_error("handle", "invalid", "A Bluesky handle looks like alice.bsky.social or a domain name.")
    return handle


def _server(handle: str, server: str) -> tuple[str, str]:
    """(the account's server, its DID or "" when the server is to say it)."""
    if server.strip():
        try:
            return client.server_url(server), ""
        except ValueError as exc:
            raise field_error("server", "invalid", str(exc)) from None
    try:
        did = client.resolve_handle(handle)
        document = client.did_document(did)
    except client.XrpcError as exc:
        raise _refused(exc, f"The handle @{handle} could not be looked up") from None
    # A DID document names its handles: one that does not name this handle may not claim it.
    if handle not in client.handles_of(document):
        raise field_error("handle", "not_claimed", f"The account {did} does not claim the handle @{handle}.")
    try:
        return client.pds_of(document), did
    except client.XrpcError as exc:
        raise _refused(exc, f"The server of @{handle} could not be found") from None


def connection_save(
    *, channel: Channel, handle: str, app_password: str, server: str = "", connected_by: str
) -> BlueskyConnection:
    """Sign in as the handle with the app password on its server (given, or found from the handle)
    and store the connection. Reconnecting keeps the channel and its posts, clears the "Reconnect
    Bluesky" mark and runs again the jobs that failed for want of access."""
    if channel.platform != PLATFORM:
        raise DomainError(
            f"Only Bluesky channels connect to Bluesky; this channel is {channel.platform}.", code="invalid_platform"
        )
    handle = handle_check(handle)
    app_password = app_password.strip()
    if not APP_PASSWORD.fullmatch(app_password):
        raise field_error(
            "app_password",
            "invalid",
            "Give an app password (xxxx-xxxx-xxxx-xxxx, made under Bluesky's Settings → Privacy and security → App "
            "passwords), not the account's own password.",
        )
    pds, did = _server(handle, server)
    try:
        session = client.create_session(pds=pds, identifier=did or handle, password=app_password)
    except client.XrpcError as exc:
        raise _refused(exc, f"Bluesky did not sign @{handle} in") from None
    if did and session["did"] != did:
        raise DomainError(f"The server signed in {session['did']}, not {did} (@{handle}).", code="bluesky_refused")
    with transaction.atomic():
        connection = BlueskyConnection.objects.select_for_update().filter(channel=channel).first()
        connection = connection or BlueskyConnection(channel=channel)
        connection.handle = str(session.get("handle") or handle)[:253]
        connection.did, connection.pds_url = session["did"], pds
        connection.app_password_encrypted = crypto.encrypt(app_password)
        connection.access_jwt_encrypted = crypto.encrypt(session["accessJwt"])
        connection.refresh_jwt_encrypted = crypto.encrypt(session["refreshJwt"])
        connection.needs_reconnect_since, connection.reconnect_reason = None, ""
        connection.connected_by, connection.connected_at = connected_by[:300], timezone.now()
        connection.save()
        transaction.on_commit(partial(resume_jobs, channel_id=channel.pk))
    return connection


def resume_jobs(*, channel_id: int) -> int:
    """Run again the channel's jobs that failed for want of access."""
    return pipeline.jobs_resume(channel_id=channel_id, errors_starting=(NOT_CONNECTED, RECONNECT))


def connection_delete(*, connection: BlueskyConnection) -> None:
    """Disconnect: the app password and the tokens are deleted here (the app password is revoked
    on Bluesky, under Settings → Privacy and security → App passwords). Posts stay on Bluesky."""
    BlueskyConnection.objects.filter(pk=connection.pk).delete()


def connection_lost(*, connection: BlueskyConnection, reason: str) -> None:
    """Bluesky no longer takes the channel's app password: no job is tried until someone
    reconnects, and the account's admins are told once."""
    now = timezone.now()
    marked = BlueskyConnection.objects.filter(pk=connection.pk, needs_reconnect_since=None).update(
        needs_reconnect_since=now, reconnect_reason=reason[:2000], updated_at=now
    )
    connection.needs_reconnect_since, connection.reconnect_reason = now, reason[:2000]
    if marked:
        logger.warning("bluesky channel=%s needs reconnecting: %s", connection.channel_id, reason)
        transaction.on_commit(partial(_tell_admins, connection.pk))


def connection_check(*, connection: BlueskyConnection) -> str:
    """ "Test connection": sign in with the stored app password and read the account's repository."""
    try:
        store(connection, sign_in(connection=connection, deadline=None))
        described = Account(connection).profile()
    except crypto.CredentialUnreadable as exc:
        raise DomainError(str(exc), code="connection_failed") from None
    except AccessLost as exc:
        connection_lost(connection=connection, reason=exc.reason)
        raise DomainError(f"Bluesky refused: {exc.reason}", code="connection_failed") from None
    except client.XrpcError as exc:
        raise DomainError(f"Bluesky refused: {exc.message}", code="connection_failed") from None
    handle = described.get("handle") or connection.handle
    return f"Connected to Bluesky as @{handle} ({connection.did}) on {connection.pds_url}."


def _tell_admins(connection_id: int) -> None:
    connection = BlueskyConnection.objects.select_related("channel__account").filter(pk=connection_id).first()
    if connection is None:
        return
    tell_account_admins(
        account=connection.channel.account,
        template="publishing/bluesky_reconnect_email",
        context={"connection": connection},
        page=("admin:publishing_bluesky_blueskyconnection_change", connection.pk),
    )
