from django.core.management.base import CommandParser

from apps.accounts.models import Account
from apps.core.commands import Failure, JsonCommand
from apps.webhooks.models import SignatureFormat, WebhookEndpoint
from apps.webhooks.services import endpoint_save


class Command(JsonCommand):
    help = "Add a webhook endpoint to an account and print its id and signing secret."
    json_help = 'print {"id", "secret", "signature_format"} as JSON (errors on stderr)'

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, required=True)
        parser.add_argument("--url", required=True)
        parser.add_argument("--events", default="", help="comma-separated event kinds; empty means all")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--format",
            choices=SignatureFormat.values,
            default=SignatureFormat.SERVICE,
            help="service: the specification's X-Service-* headers (default); standard: Standard Webhooks",
        )

    def as_json(self, endpoint: WebhookEndpoint) -> dict:
        return {"id": endpoint.id, "secret": endpoint.secret, "signature_format": endpoint.signature_format}

    def as_text(self, endpoint: WebhookEndpoint) -> str:
        return (
            f"Endpoint {endpoint.id} -> {endpoint.url}, signed with {endpoint.get_signature_format_display()}\n"
            f"Signing secret: {endpoint.secret}"
        )

    def run(self, options) -> WebhookEndpoint:
        account = Account.objects.filter(pk=options["account"]).first()
        if account is None:
            raise Failure("not_found", f"No account with id {options['account']}.")
        events = [e.strip() for e in options["events"].split(",") if e.strip()]
        return endpoint_save(
            account=account,
            url=options["url"],
            events=events,
            description=options["description"],
            signature_format=options["format"],
        )
