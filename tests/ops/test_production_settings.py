"""Production refuses, at start-up, settings that would expose it or leak secrets (the start-up checks,
config/checks.py; tests/ops/test_start_up_checks.py shows every process stopping on them), and
Django's deploy check is clean with the production settings docs/operations.md gives."""

import re
import subprocess

import pytest
from django.conf import settings
from django.core.checks import run_checks
from django.test import override_settings

from tests.conftest import settings_loaded

# Everything these tests set is unset first (prefixes), so the machine's environment cannot leak in.
UNSET = ("ENVIRONMENT", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "EMAIL_", "SECURE_", "BEHIND_TLS_PROXY", "DJANGO_")
SECRET = "k3y-" + "0123456789abcdefghijklmnopqrstuvwxyz" * 2
# FERNET_KEYS: a test value, protecting nothing.
PRODUCTION = {
    "ENVIRONMENT": "production",
    "SECRET_KEY": SECRET,
    "ALLOWED_HOSTS": "cps.example.com",
    "FERNET_KEYS": "oMUpGbfQHoF274Ufbt0rjDQZ1pUMb3C9-nKKiJhh2d8=",
}
SHOW = "import config.settings as s; print(s.EMAIL_BACKEND, s.SECURE_SSL_REDIRECT, s.DEBUG)"


def start(**env) -> subprocess.CompletedProcess:
    return settings_loaded(SHOW, env, unset=UNSET)


def test_production_starts_with_the_documented_minimum_and_sends_e_mail_over_smtp():
    result = start(**PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.core.mail.backends.smtp.EmailBackend", "False", "False"]


def start_up_errors(**overrides) -> list[str]:
    """The start-up checks' errors (config/checks.py: every process runs them) for production's
    documented minimum with `overrides`, as `id message`."""
    production = {
        "IS_PRODUCTION": True,
        "DEBUG": False,
        "SECRET_KEY": SECRET,
        "ALLOWED_HOSTS": ["cps.example.com"],
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "ANYMAIL": {},
        "FERNET_KEYS": [PRODUCTION["FERNET_KEYS"]],
    }
    with override_settings(**{**production, **overrides}):
        return [f"{error.id} {error.msg}" for error in run_checks() if error.is_serious()]


def test_the_start_up_checks_pass_production_with_its_documented_minimum():
    assert start_up_errors() == []


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"DEBUG": True}, "cps.E001 DEBUG must be false"),
        ({"SECRET_KEY": "x"}, "cps.E002 SECRET_KEY must be at least 50 characters"),
        ({"SECRET_KEY": SECRET[:49]}, "cps.E002 SECRET_KEY must be at least 50 characters"),
        ({"SECRET_KEY": "ab" * 30}, "at least 5 of them different"),
        ({"ALLOWED_HOSTS": ["*"]}, "cps.E003 ALLOWED_HOSTS must name"),
        ({"ALLOWED_HOSTS": ["cps.example.com", "*"]}, "cps.E003 ALLOWED_HOSTS must name"),
        ({"ALLOWED_HOSTS": []}, "cps.E003 ALLOWED_HOSTS must name"),
        ({"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}, "cps.E004 EMAIL_BACKEND"),
        ({"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend"}, "cps.E004 EMAIL_BACKEND"),
        ({"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"}, "cps.E004 EMAIL_BACKEND"),
        ({"EMAIL_BACKEND": "apps.core.mail_files.EmailBackend"}, "cps.E004 EMAIL_BACKEND"),
    ],
)
def test_production_refuses_unsafe_settings_at_start_up(overrides, named):
    [error] = start_up_errors(**overrides)
    assert named in error and error.startswith("cps.E")


def test_development_may_debug_with_any_secret_host_and_e_mail_backend():
    assert (
        start_up_errors(
            IS_PRODUCTION=False,
            DEBUG=True,
            SECRET_KEY="short",
            ALLOWED_HOSTS=["*"],
            EMAIL_BACKEND="apps.core.mail_files.EmailBackend",
            FERNET_KEYS=[],
        )
        == []
    )


def test_development_prints_e_mails_and_writes_them_to_files_and_may_debug():
    result = start(DEBUG="true", SECRET_KEY="short")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["apps.core.mail_files.EmailBackend", "False", "True"]


def test_the_https_redirect_comes_from_the_environment():
    result = start(**PRODUCTION, SECURE_SSL_REDIRECT="true")
    assert result.stdout.split()[1] == "True", result.stderr
    assert start(SECURE_SSL_REDIRECT="maybe").returncode != 0


def documented_production_settings() -> dict:
    """The environment block of docs/operations.md's 'Running in production' section."""
    text = (settings.BASE_DIR / "docs" / "operations.md").read_text()
    [block] = re.findall(r"```env\n(.*?)```", text, re.DOTALL)
    return dict(line.split("=", 1) for line in block.splitlines() if line and not line.startswith("#"))


def test_the_deploy_check_is_clean_with_the_documented_production_settings():
    documented = documented_production_settings()
    assert documented["ENVIRONMENT"] == "production"
    # The docs show placeholders for the secrets.
    env = {**documented, "SECRET_KEY": SECRET, "FERNET_KEYS": PRODUCTION["FERNET_KEYS"]}
    result = settings_loaded(
        "import sys; from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])",
        {**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        unset=(*UNSET, "DATABASE_URL", "REDIS_URL"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.django_db
def test_with_the_https_redirect_plain_http_is_redirected_but_health_checks_answer(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    redirected = client.get("/v1/me")
    assert (redirected.status_code, redirected["Location"]) == (301, "https://testserver/v1/me")
    assert client.get("/healthz").status_code == 200
    assert client.get("/v1/me", headers={"X-Forwarded-Proto": "https"}).status_code == 301  # not behind a proxy
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert client.get("/v1/me", headers={"X-Forwarded-Proto": "https"}).status_code == 401
