"""LinkedIn connections: storing the access a member granted (by the Settings area's OAuth flow or
`manage.py connect_linkedin`), choosing whom posts appear as, refreshing and losing access, and
the daily look at access about to end. Tokens are encrypted before they are stored and never
returned; LinkedIn is called outside any database transaction."""

import logging
import re
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.channels.models import Channel
from apps.core import crypto
from apps.core.destinations import PublishError
from apps.core.errors import DomainError
from apps.core.keep import KEEP, Keep
from apps.core.mail import tell_account_admins
from apps.core.validation import field_error
from apps.publishing import services as pipeline
from apps.publishing.linkedin import client
from apps.publishing.linkedin.models import ORGANIZATION_URN_PREFIX, PERSON_URN_PREFIX, PLATFORM, LinkedInConnection

logger = logging.getLogger(__name__)

# A job that failed for want of access starts its error so; connecting the channel runs it again.
NOT_CONNECTED = "Connect LinkedIn:"
RECONNECT = "Reconnect LinkedIn:"
ORGANIZATION_URN = re.compile(rf"{re.escape(ORGANIZATION_URN_PREFIX)}\d+")


def _refused(exc: client.ApiError, what: str) -> DomainError:
    return DomainError(f"{what}: {exc.message}", code="linkedin_refused")


def organization_check(organization: str, pages: list[dict]) -> str:
    organization = organization.strip()
    if not organization:
        return ""
    if not ORGANIZATION_URN.fullmatch(organization):
        raise field_error("organization_urn", "invalid", "A page is named urn:li:organization:<number>.")
    # When LinkedIn listed the member's pages (r_organization_admin), only those; when it did not,
    # LinkedIn itself refuses a post as a page the member does not administer.
    if pages and organization not in {page.get("urn") for page in pages}:
        raise field_error(
            "organization_urn", "not_administered", f"The connected member does not administer {organization}."
        )
    return organization


def connection_save(
    *, channel: Channel, token: dict, connected_by: str, organization: str | Keep = KEEP
) -> LinkedInConnection:
    """Store the access in a token response (`access_token`, `expires_in`, and any `refresh_token`,
    `refresh_token_expires_in`, `scope`): LinkedIn is asked whom it belongs to and which pages they
    administer first. A reconnection keeps the channel, its scheduled posts and its choice of page
    (when the member still administers it), and runs again the jobs that failed for want of access."""
    if channel.platform != PLATFORM:
        raise DomainError(
            f"Only LinkedIn channels connect to LinkedIn; this channel is {channel.platform}.", code="invalid_platform"
        )
    access_token = (token.get("access_token") or "").strip()
    if not access_token:
        raise field_error("token", "required", "The access token is empty.")
    linkedin = client.Client(access_token)
    try:
        member = linkedin.userinfo()
        pages = linkedin.organizations()  # None: LinkedIn did not say (no r_organization_admin)
    except client.ApiError as exc:
        raise _refused(exc, "LinkedIn did not accept the access token") from None
    with transaction.atomic():
        connection = LinkedInConnection.objects.select_for_update().filter(channel=channel).first()
        connection = connection or LinkedInConnection(channel=channel)
        previous = connection.organization_urn
        member_urn = f"{PERSON_URN_PREFIX}{member['sub']}"
        if isinstance(organization, Keep):
            # The page is kept where the member (the same or another) administers it, or where
            # LinkedIn did not list their pages; a member who administers no page posts as themself.
            keep = previous and (pages is None or previous in _urns(pages))
            organization = previous if keep else ""
        pages = pages or []
        connection.organization_urn = organization_check(organization, pages)
        connection.member_urn = member_urn
        connection.member_name = str(member.get("name") or "")[:300]
        connection.organizations = pages
        connection.access_token_encrypted = crypto.encrypt(access_token)
        _store_refresh(connection, token, replace=True)
        connection.expires_at = client.expiry(token)
        connection.scopes = str(token.get("scope") or "")[:500]
        connection.needs_reconnect_since, connection.reconnect_reason = None, ""
        connection.connected_by, connection.connected_at = connected_by[:300], timezone.now()
        connection.warned_for_expiry = None
        connection.save()
        transaction.on_commit(partial(resume_jobs, channel_id=channel.pk))
    return connection


def _urns(pages: list[dict]) -> set[str]:
    return {page.get("urn") for page in pages if isinstance(page, dict)}


def _store_refresh(connection: LinkedInConnection, token: dict, *, replace: bool) -> None:
    refresh_token = (token.get("refresh_token") or "").strip()
    if refresh_token:
        connection.refresh_token_encrypted = crypto.encrypt(refresh_token)
        connection.refresh_expires_at = client.expiry(token, "refresh_token_expires_in")
    elif replace:
        connection.refresh_token_encrypted, connection.refresh_expires_at = "", None


def resume_jobs(*, channel_id: int) -> int:
    """Run again the channel's jobs that failed for want of access."""
    return pipeline.jobs_resume(channel_id=channel_id, errors_starting=(NOT_CONNECTED, RECONNECT))


@transaction.atomic
def connection_author_set(*, connection: LinkedInConnection, organization: str) -> LinkedInConnection:
    """Post as the member (empty) or as a page they administer (urn:li:organization:…)."""
    connection = LinkedInConnection.objects.select_for_update().get(pk=connection.pk)
    connection.organization_urn = organization_check(organization, connection.organizations)
    connection.save(update_fields=["organization_urn", "updated_at"])
    return connection


