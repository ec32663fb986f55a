import json
import re
import socket
import subprocess
import time

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import RequestDataTooBig
from django.core.handlers.exception import response_for_exception
from django.test import Client, RequestFactory
from django.urls import reverse

from apps.api.errors import exception_handler
from apps.users import sign_in_limits
from tests.conftest import settings_loaded
from tests.factories import OperatorFactory

pytestmark = pytest.mark.django_db


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()["error"]


# --- Request body size ---


@pytest.fixture
def limit_of_100_bytes(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100


def padded_json(size: int) -> bytes:
    body = b'{"title": "ok"}'
    return body + b" " * (size - len(body))


@pytest.mark.urls("tests.api.urls")
def test_a_body_over_the_limit_gets_413_in_the_envelope(authed, limit_of_100_bytes):
    error = error_of(authed.post("/v1/_test/echo", padded_json(101), content_type="application/json"), 413)
    assert error["code"] == "payload_too_large"
    assert "100 bytes" in error["message"]


@pytest.mark.urls("tests.api.urls")
def test_a_body_at_the_limit_is_accepted(authed, limit_of_100_bytes):
    response = authed.post("/v1/_test/echo", padded_json(100), content_type="application/json")
    assert response.status_code == 200
    assert response.json() == {"data": {"title": "ok"}}


@pytest.mark.urls("tests.api.urls")
def test_the_size_is_checked_before_the_key(api_client, limit_of_100_bytes):
    response = api_client.post("/v1/_test/echo", padded_json(5000), content_type="application/json")
    assert error_of(response, 413)["code"] == "payload_too_large"


def test_the_default_limit_is_one_mebibyte():
    assert django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 1024 * 1024


def test_request_data_too_big_from_a_drf_view_is_413():
    response = exception_handler(RequestDataTooBig("too big"), {})
    assert response.status_code == 413
    assert response.data["error"]["code"] == "payload_too_large"


def test_request_data_too_big_outside_drf_is_a_json_413_under_v1_only():
    api = response_for_exception(RequestFactory().post("/v1/me"), RequestDataTooBig("too big"))
    assert api.status_code == 413
    assert json.loads(api.content)["error"]["code"] == "payload_too_large"
    admin = response_for_exception(RequestFactory().post("/admin/login/"), RequestDataTooBig("too big"))
    assert admin.status_code == 400
    assert admin["Content-Type"].startswith("text/html")


@pytest.mark.urls("tests.api.urls")
def test_a_chunked_body_without_length_gets_411(authed):
    response = authed.post("/v1/_test/echo", HTTP_TRANSFER_ENCODING="chunked")
    assert error_of(response, 411)["code"] == "length_required"


# --- JSON bodies only ---


@pytest.mark.urls("tests.api.urls")
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", ""])
def test_a_body_that_is_not_json_gets_415(authed, content_type):
    response = authed.generic("POST", "/v1/_test/echo", b'{"title": "x"}', content_type=content_type)
    error = error_of(response, 415)
    assert error["code"] == "unsupported_media_type"
    assert "application/json" in error["message"]


def test_a_body_that_is_not_json_gets_415_even_where_the_view_ignores_bodies(authed):
    response = authed.generic("GET", "/v1/me", b"hello", content_type="text/plain")
    assert error_of(response, 415)["code"] == "unsupported_media_type"


@pytest.mark.urls("tests.api.urls")
@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8"])
def test_json_bodies_are_accepted(authed, content_type):
    response = authed.generic("POST", "/v1/_test/echo", b'{"title": "x"}', content_type=content_type)
    assert response.status_code == 200


def test_requests_without_a_body_need_no_content_type(authed):
    assert authed.get("/v1/me", CONTENT_TYPE="text/plain").status_code == 200


# --- Accept ---


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "text/*", "image/png"])
def test_an_accept_header_without_json_gets_406_in_the_envelope(authed, accept):
    error = error_of(authed.get("/v1/me", HTTP_ACCEPT=accept), 406)
    assert error["code"] == "not_acceptable"


