"""Log lines cannot be forged: what a request carries (its path, headers, the e-mail of a sign-in) is
written escaped, so each record is one line (a traceback follows on lines of its own) and nothing a
client sends starts a line, in both log formats (settings.LOGGING's formatters).

The requests go through the Django test client, the log written as the service's console handler
writes it in each format; and through the Procfile's web process, its output read back.
"""

import json
import logging
import logging.config
import re
import socket
from urllib.parse import quote, unquote

import pytest
from django.conf import settings
from django.http import HttpResponse
from django.test import Client
from django.urls import path

from apps.api.observability import RequestIdFilter, escape_controls

pytestmark = pytest.mark.django_db

# What an attacker wants a reader to take for a line of the service's own.
FORGED = "2026-11-24 18:00:00,000 INFO cps.request [forged] request method=GET path=/v1/me status=200"
# Characters that end a line for some reader (str.splitlines(), a terminal, a log shipper), or rewrite the terminal.
LINE_BREAKING = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202e]")
# Hostile paths, encoded as a client sends them, and how each is written.
HOSTILE_PATHS = {
    "/healthz%0a" + quote(FORGED): "/healthz\\n" + FORGED,
    "/healthz%0d%0a" + quote(FORGED): "/healthz\\r\\n" + FORGED,
    "/healthz%00%0d" + quote(FORGED): "/healthz\\x00\\r" + FORGED,
    "/healthz%1b[2K%0d" + quote(FORGED): "/healthz\\x1b[2K\\r" + FORGED,  # erase the line, write another
    "/healthz%e2%80%a8" + quote(FORGED): "/healthz\\u2028" + FORGED,  # Unicode's line separator
    "/healthz%c2%85" + quote(FORGED): "/healthz\\x85" + FORGED,  # NEL
}
LONG_PATH = "/healthz" + ("%0a" + quote(FORGED)) * 100


class Written(logging.Handler):
    """What the service's console handler writes (its filters; the formatter of `format_name`)."""

    def __init__(self, format_name: str) -> None:
        super().__init__()
        [console] = [h for h in logging.getLogger().handlers if any(isinstance(f, RequestIdFilter) for f in h.filters)]
        self.filters = list(console.filters)
        spec = dict(settings.LOGGING["formatters"][format_name])
        # Built as dictConfig builds it at start-up.
        self.setFormatter(logging.config.DictConfigurator({}).configure_formatter(spec))
        self.format_name = format_name
        self.texts: list[str] = []
        self.records: list[logging.LogRecord] = []
        self.failures: list[Exception] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception as error:  # the console handler would lose the record
            self.failures.append(error)
        else:
            self.records.append(record)
            self.texts.append(text)

    def shown(self) -> list[str]:
        """What a reader sees of each record: the line, or for JSON its message and extra fields."""
        if self.format_name == "plain":
            return self.texts
        values = [json.loads(text) for text in self.texts]
        return [" ".join(str(value) for key, value in fields.items() if key != "exc_info") for fields in values]


@pytest.fixture(params=["plain", "json"])
def written(request):
    handler = Written(request.param)
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)


def assert_one_line_each(written: Written) -> None:
    """Each record is one line (with a traceback's own lines after it), and nothing starts a line but
    the service."""
    assert written.texts and not written.failures
    for record, text in zip(written.records, written.texts, strict=True):
        assert not LINE_BREAKING.search(text), text
        if written.format_name == "json":
            assert "\n" not in text and text.isascii(), text
            fields = json.loads(text)
            assert not any(LINE_BREAKING.search(str(value)) for value in fields.values()), fields
            if not record.exc_info:
                assert not any("\n" in str(value) for value in fields.values()), fields
        elif not record.exc_info:
            assert "\n" not in text, text
        for line in text.splitlines():
            assert not line.startswith(FORGED[:10]), text


