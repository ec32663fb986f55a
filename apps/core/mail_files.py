"""The e-mail backend of the embedded default (development, no EMAIL_BACKEND set): nothing is sent;
each message is printed, as Django's console backend does, and written to EMAIL_FILE_PATH
(var/mail/) as a file of its own, `<time>-<random>.eml`, which a mail client opens as the message it is.

Django's file backend writes every message of a connection into one `.log` file with separators
between them, which no mail client reads: a post mailed to a channel's readers, a confirmation e-mail and an
invitation would be lines in a worker's log or in such a file, hard to find and to look at.
"""

import uuid
from pathlib import Path

from django.conf import settings
from django.core.mail.backends.console import EmailBackend as ConsoleEmailBackend
from django.utils import timezone


class EmailBackend(ConsoleEmailBackend):
    def __init__(self, *args, file_path: str | Path | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.file_path = Path(file_path or settings.EMAIL_FILE_PATH)

    def write_message(self, message) -> None:
        super().write_message(message)
        self.file_path.mkdir(parents=True, exist_ok=True)
        # Listed by name, the files are in the order they were written.
        name = f"{timezone.now():%Y%m%d-%H%M%S-%f}-{uuid.uuid4().hex[:8]}.eml"
        # RFC 5322's line ends, as the message would travel; written aside, then renamed, so whoever
        # watches the folder never opens half a message.
        partial = self.file_path / f".{name}.partial"
        partial.write_bytes(message.message().as_bytes(linesep="\r\n"))
        partial.replace(self.file_path / name)
