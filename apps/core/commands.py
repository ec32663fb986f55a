"""Management commands that scripts call with `--json`: the result as JSON on stdout, and every
error, usage errors included, as `{"error": {"code", "message", "details"?}}` on stderr with a
non-zero exit (1; 2 for usage). Log records on stderr are JSON lines too (LOG_FORMAT=json's), so
every line there parses, the error being the last. Without `--json`, the result as a sentence and
errors as Django's CommandError."""

import json
import logging
import logging.config
import sys
from contextlib import contextmanager

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.serializers.json import DjangoJSONEncoder

from apps.core.errors import DomainError


class Failure(Exception):
    """What a command reports as its error. `result`: what it did before failing (a partial
    success, such as a report of drift), printed as its output before the error."""

    def __init__(self, code: str, message: str, details: dict | None = None, *, result=None) -> None:
        super().__init__(message)
        self.code, self.message, self.details, self.result = code, message, details, result


@contextmanager
def json_log_records():
    """settings.LOGGING's console handler writes JSON records (its `json` formatter) meanwhile."""
    consoles = [handler for handler in logging.getLogger().handlers if handler.name == "console"]
    # A copy: building a formatter pops its factory from the configuration it is given.
    formatter = logging.config.DictConfigurator({}).configure_formatter(dict(settings.LOGGING["formatters"]["json"]))
    before = [handler.formatter for handler in consoles]
    for handler in consoles:
        handler.setFormatter(formatter)
    try:
        yield
    finally:
        for handler, previous in zip(consoles, before, strict=True):
            handler.setFormatter(previous)


class JsonCommand(BaseCommand):
    """Subclasses define add_command_arguments(), run(options) (raising Failure, or a service's
    DomainError), as_json(result) and as_text(result)."""

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

    def execute(self, *args, **options):
        if not options.get("json") or options.get("traceback"):
            return super().execute(*args, **options)
        # What fails outside run() (the system checks, an unreachable database, a bug) is JSON too:
        # a script that asked for JSON reads stderr as JSON whatever went wrong.
        try:
            with json_log_records():
                return super().execute(*args, **options)
        except CommandError as exc:
            self._exit_with(Failure("error", str(exc)), exc.returncode)
        except Exception as exc:
            self._exit_with(Failure("internal", f"{type(exc).__name__}: {exc}"), 1)

    def handle(self, *args, **options):
        try:
            try:
                result = self.run(options)
            except DomainError as exc:
                raise Failure(exc.code, exc.message, exc.details) from None
        except Failure as failure:
            if failure.result is not None:
                self._write(failure.result, options)
            if options["json"]:
                self._exit_with(failure, 1)
            raise CommandError(failure.message) from None
        self._write(result, options)

    def _write(self, result, options) -> None:
        if options["json"]:
            self.stdout.write(json.dumps(self.as_json(result), cls=DjangoJSONEncoder))
        else:
            self.stdout.write(self.as_text(result))

    def _exit_with(self, failure: Failure, status: int):
        error = {"code": failure.code, "message": failure.message}
        if failure.details:
            error["details"] = failure.details
        # Unstyled: Django colours its stderr on a terminal, which would break the JSON.
        self.stderr.write(json.dumps({"error": error}, cls=DjangoJSONEncoder), style_func=lambda text: text)
        sys.exit(status)

    def run(self, options):
        raise NotImplementedError

    def as_json(self, result) -> dict:
        raise NotImplementedError

    def as_text(self, result) -> str:
        raise NotImplementedError