@pytest.mark.parametrize("sent", [*HOSTILE_PATHS, LONG_PATH], ids=["lf", "crlf", "nul", "esc", "u2028", "nel", "long"])
def test_a_hostile_path_is_written_escaped_on_one_line(client, written, sent):
    response = client.get(f"{sent}?token=one-time-secret")
    assert response.status_code == 404
    assert_one_line_each(written)
    shown = " ".join(written.shown())
    escaped = HOSTILE_PATHS.get(sent) or escape_controls(unquote(LONG_PATH))
    assert f"Not Found: {escaped}" in shown and f"path={escaped} status=404" in shown
    assert "one-time-secret" not in shown


def test_a_hostile_host_header_is_written_escaped_traceback_and_all(client, written):
    response = client.get("/healthz", HTTP_HOST=f"evil.example\n{FORGED}\u2028")
    assert response.status_code == 400
    [disallowed] = [text for r, text in zip(written.records, written.texts, strict=True) if r.exc_info]
    assert_one_line_each(written)
    # Written in the message, and in the traceback's last line (the exception's), escaped in both.
    if written.format_name == "json":
        disallowed = "\n".join(str(value) for value in json.loads(disallowed).values())
    assert disallowed.count(f"Invalid HTTP_HOST header: 'evil.example\\n{FORGED}\\u2028'") == 2


def test_hostile_origin_and_referer_headers_are_written_escaped(written):
    browser = Client(enforce_csrf_checks=True)
    origin = f"https://evil.example\x85{FORGED}"
    assert browser.post("/admin/login/", HTTP_ORIGIN=origin).status_code == 403
    # Checked on HTTPS requests that send no Origin; URL parsing drops CR, LF and tab, not the others.
    referer = f"https://evil.example/\x1b[2K\u2028{FORGED}"
    assert browser.post("/admin/login/", secure=True, HTTP_REFERER=referer).status_code == 403
    assert_one_line_each(written)
    shown = " ".join(written.shown())
    assert f"https://evil.example\\x85{FORGED} does not match" in shown
    assert f"https://evil.example/\\x1b[2K\\u2028{FORGED} does not match" in shown


def test_a_hostile_request_id_is_replaced(client, written):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=f"abc\n{FORGED}")
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
    assert_one_line_each(written)
    assert FORGED not in " ".join(written.texts)


# A view that logs what the client sent, as any code may: its message and its extra fields.
def logging_view(request):
    agent = request.headers.get("User-Agent", "")
    logging.getLogger("cps.test.forgery").warning("agent %s", agent, extra={"user_agent": agent, "sent": [agent]})
    return HttpResponse("ok")


urlpatterns = [path("_test/agent", logging_view)]


@pytest.mark.urls(__name__)
def test_a_hostile_user_agent_logged_by_any_code_is_written_escaped(client, written):
    client.get("/_test/agent", HTTP_USER_AGENT=f"curl\r\n{FORGED}\x00\x9b2K\ud800")
    assert_one_line_each(written)
    escaped = f"curl\\r\\n{FORGED}\\x00\\x9b2K\\ud800"
    [(record, text)] = [
        (r, t) for r, t in zip(written.records, written.texts, strict=True) if r.name.endswith("forgery")
    ]
    assert record.getMessage() == f"agent curl\r\n{FORGED}\x00\x9b2K\ud800"  # other handlers see what was logged
    if written.format_name == "plain":
        assert text.endswith(f"agent {escaped}")
    else:
        fields = json.loads(text)
        assert fields["message"] == f"agent {escaped}" and fields["user_agent"] == escaped
        assert fields["sent"] == [escaped]


def test_a_hostile_e_mail_of_a_failed_sign_in_is_written_escaped(client, written, settings):
    # The failure that uses up the e-mail's budget is logged, naming the e-mail (as its budget counts
    # it: lower-case).
    settings.SIGN_IN_FAILURE_LIMIT_PER_EMAIL = 1
    email = f"victim@example.com\r\n{FORGED}\u2028x"
    assert client.post("/admin/login/", {"username": email, "password": "wrong"}).status_code == 200
    # One with NUL is refused by the form, before any password is checked or anything is logged.
    assert client.post("/admin/login/", {"username": f"{email}\x00", "password": "wrong"}).status_code == 200
    assert_one_line_each(written)
    assert f"victim@example.com\\r\\n{FORGED.lower()}\\u2028x" in " ".join(written.shown())


