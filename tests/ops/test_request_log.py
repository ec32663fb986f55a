import json
import logging
import os
import subprocess
import sys

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db


def test_each_request_logs_one_line_with_request_id_and_account(authed, api_key, caplog):
    with caplog.at_level(logging.INFO, logger="cps.request"):
        response = authed.get("/v1/me?secret_param=shh", HTTP_X_REQUEST_ID="req-123")
    assert response["X-Request-ID"] == "req-123"
    [record] = [r for r in caplog.records if r.name == "cps.request"]
    line = record.getMessage()
    assert "method=GET path=/v1/me status=200" in line
    assert f"account={api_key.account_id}" in line and "request_id=req-123" in line
    assert "shh" not in line and api_key.raw not in line


def test_a_request_id_is_generated_when_none_or_a_bad_one_is_sent(client):
    generated = client.get("/healthz")["X-Request-ID"]
    assert len(generated) == 32
    assert client.get("/healthz", HTTP_X_REQUEST_ID="bad id\nwith newline")["X-Request-ID"] != "bad id\nwith newline"


def run_django(code: str, **env) -> subprocess.CompletedProcess:
    script = f"import django, logging; django.setup(); {code}"
    return subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=settings.BASE_DIR,
    )


def test_log_format_json_writes_one_json_object_per_line():
    result = run_django(
        "logging.getLogger('cps.request').info('request path=%s', '/v1/me', extra={'status': 200})", LOG_FORMAT="json"
    )
    [line] = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert line["message"] == "request path=/v1/me"
    assert line["level"] == "INFO" and line["logger"] == "cps.request" and line["status"] == 200


def test_a_bad_log_format_stops_start_up():
    result = run_django("pass", LOG_FORMAT="xml")
    assert result.returncode != 0
    assert "LOG_FORMAT must be" in result.stderr


def test_a_newsletter_link_s_token_is_left_out_of_the_request_log(client, caplog):
    token = "a-reader-s-secret-unsubscribe-token"
    with caplog.at_level(logging.INFO):
        response = client.post(f"/newsletter/confirm/{token}/")
    assert response.status_code == 404  # no such reader: Django's own "Not Found" warning is logged too
    logged = [record for record in caplog.records if record.name in ("cps.request", "django.request")]
    assert {record.name for record in logged} == {"cps.request", "django.request"}
    lines = [record.getMessage() for record in logged] + [str(getattr(r, "request", "")) for r in logged]
    assert all(token not in line for line in lines)
    assert any("path=/newsletter/confirm/[token]/" in line for line in lines)
