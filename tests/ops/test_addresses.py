"""Every address the service prints or sends is built from SITE_URL, whose default is where the web
process listens (PORT, BIND): a trial on another port prints and sends links that reach it."""

import os
import re
import subprocess
import sys
from io import StringIO

import pytest
import requests
from django.conf import settings
from django.core.management import call_command

from apps.users.models import User
from tests.conftest import WebProcess, settings_loaded
from tests.factories import UserFactory

SHOW = "import config.settings as s; print(s.SITE_URL)"
UNSET = ("SITE_URL", "BIND", "PORT", "DJANGO_")
ADDRESS = re.compile(r"https?://\S+")


def site_url(**env) -> subprocess.CompletedProcess:
    return settings_loaded(SHOW, env, unset=UNSET)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "http://127.0.0.1:8000"),
        ({"PORT": "8765"}, "http://127.0.0.1:8765"),
        ({"BIND": "0.0.0.0:9000", "PORT": "8765"}, "http://127.0.0.1:9000"),
        ({"BIND": "[::]:9001"}, "http://127.0.0.1:9001"),
        ({"BIND": "[::1]:9002"}, "http://[::1]:9002"),
        ({"BIND": "192.0.2.1:8080"}, "http://192.0.2.1:8080"),
    ],
    ids=["default", "port", "every ipv4 address", "every ipv6 address", "ipv6 loopback", "one address"],
)
def test_site_urls_default_is_the_address_the_web_process_listens_on(env, expected):
    result = site_url(**env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{expected}\n"


def test_an_explicit_site_url_wins_over_the_port():
    result = site_url(PORT="8765", SITE_URL="https://cps.example.com/")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "https://cps.example.com\n"


@pytest.mark.parametrize("value", ["cps.example.com", "ftp://cps.example.com", "http://cps:port", "https://x/?a=1"])
def test_a_site_url_that_is_no_web_address_stops_the_start_up(value):
    result = site_url(SITE_URL=value)
    assert result.returncode != 0
    assert "SITE_URL must be an http or https address" in result.stderr


def test_seed_demo_on_a_port_prints_a_curl_line_that_reaches_the_web_process_on_that_port(tmp_path):
    """`PORT=… make run` in short: the seed and the web process read PORT only (no BIND, no SITE_URL)."""
    web = WebProcess({})  # picks a free port
    port = web.url.rsplit(":", 1)[1]
    env = {key: value for key, value in os.environ.items() if not key.startswith(UNSET)}
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "filesystem://",
        "FILESYSTEM_BROKER_DIR": str(tmp_path / "broker"),
        "PORT": port,
    }

    def manage(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            env=env,
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout

    manage("migrate", "--noinput", "-v0")
    printed = manage("seed_demo")
    web.env = env
    web.start()
    try:
        [curl] = [line for line in printed.splitlines() if line.startswith("Try: curl")]
        key, url = re.fullmatch(r"Try: curl -H 'Authorization: Bearer (\S+)' (\S+)", curl).groups()
        assert url == f"http://127.0.0.1:{port}/v1/me"
        me = requests.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=10)
        assert me.status_code == 200, me.text
        assert me.json()["data"]["account"]["name"] == "Acme Publishing"
        assert all(address.startswith(f"http://127.0.0.1:{port}/") for address in ADDRESS.findall(printed))
    finally:
        web.stop()


# --- each address from SITE_URL: here the live server's, so each one is followed ---


@pytest.fixture
def site(live_server, settings) -> str:
    settings.SITE_URL = live_server.url
    return live_server.url


def test_every_address_seed_demo_prints_is_on_site_url_and_answers(site):
    out = StringIO()
    call_command("seed_demo", stdout=out)
    printed = out.getvalue()
    addresses = ADDRESS.findall(printed)
    assert len(addresses) >= 4  # the two blogs, the admin site, the curl line
    assert all(address.startswith(f"{site}/") for address in addresses), addresses
    for address in addresses:
        assert requests.get(address, timeout=10).status_code in {200, 401}, address
    [curl] = [line for line in printed.splitlines() if line.startswith("Try: curl")]
    key = re.search(r"Bearer (\S+)'", curl).group(1)
    assert requests.get(f"{site}/v1/me", headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code == 200


def test_the_sso_login_url_the_api_answers_is_on_site_url_and_signs_the_user_in(site, admin_key, client_for):
    member = UserFactory(account=admin_key.account, email="member@example.com")
    created = client_for(admin_key).post("/v1/sso_tokens", {"email": member.email}, format="json")
    assert created.status_code == 201, created.content
    login_url = created.json()["data"]["login_url"]
    assert login_url.startswith(f"{site}/sso/login?token=")

    browser = requests.Session()
    signed_in = browser.get(login_url, timeout=10)
    assert signed_in.status_code == 200
    assert signed_in.url.startswith(site) and "/account/login" not in signed_in.url
    assert member.email in signed_in.text


def test_the_invitation_link_is_on_site_url_and_opens_the_invitation(site, admin_key, client_for, mailoutbox):
    invited = client_for(admin_key).post("/v1/users", {"email": "ivy@example.com", "name": "Ivy"}, format="json")
    assert invited.status_code == 201, invited.content
    [message] = mailoutbox
    [link] = [address for address in ADDRESS.findall(message.body) if "/account/invitation" in address]
    assert link.startswith(f"{site}/account/invitation?token=")

    page = requests.get(link, timeout=10)
    assert page.status_code == 200
    assert "ivy@example.com" in page.text and 'name="new_password1"' in page.text
    assert User.objects.get(email="ivy@example.com").status == "invited"