def test_extra_fields_are_escaped_names_and_all(written):
    sent = f"x\n{FORGED}\x00"
    logging.getLogger("cps.test.forgery").warning("sent", extra={sent: sent, "headers": {sent: [sent]}})
    assert_one_line_each(written)
    if written.format_name == "json":
        fields = json.loads(written.texts[0])
        escaped = f"x\\n{FORGED}\\x00"
        assert fields[escaped] == escaped and fields["headers"] == {escaped: [escaped]}


def test_a_traceback_keeps_its_lines_and_escapes_the_exceptions_message(written):
    try:
        try:
            raise KeyError("first")
        except KeyError as error:
            raise ValueError(f"bad input\n{FORGED}") from error
    except ValueError:
        logging.getLogger("cps.test.forgery").exception("failed")
    assert_one_line_each(written)
    [text] = written.texts
    traceback = text if written.format_name == "plain" else json.loads(text)["exc_info"]
    lines = traceback.splitlines()
    assert "The above exception was the direct cause of the following exception:" in lines
    assert sum(line.startswith("Traceback (most recent call last):") for line in lines) == 2
    assert any(
        line.startswith("  File ")
        and line.endswith("in test_a_traceback_keeps_its_lines_and_escapes_the_exceptions_message")
        for line in lines
    )
    assert lines[-1] == f"ValueError: bad input\\n{FORGED}"


# --- Through the web process ---


def send(url: str, target: str, *headers: bytes, method: str = "GET") -> bytes:
    """A request sent as is (no client library would send it); the answer's status line."""
    host, port = url.removeprefix("http://").split(":")
    head = [f"{method} {target} HTTP/1.1".encode(), b"Connection: close", b"Content-Length: 0", *headers]
    if not any(header.startswith(b"Host:") for header in headers):
        head.append(b"Host: 127.0.0.1")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n")
        answer = b""
        while b"\r\n" not in answer and (chunk := sock.recv(4096)):
            answer += chunk
    return answer.split(b"\r\n")[0]


@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_the_web_process_writes_hostile_requests_escaped(start_web, log_format):
    web = start_web(LOG_FORMAT=log_format, WEB_CONCURRENCY=1, WEB_THREADS=2, REDIS_URL=settings.REDIS_URL)
    target = "/healthz%0a" + quote(FORGED) + "%0d%00%1b%e2%80%a8?token=one-time-secret"
    assert send(web.url, target) == b"HTTP/1.1 404 Not Found"
    # A header can carry bytes 0x80-0xff (read as Latin-1): 0x85 is NEL, a line break to str.splitlines().
    nel = f"evil.example\x85{FORGED}".encode("latin-1")
    assert send(web.url, "/healthz", b"Host: " + nel) == b"HTTP/1.1 400 Bad Request"
    assert send(web.url, "/admin/login/", b"Origin: http://" + nel, method="POST") == b"HTTP/1.1 403 Forbidden"

    # Each record is written (and flushed) before its response is sent.
    log = web.log_text()
    assert not LINE_BREAKING.search(log), log
    assert not [line for line in log.splitlines() if line.startswith(FORGED[:10])], log
    assert "one-time-secret" not in log
    if log_format == "json":
        records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        log = "\n".join(" ".join(str(value) for value in record.values()) for record in records)
    escaped_path = f"/healthz\\n{FORGED}\\r\\x00\\x1b\\u2028"
    assert f"Not Found: {escaped_path}" in log and f"path={escaped_path} status=404" in log
    assert f"Invalid HTTP_HOST header: 'evil.example\\x85{FORGED}'" in log
    assert f"Origin checking failed - http://evil.example\\x85{FORGED} does not match" in log
