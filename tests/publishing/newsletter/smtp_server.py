"""A real SMTP server for the newsletter tests (aiosmtpd on 127.0.0.1), keeping what it receives.

It can refuse chosen addresses at RCPT (550: a permanent refusal, 451: a temporary one, for ever or
a number of times), take its time over each message (`delay`), or never answer the DATA of chosen
addresses (`hang_for`), as mail servers do. Messages are kept parsed with the `email` package.

    with SmtpServer() as server:
        server.refuse("gone@example.com", 550)
        ...
        server.count_by_address()  # Counter: address -> messages received

The `smtp_server` fixture (conftest.py) starts one and points Django's EMAIL_* settings at it;
`worker_env()` gives the same settings to a process the test starts.
"""

import asyncio
import email
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.policy import default as default_policy

from aiosmtpd.controller import Controller

from tests.conftest import free_port

REPLIES = {
    550: "550 5.1.1 No such mailbox here",
    451: "451 4.7.1 Greylisted, try again later",
}
# aiosmtpd logs every command at INFO: thousands of lines per test.
logging.getLogger("mail.log").setLevel(logging.WARNING)
# Longer than any test: a hanging DATA is answered only when the server stops.
HANG_SECONDS = 3600


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    raw: bytes
    peer: tuple  # the client's (address, port): one per connection

    @property
    def message(self) -> EmailMessage:
        return email.message_from_bytes(self.raw, policy=default_policy)

    @property
    def headers(self) -> EmailMessage:
        """The message's headers only (quicker to parse than the whole message, for many)."""
        return BytesHeaderParser(policy=default_policy).parsebytes(self.raw)


class SmtpServer:
    """`keep_content=False` keeps only who received a message (for sends of many thousands)."""

    def __init__(self, *, keep_content: bool = True) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.keep_content = keep_content
        # Seconds the server takes before answering each message's DATA.
        self.delay = 0.0
        self._refusals: dict[str, list] = {}  # address -> [code, times left or None]
        self._hanging: set[str] = set()
        self._data_reply: str | None = None
        self._received: list[Received] = []
        self._refused: list[tuple[str, int]] = []
        # Messages whose DATA is hanging now.
        self.hanging = 0
        self._lock = threading.Lock()
        # A server name of its own: aiosmtpd would otherwise look its host's name up (socket.getfqdn)
        # on every connection, which takes a DNS timeout where there is no resolver.
        self._controller = Controller(
            _Handler(self), hostname=self.host, port=self.port, ready_timeout=10, server_hostname="smtp.test"
        )

    # --- set-up, from the test's thread ---

    def refuse(self, address: str, code: int = 550, *, times: int | None = None) -> None:
        """Answer RCPT TO this address with `code` (550 or 451), `times` times (None: always)."""
        with self._lock:
            self._refusals[address.lower()] = [code, times]

    def refuse_message(self, reply: str) -> None:
        """Answer the DATA of every message with `reply` (a content policy refusal, say)."""
        with self._lock:
            self._data_reply = reply

    def hang_for(self, *addresses: str) -> None:
        """Never answer the DATA of a message to any of these addresses (until the server stops)."""
        with self._lock:
            self._hanging.update(address.lower() for address in addresses)

    def stop_hanging(self) -> None:
        """Answer every later DATA again (those already hanging stay so)."""
        with self._lock:
            self._hanging.clear()

    def start(self) -> "SmtpServer":
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def __enter__(self) -> "SmtpServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def worker_env(self) -> dict[str, str]:
        """The settings a worker process needs to send here."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": self.host,
            "EMAIL_PORT": str(self.port),
            "EMAIL_USE_TLS": "false",
        }

    # --- what it received ---

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    @property
    def messages(self) -> list[EmailMessage]:
        return [item.message for item in self.received]

    @property
    def refused(self) -> list[tuple[str, int]]:
        """(address, code) of every refused RCPT, in order."""
        with self._lock:
            return list(self._refused)

    def count_by_address(self) -> Counter:
        return Counter(address for item in self.received for address in item.rcpt_tos)

    def messages_to(self, address: str) -> list[EmailMessage]:
        return [item.message for item in self.received if address.lower() in item.rcpt_tos]

    def connections(self) -> int:
        """How many connections delivered at least one message."""
        return len({item.peer for item in self.received})

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """The messages once at least `count` have arrived; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            received = self.received
            if len(received) >= count:
                return received
            time.sleep(0.05)
        raise AssertionError(f"{len(self.received)} messages arrived in {timeout} s, expected {count}")

    # --- aiosmtpd's handler hooks (through _Handler), on the server's thread ---

    async def _rcpt(self, session, envelope, address) -> str:
        key = address.lower()
        with self._lock:
            refusal = self._refusals.get(key)
            if refusal is not None and refusal[1] != 0:
                if refusal[1] is not None:
                    refusal[1] -= 1
                self._refused.append((key, refusal[0]))
                return REPLIES[refusal[0]]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def _data(self, session, envelope) -> str:
        rcpt_tos = tuple(address.lower() for address in envelope.rcpt_tos)
        with self._lock:
            hang = any(address in self._hanging for address in rcpt_tos)
        if hang:
            self.hanging += 1
            try:
                await asyncio.sleep(HANG_SECONDS)
            finally:
                self.hanging -= 1
        if self.delay:
            await asyncio.sleep(self.delay)
        with self._lock:
            if self._data_reply is not None:
                return self._data_reply
        item = Received(
            mail_from=envelope.mail_from,
            rcpt_tos=rcpt_tos,
            raw=(envelope.original_content or envelope.content) if self.keep_content else b"",
            peer=tuple(session.peer),
        )
        with self._lock:
            self._received.append(item)
        return "250 2.0.0 Accepted"


class _Handler:
    """aiosmtpd's handler: a plain object, as aiosmtpd reads every attribute of its handler on each
    connection (inspect.getmembers), which would evaluate SmtpServer's properties."""

    def __init__(self, server: SmtpServer) -> None:
        self._server = server

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        return await self._server._rcpt(session, envelope, address)

    async def handle_DATA(self, server, session, envelope) -> str:
        return await self._server._data(session, envelope)
