import os

from django.core.management.base import CommandParser

from apps.channels.models import Channel
from apps.core.commands import Failure, JsonCommand
from apps.core.errors import DomainError
from apps.core.keep import KEEP
from apps.publishing.linkedin.models import LinkedInConnection
from apps.publishing.linkedin.services import connection_save


def connection_data(connection: LinkedInConnection) -> dict:
    """The connection as scripts see it: everything but the tokens (which are only said to be there)."""
    return {
        "channel_id": connection.channel_id,
        "member_urn": connection.member_urn,
        "member_name": connection.member_name,
        "author": connection.author,
        "organization_urn": connection.organization_urn or None,
        "organizations": connection.organizations,
        "expires_at": connection.expires_at.isoformat() if connection.expires_at else None,
        "has_refresh_token": bool(connection.refresh_token_encrypted),
        "needs_reconnect": connection.needs_reconnect,
    }


class Command(JsonCommand):
    help = (
        "Connect a LinkedIn channel with an access token made in LinkedIn's developer portal (Token generator), "
        "read from an environment variable. The token is stored encrypted and never printed."
    )
    json_help = "print the connection as JSON (errors on stderr)"

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel_id", type=int)
        parser.add_argument("--token-env", metavar="VAR", required=True, help="the environment variable holding it")
        parser.add_argument(
            "--organization",
            metavar="URN",
            default=None,
            help="post as this page (urn:li:organization:…) the member administers; '' posts as the member",
        )

    def as_json(self, connection: LinkedInConnection) -> dict:
        return connection_data(connection)

    def as_text(self, connection: LinkedInConnection) -> str:
        until = f", until {connection.expires_at:%Y-%m-%d %H:%M} UTC" if connection.expires_at else ""
        return (
            f"Channel {connection.channel_id} posts to LinkedIn as {connection.author_name} "
            f"(access of {connection.member_name or connection.member_urn}{until})."
        )

    def run(self, options) -> LinkedInConnection:
        channel = Channel.objects.filter(pk=options["channel_id"]).first()
        if channel is None:
            raise Failure("not_found", f"No channel with id {options['channel_id']}.")
        token = os.environ.get(options["token_env"], "").strip()
        if not token:
            raise Failure("missing_token", f"The environment variable {options['token_env']} is not set or empty.")
        organization = KEEP if options["organization"] is None else options["organization"]
        try:
            # A portal token comes without its lifetime: its end is not known here (a 401 then says so).
            return connection_save(
                channel=channel,
                token={"access_token": token},
                connected_by="manage.py connect_linkedin",
                organization=organization,
            )
        except DomainError as exc:
            raise Failure(exc.code, exc.message, exc.details) from None
