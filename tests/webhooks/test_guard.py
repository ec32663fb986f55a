"""The send-time guard: a refused address never gets a TCP connection, and the address dialled is
the one that was checked."""

import contextlib
import socket
import ssl
import threading

import pytest

from apps.core import addresses
from apps.webhooks import transport
from tests.conftest import free_port

REFUSED_LOOPBACK = "address 127.0.0.1 is not allowed (not a public address)"


class Listener:
    """A bare TCP listener on 127.0.0.1 that counts the connections it accepts (and closes them):
    a connection attempt shows up here even when no HTTP request follows."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> int:
        """Stop accepting (after anything already queued) and return the count."""
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()
        return self.accepted


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def _send(url: str) -> transport.Outcome:
    return transport.send(url=url, secret="whsec_test", body=b"{}", event="post.published", delivery_id="d-1")


@pytest.fixture
def resolver(monkeypatch):
    """Made-up host names resolve to the addresses the test sets; every look-up is recorded."""
    real = socket.getaddrinfo
    answers: dict[str, list[str]] = {}
    lookups: list[str] = []

    def fake(host, port, family=0, type=0, proto=0, flags=0):
        if host not in answers:
            return real(host, port, family, type, proto, flags)
        lookups.append(host)
        return [
            (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
            for ip in answers[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return answers, lookups


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_refused_address_gets_no_tcp_connection(listener, settings, scheme):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    outcome = _send(f"{scheme}://127.0.0.1:{listener.port}/hook")
    assert listener.close() == 0
    assert outcome.status is None
    assert outcome.error == REFUSED_LOOPBACK


def test_the_listener_does_count_a_connection_when_allowed(listener, private_targets):
    # The control for the test above: the same send, allowed, does reach the listener.
    outcome = _send(f"http://127.0.0.1:{listener.port}/hook")
    assert listener.close() == 1
    assert outcome.status is None and outcome.error.startswith("connection failed")


def test_a_closed_port_gets_the_same_error_as_an_open_one(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    assert _send(f"http://127.0.0.1:{free_port()}/hook").error == REFUSED_LOOPBACK
    assert _send(f"https://127.0.0.1:{free_port()}/hook").error == REFUSED_LOOPBACK


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://100.64.0.1/hook", "address 100.64.0.1 is not allowed (not a public address)"),
        ("http://[2002:7f00:1::]/hook", "address 2002:7f00:1:: is not allowed (not a public address)"),
        ("https://[::ffff:10.0.0.1]/hook", "address ::ffff:10.0.0.1 is not allowed (not a public address)"),
    ],
)
def test_non_public_literals_are_refused_without_dialling(settings, monkeypatch, url, error):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    dialled = []
    monkeypatch.setattr(addresses, "create_connection", lambda address, *args, **kwargs: dialled.append(address))
    assert _send(url).error == error
    assert dialled == []


def test_a_refusal_comes_out_of_the_pool_manager_as_blocked_address(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(addresses.BlockedAddress, match=r"^address 127\.0\.0\.1 is not allowed"):
        addresses.pool_manager().urlopen("GET", f"http://127.0.0.1:{free_port()}/", retries=False, redirect=False)


def test_a_host_with_one_refused_address_among_several_is_refused(settings, resolver, monkeypatch):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    answers, _ = resolver
    answers["mixed.test"] = ["93.184.215.14", "10.0.0.1"]
    dialled = []
    monkeypatch.setattr(addresses, "create_connection", lambda address, *args, **kwargs: dialled.append(address))
    assert _send("https://mixed.test/hook").error == "address 10.0.0.1 is not allowed (not a public address)"
    assert dialled == []
    assert "10.0.0.1" in addresses.check_url("https://mixed.test/hook")


def test_the_checked_address_is_dialled_not_a_second_answer(settings, resolver, monkeypatch):
    # DNS rebinding: a name that answers with a public address, then with loopback.
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    answers, lookups = resolver
    answers["rebind.test"] = ["93.184.215.14"]
    dialled = []

    def dial(address, *args, **kwargs):
        dialled.append(address)
        answers["rebind.test"] = ["127.0.0.1"]
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(addresses, "create_connection", dial)
    outcome = _send("http://rebind.test:8080/hook")
    assert lookups == ["rebind.test"]
    assert dialled == [("93.184.215.14", 8080)]
    assert outcome.error.startswith("connection failed") and "Connection refused" in outcome.error


def test_each_checked_address_is_tried_in_order(private_targets, resolver, receiver):
    answers, lookups = resolver
    port = receiver.server.server_address[1]
    # Nothing listens on 127.0.0.2 at the receiver's port (it is bound to 127.0.0.1 only).
    answers["hooks.test"] = ["127.0.0.2", "127.0.0.1"]
    outcome = _send(f"http://hooks.test:{port}/hook")
    assert outcome.status == 200, outcome.error
    assert lookups == ["hooks.test"]


def test_allowed_sends_still_reach_the_receiver(private_targets, receiver):
    outcome = _send(receiver.url)
    assert outcome.ok
    (request,) = receiver.wait_for(1)
    assert request.headers["Host"] == receiver.url.split("/")[2]


def test_the_host_name_is_kept_while_the_checked_address_is_dialled(private_targets, resolver, receiver):
    answers, lookups = resolver
    answers["hooks.test"] = ["127.0.0.1"]
    port = receiver.server.server_address[1]
    outcome = _send(f"http://hooks.test:{port}/hook")
    assert outcome.ok, outcome.error
    (request,) = receiver.wait_for(1)
    assert request.headers["Host"] == f"hooks.test:{port}"
    assert lookups == ["hooks.test"]


def test_tls_is_started_with_the_host_name_on_the_checked_address(private_targets, resolver):
    answers, lookups = resolver
    answers["hooks.test"] = ["127.0.0.1"]
    # No certificate: the server name the client sends (SNI) is all this server needs to see.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    names: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(10)

        def handshake():
            conn, _ = server.accept()
            with conn, contextlib.suppress(ssl.SSLError, OSError):
                context.wrap_socket(conn, server_side=True)

        thread = threading.Thread(target=handshake, daemon=True)
        thread.start()
        outcome = _send(f"https://hooks.test:{server.getsockname()[1]}/hook")
        thread.join(timeout=10)
    assert names == ["hooks.test"]
    assert lookups == ["hooks.test"]
    assert outcome.error.startswith("TLS error")
