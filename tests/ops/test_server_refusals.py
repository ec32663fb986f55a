"""Requests the web server refuses itself, before the application sees them (a request line or header
fields over their limits, an expectation it does not meet, a request that is not HTTP), never quote
the refused input: config/server/limits.py answers the JSON error envelope with the headers of the
application's data responses; what granian refuses before it (more than 100 header fields, a head
over 64 KiB, what is not HTTP) gets the status alone, with an empty body."""

import json
import socket

import pytest
from django.conf import settings

from apps.api.errors import STATUS_CODES
from config.server import limits
from tests.conftest import wait_until

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
    """Send raw bytes to the web process and read its answer until it closes the connection (the
    write side stays open: granian drops a request whose client half-closes)."""
    host, port = web.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        raw = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:  # the server closed with part of the request unread
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


def assert_bare_refusal(answer: Answer, status: int) -> None:
    """granian's own refusals: the status, no body, the connection closed."""
    assert answer.status == status, answer.raw[:2000]
    assert answer.body == b""
    assert answer.headers["connection"] == "close"
    assert b"secret123" not in answer.raw


def with_web(test):
    """The marks of a test that starts the web process on the test database (as in test_web_process.py)."""
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
def test_more_than_100_header_fields_answer_431_without_a_body(web):
    headers = "".join(f"X-Field-{number}: {SECRET}\r\n" for number in range(101))
    answer = exchange(web, f"GET /v1/me HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n".encode())
    assert_bare_refusal(answer, 431)


@with_web
def test_a_head_larger_than_granians_buffer_answers_414_without_a_body(web):
    answer = exchange(web, f"GET /v1/posts?{SECRET}&q={'a' * 70_000} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert_bare_refusal(answer, 414)


@with_web
def test_a_request_line_that_is_not_http_answers_400_without_quoting_it(web):
    answer = exchange(web, f"this is not http {SECRET}\r\nHost: localhost\r\n\r\n".encode())
    assert_bare_refusal(answer, 400)


@with_web
def test_an_expectation_other_than_100_continue_answers_417_expectation_failed_as_json(web):
    request = f"POST /v1/me?{SECRET} HTTP/1.1\r\nHost: localhost\r\nExpect: {SECRET}\r\nContent-Length: 0\r\n\r\n"
    assert_json_refusal(exchange(web, request.encode()), 417, "expectation_failed")


@with_web
def test_disagreeing_scheme_headers_from_a_trusted_proxy_answer_400_bad_request_as_json(web):
    headers = "X-Forwarded-Proto: https\r\nX-Forwarded-Ssl: off\r\n"
    answer = exchange(web, f"GET /healthz HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n".encode())
    assert_json_refusal(answer, 400, "bad_request")


@with_web
def test_a_refusal_is_logged_with_the_clients_address_and_the_status_only(web):
    answer = exchange(web, f"GET /v1/me?{SECRET}&q={'a' * 5000} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    assert_json_refusal(answer, 414, "uri_too_long")
    wait_until(lambda: "Refused a request" in web.log_text(), timeout=10)
    assert "Refused a request from ip=127.0.0.1: 414" in web.log_text()
    assert "secret123" not in web.log_text()


@with_web
def test_a_request_within_the_limits_is_still_answered_by_the_application(web):
    answer = exchange(web, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert answer.status == 200, answer.raw
    assert answer.headers["x-request-id"]
    assert answer.json() == {"status": "ok"}


def test_every_status_the_server_answers_itself_has_a_code_and_a_fixed_message():
    assert set(limits.REFUSAL_CODES) == set(limits.REFUSAL_MESSAGES) >= {400, 408, 414, 417, 431, 500}
    for status in limits.REFUSAL_CODES:
        [start, body] = limits.refusal_messages(status)
        assert start["status"] == status
        assert json.loads(body["body"]) == {
            "error": {"code": limits.REFUSAL_CODES[status], "message": limits.REFUSAL_MESSAGES[status]}
        }


def test_codes_shared_with_the_application_are_the_applications_codes():
    shared = set(limits.REFUSAL_CODES) & set(STATUS_CODES)
    assert shared >= {400, 500}
    assert {status: limits.REFUSAL_CODES[status] for status in shared} == {
        status: STATUS_CODES[status] for status in shared
    }


def test_the_limits_are_gunicorns_and_the_messages_name_them():
    """The limits this service answered with before granian, unchanged."""
    assert (limits.LIMIT_REQUEST_LINE, limits.LIMIT_REQUEST_FIELDS, limits.LIMIT_REQUEST_FIELD_SIZE) == (
        4094,
        100,
        8190,
    )
    assert limits.REFUSAL_MESSAGES[414] == "The request line is longer than 4094 bytes."
    assert limits.REFUSAL_MESSAGES[431] == (
        "The request has more than 100 header fields, or a header field longer than 8190 bytes."
    )


def test_an_unexpected_status_still_answers_the_envelope():
    [start, body] = limits.refusal_messages(502)
    assert start["status"] == 502
    assert json.loads(body["body"]) == {"error": {"code": "internal_error", "message": limits.REFUSAL_MESSAGES[500]}}
