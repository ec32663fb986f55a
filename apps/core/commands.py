"""Management commands that scripts call with `--json`: the result as JSON on stdout, and every
error, usage errors included, as `{"error": {"code", "message", "details"?}}` on stderr with a
non-zero exit (1; 2 for usage). Without `--json`, the result as a sentence and errors as Django's
CommandError."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Failure(Exception):
    def __init__(self, code: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.details = code, message, details


class JsonCommand(BaseCommand):
    """Subclasses define add_command_arguments(), run(options) (raising Failure), as_json(result)
    and as_text(result)."""

    json_help = "print the result as JSON (errors on stderr)"

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        if "--json" in sys.argv:
            # Usage errors too are JSON on stderr for scripts that asked for JSON.
            def error(message):
                sys.stderr.write(json.dumps({"error": {"code": "usage", "message": message}}) + "\n")
                sys.exit(2)

            parser.error = error
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_command_arguments(parser)
        parser.add_argument("--json", action="store_true", help=self.json_help)

    def add_command_arguments(self, parser: CommandParser) -> None:
        pass

    def handle(self, *args, **options):
        try:
            result = self.run(options)
        except Failure as failure:
            if options["json"]:
                error = {"code": failure.code, "message": failure.message}
                if failure.details:
                    error["details"] = failure.details
                sys.stderr.write(json.dumps({"error": error}) + "\n")
                sys.exit(1)
            raise CommandError(failure.message) from None
        self.stdout.write(json.dumps(self.as_json(result)) if options["json"] else self.as_text(result))

    def run(self, options):
        raise NotImplementedError

    def as_json(self, result) -> dict:
        raise NotImplementedError

    def as_text(self, result) -> str:
        raise NotImplementedError