def connection_delete(*, connection: LinkedInConnection) -> None:
    """Disconnect: the tokens are deleted here (the member removes the app's access on LinkedIn,
    under Settings → Data privacy → Permitted services). Posts already on LinkedIn stay there."""
    LinkedInConnection.objects.filter(pk=connection.pk).delete()


def connection_lost(*, connection: LinkedInConnection, reason: str) -> None:
    """LinkedIn no longer takes the channel's access: no job is tried until someone reconnects,
    and the account's admins are told once."""
    now = timezone.now()
    marked = LinkedInConnection.objects.filter(pk=connection.pk, needs_reconnect_since=None).update(
        needs_reconnect_since=now, reconnect_reason=reason[:2000], updated_at=now
    )
    if marked:
        logger.warning("linkedin channel=%s needs reconnecting: %s", connection.channel_id, reason)
        transaction.on_commit(partial(_tell_admins, connection.pk, "publishing/linkedin_reconnect_email"))


def token_refresh(*, connection: LinkedInConnection) -> LinkedInConnection:
    """A new access token from the refresh token. LinkedIn refusing the refresh token loses the
    connection (DomainError); no answer is a PublishError to retry."""
    try:
        token = client.refresh(refresh_token=connection.refresh_token())
    except crypto.CredentialUnreadable as exc:
        raise PublishError(str(exc), permanent=True) from None
    except client.ApiError as exc:
        if exc.status is None or exc.status >= 500:
            raise PublishError(
                f"LinkedIn could not renew the access: {exc.message}", retry_after=exc.retry_after
            ) from None
        reason = f"LinkedIn refused to renew the access ({exc.message})."
        connection_lost(connection=connection, reason=reason)
        raise DomainError(reason, code="linkedin_refused") from None
    connection.access_token_encrypted = crypto.encrypt(token["access_token"])
    connection.expires_at = client.expiry(token)
    _store_refresh(connection, token, replace=False)
    connection.warned_for_expiry = None
    # Two refreshes at once (the daily check and a job) both get working tokens: either may stay.
    connection.save(
        update_fields=[
            "access_token_encrypted",
            "expires_at",
            "refresh_token_encrypted",
            "refresh_expires_at",
            "warned_for_expiry",
            "updated_at",
        ]
    )
    logger.info("linkedin channel=%s access renewed until %s", connection.channel_id, connection.expires_at)
    return connection


def connection_check(*, connection: LinkedInConnection) -> str:
    """ "Test connection": ask LinkedIn whose access this is; DomainError with what went wrong."""
    try:
        member = client.Client(connection.access_token()).userinfo()
    except crypto.CredentialUnreadable as exc:
        raise DomainError(str(exc), code="connection_failed") from None
    except client.ApiError as exc:
        if exc.status == 401:
            connection_lost(connection=connection, reason=f"LinkedIn refused the access token ({exc.message}).")
        raise DomainError(f"LinkedIn refused: {exc.message}", code="connection_failed") from None
    until = f", access until {connection.expires_at:%Y-%m-%d %H:%M} UTC" if connection.expires_at else ""
    who = member.get("name") or member["sub"]
    return f"Connected to LinkedIn as {who}; posts appear as {connection.author_name}{until}."


def expiring_check() -> dict[str, int]:
    """Daily (beat): access ending within LINKEDIN_EXPIRY_WARNING_DAYS is renewed where LinkedIn
    gave a refresh token; otherwise the account's admins are e-mailed, once per expiry."""
    now = timezone.now()
    horizon = now + timedelta(days=settings.LINKEDIN_EXPIRY_WARNING_DAYS)
    counts = {"renewed": 0, "warned": 0, "lost": 0}
    due = LinkedInConnection.objects.filter(needs_reconnect_since=None, expires_at__lt=horizon).select_related(
        "channel__account"
    )
    for connection in due.iterator():
        if connection.can_refresh(now):
            try:
                token_refresh(connection=connection)
                counts["renewed"] += 1
            except DomainError:
                counts["lost"] += 1
            except PublishError as exc:
                # No answer is no refusal (nor is an unreadable refresh token): it stands, and the
                # next run (or a job) tries again.
                logger.warning("linkedin channel=%s not renewed now: %s", connection.channel_id, exc.message)
            continue
        if connection.expires_at <= now:
            connection_lost(connection=connection, reason="The access LinkedIn granted has expired.")
            counts["lost"] += 1
        elif connection.warned_for_expiry != connection.expires_at:
            LinkedInConnection.objects.filter(pk=connection.pk).update(warned_for_expiry=connection.expires_at)
            _tell_admins(connection.pk, "publishing/linkedin_expiring_email")
            counts["warned"] += 1
    return counts


def _tell_admins(connection_id: int, template: str) -> None:
    connection = LinkedInConnection.objects.select_related("channel__account").filter(pk=connection_id).first()
    if connection is None:
        return
    tell_account_admins(
        account=connection.channel.account,
        template=template,
        context={"connection": connection},
        page=("admin:publishing_linkedin_linkedinconnection_change", connection.pk),
    )
