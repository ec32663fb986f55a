"""Requests gunicorn refuses itself, before the application sees them (a request line or header
fields over its limits, a request that is not HTTP), answer the JSON error envelope with the
headers of the application's data responses, never gunicorn's HTML page, and never quote the
refused input (config/gunicorn.py)."""

import inspect
import json
import re
import runpy
import socket

import pytest
from django.conf import settings
from gunicorn.config import Config
from gunicorn.workers.base import Worker

from apps.api.errors import STATUS_CODES
from tests.conftest import wait_until

GUNICORN_CONFIG = str(settings.BASE_DIR / "config" / "gunicorn.py")
SECRET = "token=secret123"


class Answer:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        head, _, self.body = raw.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split(" ")[1])
        self.headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}

    def json(self) -> dict:
        return json.loads(self.body)


def exchange(web, request: bytes) -> Answer:
    """Send raw bytes to the web process and read its answer until it closes the connection."""
    host, port = web.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        raw = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:  # gunicorn closed with part of the request unread
                break
            if not chunk:
                break
            raw += chunk
    assert raw, "no answer"
    return Answer(raw)


def assert_json_refusal(answer: Answer, status: int, code: str) -> None:
    assert answer.status == status, answer.raw[:2000]
    assert answer.headers["content-type"] == "application/json"
    assert int(answer.headers["content-length"]) == len(answer.body)
    assert answer.headers["x-api-version"] == "1"
    assert answer.headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["connection"] == "close"
    assert answer.headers["cache-control"] == "no-store"
    error = answer.json()["error"]
    assert error["code"] == code
    assert error["message"]
    assert set(error) == {"code", "message"}
    assert b"secret123" not in answer.raw


@pytest.fixture
def web(start_web):
    return start_web(WEB_CONCURRENCY=1, WEB_THREADS=2)


def with_web(test):
    """The marks of a test that starts gunicorn on the test database (as in test_web_process.py)."""
    test = pytest.mark.django_db(test)
    reason = "the web process needs the test database on PostgreSQL"
    test = pytest.mark.skipif(not settings.IS_POSTGRES, reason=reason)(test)
    return pytest.mark.postgres(test)


@with_web
def test_a_request_line_over_the_limit_answers_414_uri_too_long_as_json_without_the_query_string(web):
    target = f"/v1/posts?{SECRET}&q=" + "a" * 10_000
    answer = exchange(web, f"GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert_json_refusal(answer, 414, "uri_too_long")
    assert answer.json()["error"]["message"] == "The request line is longer than 4094 bytes."


@with_web
def test_a_header_field_over_the_limit_answers_431_request_header_fields_too_large_as_json(web):
    header = f"X-Note: {SECRET}" + "b" * 10_000
    answer = exchange(web, f"GET /v1/me HTTP/1.1\r\nHost: localhost\r\n{header}\r\n\r\n".encode())
    assert_json_refusal(answer, 431, "request_header_fields_too_large")


@with_web
def test_more_than_100_header_fields_answer_431_request_header_fields_too_large_as_json(web):
    headers = "".join(f"X-Field-{number}: {SECRET}\r\n" for number in range(101))
    answer = exchange(web, f"GET /v1/me HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n".encode())
    assert_json_refusal(answer, 431, "request_header_fields_too_large")
    assert "more than 100 header fields" in answer.json()["error"]["message"]


@with_web
def test_a_request_line_that_is_not_http_answers_400_bad_request_as_json_without_quoting_it(web):
    answer = exchange(web, f"this is not http {SECRET}\r\nHost: localhost\r\n\r\n".encode())
    assert_json_refusal(answer, 400, "bad_request")


@with_web
def test_a_refused_request_line_is_logged_without_its_query_string(web):
    answer = exchange(web, f"GET /v1/me?{SECRET}\r\nHost: localhost\r\n\r\n".encode())  # no HTTP version
    assert_json_refusal(answer, 400, "bad_request")
    wait_until(lambda: "Invalid request from" in web.log_text(), timeout=10)
    assert "secret123" not in web.log_text()
    assert "/v1/me?<query left out>" in web.log_text()


@with_web
def test_a_request_within_the_limits_is_still_answered_by_the_application(web):
    answer = exchange(web, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert answer.status == 200, answer.raw
    assert answer.headers["x-request-id"]
    assert answer.json() == {"status": "ok"}


def test_every_status_gunicorn_chooses_itself_has_a_code_and_a_fixed_message():
    """A gunicorn upgrade that answers a new status is noticed here, not by a client."""
    chosen = {int(status) for status in re.findall(r"status_int = (\d{3})", inspect.getsource(Worker.handle_error))}
    assert chosen >= {400, 403, 414, 417, 431, 500, 501}
    config = runpy.run_path(GUNICORN_CONFIG)
    messages = config["refusal_messages"](Config())
    assert chosen <= set(config["REFUSAL_CODES"])
    assert chosen <= set(messages)


def test_codes_shared_with_the_application_are_the_applications_codes():
    codes = runpy.run_path(GUNICORN_CONFIG)["REFUSAL_CODES"]
    shared = set(codes) & set(STATUS_CODES)
    assert shared >= {400, 500}
    assert {status: codes[status] for status in shared} == {status: STATUS_CODES[status] for status in shared}


def test_the_limits_are_gunicorns_defaults_and_the_messages_name_them():
    config = runpy.run_path(GUNICORN_CONFIG)
    defaults = Config()
    for name in ("limit_request_line", "limit_request_fields", "limit_request_field_size"):
        assert config[name] == defaults.settings[name].default, name
    messages = config["refusal_messages"](defaults)
    assert messages[414] == "The request line is longer than 4094 bytes."
    assert messages[431] == "The request has more than 100 header fields, or a header field longer than 8190 bytes."


def test_an_unexpected_status_still_answers_the_envelope():
    config = runpy.run_path(GUNICORN_CONFIG)
    messages = config["refusal_messages"](Config())
    raw = config["refusal_response"](502, "Bad Gateway", messages)
    answer = Answer(raw)
    assert answer.status == 502
    assert answer.json() == {"error": {"code": "internal_error", "message": messages[500]}}