@pytest.mark.parametrize(
    "accept", [None, "application/json", "*/*", "application/*", "text/html, application/json;q=0.9"]
)
def test_accept_headers_that_allow_json_are_served(authed, accept):
    extra = {} if accept is None else {"HTTP_ACCEPT": accept}
    response = authed.get("/v1/me", **extra)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


# --- Version, caching and security headers ---


@pytest.mark.parametrize("path", ["/v1/me", "/v1/nothing", "/v2/me", "/v1/openapi.json", "/v1/docs"])
def test_every_api_response_names_the_api_version(authed, api_client, path):
    assert authed.get(path)["X-API-Version"] == "1"
    assert api_client.get(path)["X-API-Version"] == "1"


def test_other_responses_name_the_api_version_too(client):
    assert client.get(reverse("admin:login"))["X-API-Version"] == "1"


@pytest.mark.parametrize("path", ["/v2/me", "/v2/channels/1", "/v10/"])
def test_unknown_versions_are_a_json_404(authed, path):
    assert error_of(authed.get(path), 404)["code"] == "not_found"


def test_authenticated_responses_are_private_and_vary_by_key(authed):
    response = authed.get("/v1/me")
    assert {part.strip() for part in response["Cache-Control"].split(",")} == {"private", "no-cache"}
    assert "Authorization" in response["Vary"]


def test_refusals_vary_by_key_too(api_client):
    response = api_client.get("/v1/me")
    assert response.status_code == 401
    assert "Authorization" in response["Vary"]
    assert "private" in response["Cache-Control"]


def test_api_responses_carry_the_security_headers(authed):
    response = authed.get("/v1/me")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"


