import json

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import Account
from apps.core.errors import DomainError
from apps.webhooks.services import endpoint_save


class Command(BaseCommand):
    help = "Add a webhook endpoint to an account and print its id and signing secret."

    def add_arguments(self, parser):
        parser.add_argument("--account", type=int, required=True)
        parser.add_argument("--url", required=True)
        parser.add_argument("--events", default="", help="comma-separated event kinds; empty means all")
        parser.add_argument("--description", default="")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        try:
            account = Account.objects.get(pk=options["account"])
        except Account.DoesNotExist:
            raise CommandError(f"No account with id {options['account']}") from None
        events = [e.strip() for e in options["events"].split(",") if e.strip()]
        try:
            endpoint = endpoint_save(
                account=account, url=options["url"], events=events, description=options["description"]
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        if options["json"]:
            self.stdout.write(json.dumps({"id": endpoint.id, "secret": endpoint.secret}))
        else:
            self.stdout.write(f"Endpoint {endpoint.id} -> {endpoint.url}\nSigning secret: {endpoint.secret}")
