"""A kept-alive connection is kept, or honestly closed (issue 30): a request body the application
answers without reading (a 401, a 404) is read in full by the web process, so the client's next
request on the connection is answered; a body the application refuses unread (over
MAX_REQUEST_BODY_BYTES, or chunked) is not read, and its answer says `Connection: close`. A real
socket against the Procfile's web process."""

import json
import socket

import pytest
from django.conf import settings

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not settings.IS_POSTGRES, reason="the web process needs the test database on PostgreSQL"),
    pytest.mark.django_db(transaction=True),
]

LIMIT = 200_000  # MAX_REQUEST_BODY_BYTES of the web process under test


@pytest.fixture
def connect(start_web):
    web = start_web(MAX_REQUEST_BODY_BYTES=LIMIT, WEB_CONCURRENCY=1)
    port = int(web.url.rsplit(":", 1)[1])
    return lambda: socket.create_connection(("127.0.0.1", port), timeout=10)


def read_answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    """One answer: status, headers (lower-case names) and the body its Content-Length frames."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before an answer: {raw!r}"
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", 0)):
        body += sock.recv(65536)
    return int(status_line.split(" ")[1]), headers, body


def post(path: str, body: bytes, **headers) -> bytes:
    fields = "".join(f"{name.replace('_', '-')}: {value}\r\n" for name, value in headers.items())
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{fields}\r\n".encode() + body


def json_body(size: int) -> bytes:
    return json.dumps({"note": "x" * (size - 12)}).encode()


def test_the_next_request_is_answered_after_bodies_the_application_did_not_read(connect):
    body = json_body(90_000)  # larger than any socket buffer: much of it is still unread when the answer goes
    with connect() as sock:
        for path, status in [("/v1/me", 401), ("/v1/no-such-thing", 404)] * 3:
            sock.sendall(post(path, body, Content_Length=len(body)))
            answered, headers, _ = read_answer(sock)
            assert answered == status
            assert headers.get("connection", "keep-alive") != "close"

            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_answer(sock)[0] == 200


def test_a_body_over_the_limit_is_refused_unread_and_the_answer_says_connection_close(connect):
    with connect() as sock:
        sock.sendall(post("/v1/users/profile", b"x" * 65_536, Content_Length=LIMIT + 1))
        status, headers, body = read_answer(sock)
        assert status == 413
        assert json.loads(body)["error"]["code"] == "payload_too_large"
        assert headers["connection"] == "close"
        assert sock.recv(65536) == b""  # and it is closed


def test_a_chunked_body_is_refused_unread_and_the_answer_says_connection_close(connect):
    with connect() as sock:
        sock.sendall(post("/v1/users/profile", b"5\r\nhello\r\n", Transfer_Encoding="chunked"))
        status, headers, _ = read_answer(sock)
        assert status == 411
        assert headers["connection"] == "close"
        assert sock.recv(65536) == b""