def test_early_refusals_carry_the_security_headers(api_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    response = api_client.post("/v1/me", "x" * 20, content_type="application/json")
    assert response.status_code == 413
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-API-Version"] == "1"


def test_html_pages_get_a_policy_that_allows_only_this_site(client):
    policy = client.get(reverse("admin:login"))["Content-Security-Policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


def test_the_docs_page_needs_no_inline_script(client):
    html = client.get("/v1/docs").content.decode()
    scripts = re.findall(r"<script[^>]*>", html)
    assert scripts
    assert all("src=" in tag for tag in scripts), scripts
    script_url = re.findall(r'<script src="([^"]+script[^"]*)"', html)[-1].replace("&amp;", "&")
    init = client.get(script_url)
    assert init.status_code == 200
    assert "SwaggerUIBundle" in init.content.decode()


def test_hsts_is_sent_over_https_when_configured(client, settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    assert client.get("/v1/me", secure=True)["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert "Strict-Transport-Security" not in client.get("/v1/me")


def test_hsts_is_off_by_default(client):
    assert "Strict-Transport-Security" not in client.get("/v1/me", secure=True)


# --- Admin login throttling ---


@pytest.fixture
def operator():
    user = OperatorFactory()
    user.set_password("right-password")
    user.save()
    return user


def log_in(address: str, user, password: str):
    return Client(REMOTE_ADDR=address).post(reverse("admin:login"), {"username": user.email, "password": password})


@pytest.fixture
def three_admin_failures(settings):
    settings.ADMIN_LOGIN_FAILURE_LIMIT = 3


def test_admin_logins_are_refused_after_too_many_failures(operator, three_admin_failures):
    assert [log_in("203.0.113.9", operator, "wrong").status_code for _ in range(3)] == [200, 200, 200]
    response = log_in("203.0.113.9", operator, "right-password")
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert 0 < int(response["Retry-After"]) <= sign_in_limits.ADMIN_LOGIN_WINDOW
    # Another address is not affected.
    assert log_in("198.51.100.4", operator, "right-password").status_code == 302


def test_the_admin_login_form_is_still_shown_to_a_throttled_address(operator, three_admin_failures):
    for _ in range(3):
        log_in("203.0.113.9", operator, "wrong")
    assert Client(REMOTE_ADDR="203.0.113.9").get(reverse("admin:login")).status_code == 200


def test_successful_admin_logins_are_not_counted(operator, three_admin_failures):
    assert [log_in("203.0.113.9", operator, "right-password").status_code for _ in range(4)] == [302] * 4


def test_the_admin_login_throttle_ends_with_its_window(operator, three_admin_failures, monkeypatch):
    # The failures expire in the cache (Redis or local memory), on its own clock: a short window, really waited for.
    monkeypatch.setattr(sign_in_limits, "ADMIN_LOGIN_WINDOW", 2)
    for _ in range(3):
        log_in("203.0.113.9", operator, "wrong")
    last_failure = time.monotonic()
    assert log_in("203.0.113.9", operator, "right-password").status_code == 429
    # Refused attempts are not counted: they do not make the window last longer.
    time.sleep(max(0.0, last_failure + 1.2 - time.monotonic()))
    assert log_in("203.0.113.9", operator, "wrong").status_code == 429
    time.sleep(max(0.0, last_failure + sign_in_limits.ADMIN_LOGIN_WINDOW + 0.5 - time.monotonic()))
    assert log_in("203.0.113.9", operator, "right-password").status_code == 302


def test_the_web_sign_in_page_shares_the_login_throttle(operator, three_admin_failures):
    for _ in range(3):
        log_in("203.0.113.9", operator, "wrong")
    response = Client(REMOTE_ADDR="203.0.113.9").post(
        reverse("web-login"), {"username": operator.email, "password": "right-password"}
    )
    assert response.status_code == 429


def test_an_empty_limit_never_throttles(operator, settings):
    settings.ADMIN_LOGIN_FAILURE_LIMIT = None
    assert [log_in("203.0.113.9", operator, "wrong").status_code for _ in range(12)] == [200] * 12
    assert log_in("203.0.113.9", operator, "right-password").status_code == 302


def test_a_throttled_address_is_refused_before_its_password_is_checked(operator, three_admin_failures, monkeypatch):
    for _ in range(3):
        log_in("203.0.113.9", operator, "wrong")
    checked = []
    monkeypatch.setattr(ModelBackend, "authenticate", lambda *args, **kwargs: checked.append(kwargs))
    response = log_in("203.0.113.9", operator, "right-password")
    assert response.status_code == 429
    assert "Try again in 15 minutes" in response.content.decode()
    assert checked == []


def test_the_login_throttle_sees_the_client_address_as_the_rate_limits_do(operator, three_admin_failures, settings):
    def log_in_via_proxy(forwarded_for: str, password: str) -> int:
        client = Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for)
        return client.post(reverse("admin:login"), {"username": operator.email, "password": password}).status_code

    # Without a trusted proxy the header is ignored: a client cannot dodge the throttle by forging it.
    assert [log_in_via_proxy(f"198.51.100.{n}", "wrong") for n in range(3)] == [200, 200, 200]
    assert log_in_via_proxy("198.51.100.99", "right-password") == 429
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert [log_in_via_proxy("9.9.9.9, 203.0.113.7", "wrong") for _ in range(3)] == [200, 200, 200]
    assert log_in_via_proxy("9.9.9.9, 203.0.113.7", "right-password") == 429
    assert log_in_via_proxy("9.9.9.9, 203.0.113.8", "right-password") == 302


def test_the_api_is_not_affected_by_the_login_throttle(operator, three_admin_failures, api_key):
    for _ in range(3):
        log_in("203.0.113.9", operator, "wrong")
    api = Client(REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION=f"Bearer {api_key.raw}")
    assert api.get("/v1/me").status_code == 200


def test_logins_work_unthrottled_while_the_cache_is_unreachable(operator, three_admin_failures, settings, caplog):
    settings.SIGN_IN_FAILURE_LIMIT_PER_EMAIL = 3  # the e-mail's budget fails open too
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port}/0",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    assert [log_in("203.0.113.9", operator, "wrong").status_code for _ in range(4)] == [200] * 4
    assert log_in("203.0.113.9", operator, "right-password").status_code == 302
    assert any("unreachable" in record.getMessage() for record in caplog.records)


def test_the_admin_lives_at_admin_url():
    assert reverse("admin:login") == f"/{django_settings.ADMIN_URL}login/"


# --- Settings from the environment, validated at start-up ---

# What these tests set, unset first (as prefixes: the names of single variables match no other one).
UNSET = (
    "RATE_LIMIT_",
    "SECURE_HSTS_",
    "DJANGO_",
    "ENVIRONMENT",
    "SECRET_KEY",
    "DEBUG",
    "MAX_REQUEST_BODY_BYTES",
    "NUM_PROXIES",
    "ADMIN_LOGIN_FAILURE_LIMIT",
    "SIGN_IN_FAILURE_LIMIT_PER_EMAIL",
)
SHOW = (
    "import json, config.settings as s; print(json.dumps({'DEBUG': s.DEBUG, 'RATE_LIMITS': s.RATE_LIMITS, "
    "'AUTH': s.RATE_LIMIT_AUTH_FAILURES, 'BODY': s.DATA_UPLOAD_MAX_MEMORY_SIZE, 'HSTS': s.SECURE_HSTS_SECONDS, "
    "'PROXIES': s.REST_FRAMEWORK['NUM_PROXIES'], 'ADMIN': s.ADMIN_LOGIN_FAILURE_LIMIT, "
    "'PER_EMAIL': s.SIGN_IN_FAILURE_LIMIT_PER_EMAIL}))"
)


def load_settings(**env) -> subprocess.CompletedProcess:
    return settings_loaded(SHOW, env, unset=UNSET)


# A key for the stored credentials, which production requires (a test value, protecting nothing).
FERNET_KEY = "oMUpGbfQHoF274Ufbt0rjDQZ1pUMb3C9-nKKiJhh2d8="


def settings_from(**env) -> dict:
    result = load_settings(**env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_defaults_are_debug_off_and_the_documented_limits():
    loaded = settings_from()
    assert loaded["DEBUG"] is False
    assert loaded["RATE_LIMITS"] == {"free": 1000, "starter": 10000, "professional": 50000, "enterprise": None}
    assert (loaded["AUTH"], loaded["BODY"], loaded["HSTS"], loaded["PROXIES"], loaded["ADMIN"]) == (
        100,
        1024 * 1024,
        0,
        0,
        10,
    )
    assert loaded["PER_EMAIL"] == 20


def test_limits_and_hardening_knobs_come_from_the_environment():
    loaded = settings_from(
        RATE_LIMIT_FREE="5",
        RATE_LIMIT_ENTERPRISE="100000",
        RATE_LIMIT_STARTER="",
        RATE_LIMIT_AUTH_FAILURES="",
        MAX_REQUEST_BODY_BYTES="2048",
        SECURE_HSTS_SECONDS="3600",
        NUM_PROXIES="2",
        ADMIN_LOGIN_FAILURE_LIMIT="4",
        SIGN_IN_FAILURE_LIMIT_PER_EMAIL="",
        DEBUG="true",
    )
    assert loaded["RATE_LIMITS"] == {"free": 5, "starter": None, "professional": 50000, "enterprise": 100000}
    assert (loaded["AUTH"], loaded["BODY"], loaded["HSTS"], loaded["PROXIES"], loaded["ADMIN"]) == (
        None,
        2048,
        3600,
        2,
        4,
    )
    assert loaded["PER_EMAIL"] is None
    assert loaded["DEBUG"] is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RATE_LIMIT_FREE", "abc"),
        ("RATE_LIMIT_PROFESSIONAL", "0"),
        ("RATE_LIMIT_STARTER", "-5"),
        ("RATE_LIMIT_AUTH_FAILURES", "1.5"),
        ("MAX_REQUEST_BODY_BYTES", "0"),
        ("SECURE_HSTS_SECONDS", "-1"),
        ("NUM_PROXIES", "-1"),
        ("SIGN_IN_FAILURE_LIMIT_PER_EMAIL", "0"),
        ("STEP_UP_TTL", "0"),
        ("PASSWORD_LINK_TTL", "soon"),
        ("EMAIL_TIMEOUT", "-3"),
    ],
)
def test_bad_values_stop_the_start_up(name, value):
    result = load_settings(**{name: value})
    assert result.returncode != 0
    assert name in result.stderr


def test_production_requires_a_secret_key():
    result = load_settings(ENVIRONMENT="production")
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_production_with_a_secret_key_starts_with_debug_off():
    production = {"ENVIRONMENT": "production", "SECRET_KEY": "0123456789abcdefghij" * 3, "FERNET_KEYS": FERNET_KEY}
    assert settings_from(**production)["DEBUG"] is False
