from argparse import ArgumentTypeError
from datetime import UTC, timedelta

from django.core.management.base import CommandParser
from django.utils import timezone

from apps.accounts.models import Account
from apps.core.commands import Failure, JsonCommand
from apps.users.credentials import api_key_create
from apps.users.models import ApiKey, User


def days(value: str) -> int:
    if not value.strip().isdigit() or int(value) <= 0:
        raise ArgumentTypeError(f"must be a positive number of days, got {value!r}")
    return int(value)


class Command(JsonCommand):
    help = "Create an API key and print it (the only time it is shown)."
    json_help = "print the key with its id, name, scopes and expiry as JSON (errors on stderr)"

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, required=True, help="account id")
        parser.add_argument("--user", required=True, help="e-mail of the user who owns the key")
        parser.add_argument("--name", required=True)
        parser.add_argument("--scopes", default="", help="comma-separated, e.g. read:channels,read:posts")
        parser.add_argument("--expires-in", type=days, default=None, help="days until the key expires")

    def run(self, options) -> tuple[ApiKey, str]:
        account = Account.objects.filter(pk=options["account"]).first()
        if account is None:
            raise Failure("not_found", f"No account with id {options['account']}")
        user = User.objects.filter(email__iexact=options["user"], account=account).first()
        if user is None:
            raise Failure("not_found", f"No user {options['user']!r} in account {account.pk}")
        expires_in = options["expires_in"]
        expires_at = timezone.now() + timedelta(days=expires_in) if expires_in else None
        scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
        return api_key_create(account=account, user=user, name=options["name"], scopes=scopes, expires_at=expires_at)

    def as_text(self, created: tuple[ApiKey, str]) -> str:
        return created[1]

    def as_json(self, created: tuple[ApiKey, str]) -> dict:
        key, raw = created
        return {
            "id": key.pk,
            "key": raw,
            "name": key.name,
            "scopes": key.scopes,
            "expires_at": key.expires_at.astimezone(UTC).isoformat()[:-6] + "Z",
            "account_id": key.account_id,
            "user": key.user.email,
        }
