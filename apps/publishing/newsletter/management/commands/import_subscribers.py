from django.core.management.base import CommandParser

from apps.channels.models import Channel
from apps.core.commands import Failure, JsonCommand
from apps.publishing.newsletter.csv_import import OPEN_OPTIONS, import_csv
from apps.publishing.newsletter.services import ImportResult, check_newsletter

# Invalid rows the text summary shows (--json lists them all).
SHOWN_INVALID = 50


class Command(JsonCommand):
    help = (
        "Add the people of a CSV file to a newsletter channel's list. The header row names email and optionally "
        "name; any size is read a row at a time. A bad row is reported by its line and the rest goes on; an address "
        "on the list already, or one that unsubscribed, bounced or complained, is skipped. Without --confirmed each "
        "new person is sent the confirmation e-mail."
    )
    json_help = 'print {"created": n, "skipped": n, "invalid": [{"line": n, "error": "..."}]} (errors on stderr)'

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel_id", type=int, help="the newsletter channel")
        parser.add_argument("file", help="the CSV file (UTF-8)")
        parser.add_argument(
            "--confirmed", action="store_true", help="they opted in elsewhere: confirmed at once, sent no e-mail"
        )

    def run(self, options) -> tuple[Channel, ImportResult]:
        channel = Channel.objects.filter(pk=options["channel_id"]).first()
        if channel is None:
            raise Failure("not_found", f"No channel with id {options['channel_id']}.")
        check_newsletter(channel)
        try:
            with open(options["file"], **OPEN_OPTIONS) as file:
                result = import_csv(channel=channel, file=file, confirmed=options["confirmed"])
        except OSError as exc:
            raise Failure("unreadable_file", f"Cannot read {options['file']}: {exc.strerror or exc}.") from None
        return channel, result

    def as_json(self, outcome: tuple[Channel, ImportResult]) -> dict:
        return outcome[1].as_dict()

    def as_text(self, outcome: tuple[Channel, ImportResult]) -> str:
        channel, result = outcome
        lines = [
            f"{channel.title} (channel {channel.pk}): {result.created} added, {result.skipped} skipped (on the list "
            f"already, repeated in the file, or unsubscribed, bounced or complained), {len(result.invalid)} invalid."
        ]
        lines += [f"  line {row['line']}: {row['error']}" for row in result.invalid[:SHOWN_INVALID]]
        if len(result.invalid) > SHOWN_INVALID:
            lines.append(f"  ... and {len(result.invalid) - SHOWN_INVALID} more (--json lists them all).")
        return "\n".join(lines)
