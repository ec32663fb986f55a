"""A CSV file of people to add to a newsletter, read a row at a time (any size, flat memory): for
`manage.py import_subscribers` and the Settings area's import alike. The rows go to
services.subscribers_import."""

import csv
from collections.abc import Iterator
from typing import TextIO

from apps.core.errors import InvalidInput
from apps.publishing.newsletter.services import ImportResult, ImportRow, subscribers_import

# How a file is opened for CsvRows: `utf-8-sig` because spreadsheets write a byte-order mark before
# the header; an undecodable byte reads as U+FFFD instead of stopping the import, and its row is
# reported, never stored mangled.
OPEN_OPTIONS = {"newline": "", "encoding": "utf-8-sig", "errors": "replace"}
REPLACED = "\ufffd"


def import_csv(*, channel, file: TextIO, confirmed: bool) -> ImportResult:
    """The people of a CSV file into the channel's list: services.subscribers_import's result, with
    the lines that could not even be read among its invalid ones, in file order. InvalidInput for a
    file without a header row naming `email`."""
    rows = CsvRows(file)
    result = subscribers_import(channel=channel, rows=rows, confirmed=confirmed)
    result.invalid = sorted([*result.invalid, *rows.invalid], key=lambda row: row["line"])
    return result


class CsvRows:
    """The data rows of a CSV file whose header row names `email` (and optionally `name`, in any
    case; other columns are ignored), as ImportRows with their line number in the file. A row that
    cannot be read (not CSV, not UTF-8, a NUL character, which no database column takes) is kept
    in `invalid`, and the reading goes on. A file without such a header is InvalidInput."""

    def __init__(self, file: TextIO) -> None:
        self.reader = csv.reader(file)
        self.invalid: list[dict] = []
        try:
            header = next(self.reader)
        except StopIteration:
            raise _bad_file('The file is empty: its first line must be a header row naming "email".') from None
        except csv.Error as exc:
            raise _bad_file(f"The header row cannot be read as CSV: {exc}.") from None
        names = [name.strip().lower() for name in header]
        if "email" not in names:
            found = ", ".join(repr(name) for name in header[:10]) or "nothing"
            raise _bad_file(f'The header row must name an "email" column (and optionally "name"); it has {found}.')
        self.email_at = names.index("email")
        self.name_at = names.index("name") if "name" in names else None

    def __iter__(self) -> Iterator[ImportRow]:
        while True:
            try:
                fields = next(self.reader)
            except StopIteration:
                return
            except csv.Error as exc:
                self.invalid.append({"line": self.reader.line_num, "error": f"Not readable as CSV: {exc}."})
                continue
            if not any(field.strip() for field in fields):
                continue
            problem = _unreadable(fields)
            if problem:
                self.invalid.append({"line": self.reader.line_num, "error": problem})
                continue
            yield ImportRow(
                line=self.reader.line_num,
                email=self._field(fields, self.email_at),
                name=self._field(fields, self.name_at),
            )

    @staticmethod
    def _field(fields: list[str], at: int | None) -> str:
        return fields[at] if at is not None and at < len(fields) else ""


def _unreadable(fields: list[str]) -> str:
    if any(REPLACED in field for field in fields):
        return "Not UTF-8 text: save the file as UTF-8."
    if any("\x00" in field for field in fields):
        return "Contains a NUL character."
    return ""


def _bad_file(message: str) -> InvalidInput:
    return InvalidInput(message, code="invalid_file")
