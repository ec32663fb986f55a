from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.accounts.models import Account
from apps.accounts.services import api_key_create
from apps.core.errors import DomainError
from apps.users.models import User


class Command(BaseCommand):
    help = "Create an API key and print it (the only time it is shown)."

    def add_arguments(self, parser):
        parser.add_argument("--account", type=int, required=True, help="account id")
        parser.add_argument("--user", required=True, help="e-mail of the user who owns the key")
        parser.add_argument("--name", required=True)
        parser.add_argument("--scopes", default="", help="comma-separated, e.g. read:channels,read:posts")
        parser.add_argument("--expires-in", type=int, default=None, help="days until the key expires")

    def handle(self, *args, account, user, name, scopes, expires_in, **options):
        try:
            account_obj = Account.objects.get(pk=account)
        except Account.DoesNotExist:
            raise CommandError(f"No account with id {account}") from None
        try:
            user_obj = User.objects.get(email__iexact=user, account=account_obj)
        except User.DoesNotExist:
            raise CommandError(f"No user {user!r} in account {account}") from None
        if expires_in is not None and expires_in <= 0:
            raise CommandError("--expires-in must be a positive number of days")
        expires_at = timezone.now() + timedelta(days=expires_in) if expires_in else None
        scope_list = [s.strip() for s in scopes.split(",") if s.strip()]
        try:
            _, raw = api_key_create(
                account=account_obj, user=user_obj, name=name, scopes=scope_list, expires_at=expires_at
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(raw)
