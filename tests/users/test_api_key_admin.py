"""The admin's "Add API key": the new key is shown once, on the answer to the POST that created
it, and never travels in a cookie (messages are kept in a signed, not encrypted, cookie)."""

import html
import logging
import re
import zlib
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pytest
from django.core import signing
from django.utils import timezone
from rest_framework.test import APIClient

from apps.users import admin as users_admin
from apps.users.models import ApiKey
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory, UserFactory

pytestmark = pytest.mark.django_db

KEYS = "/admin/accounts/apikey/"
ADD = f"{KEYS}add/"


@pytest.fixture
def created_keys(monkeypatch) -> list[str]:
    """The raw keys the admin has the service (api_key_create) make, as the service returned them:
    what must be on the page and nowhere else, whatever the page shows."""
    made: list[str] = []
    create = users_admin.api_key_create

    def spy(**kwargs):
        key, raw = create(**kwargs)
        made.append(raw)
        return key, raw

    monkeypatch.setattr(users_admin, "api_key_create", spy)
    return made


@pytest.fixture
def owner(db):
    return AdminUserFactory(account=AccountFactory(name="Keyholders"))


@pytest.fixture
def settings_client(owner):
    """An admin of the owner's account, in its Settings area."""
    return admin_session(AdminUserFactory(account=owner.account))


def add_key(client, owner, button: str = "_save", **fields):
    data = {"account": owner.account_id, "user": owner.id, "name": "deploy bot", "scopes": ["read:posts"], button: "1"}
    return client.post(ADD, {**data, **fields})


def shown_key(page: str) -> str:
    match = re.search(r'<input type="text" id="api-key"[^>]* value="([^"]+)"', page)
    assert match, "the page shows no key"
    return html.unescape(match[1])


def secret_of(raw: str) -> str:
    """The secret part of a key (`cps_<prefix>_<secret>`): the prefix is a non-secret lookup id."""
    return raw.split("_", 2)[2]


def pieces(raw: str) -> list[str]:
    """The key, its secret, and every 8 characters in a row of the secret."""
    secret = secret_of(raw)
    return [raw, secret, *(secret[i : i + 8] for i in range(len(secret) - 7))]


def readable(value: str) -> str:
    """A cookie's value, with what it holds when it is Django's signed (base64, maybe zlib
    compressed) data, as the messages cookie is: signed is not encrypted."""
    texts = [value, unquote(value)]
    for part in unquote(value).split(":"):
        try:
            data = signing.b64_decode(part.removeprefix(".").encode())
            texts.append((zlib.decompress(data) if part.startswith(".") else data).decode())
        except (ValueError, zlib.error, UnicodeDecodeError):
            continue
    return "\n".join(texts)


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_the_post_that_creates_a_key_answers_with_the_key_on_its_page_and_the_key_works(
    settings_client, owner, created_keys
):
    response = add_key(settings_client, owner, scopes=["read:posts", "read:channels"])

    assert response.status_code == 200
    assert "admin/accounts/apikey/created.html" in [t.name for t in response.templates]
    page = response.content.decode()
    [raw] = created_keys
    assert shown_key(page) == raw and page.count(raw) == 1
    key = ApiKey.objects.get(name="deploy bot")
    assert key.account_id == owner.account_id and key.user_id == owner.id
    assert "read:channels, read:posts" in page and f'datetime="{key.expires_at.isoformat()}"' in page
    assert f'href="{KEYS}{key.pk}/change/"' in page and f'href="{KEYS}"' in page and f'href="{ADD}"' in page
    token = bearer(raw).get("/v1/me").json()["data"]["token"]
    assert token["name"] == "deploy bot" and token["scopes"] == ["read:channels", "read:posts"]


def test_the_add_form_offers_the_users_scopes_and_saves_them(settings_client, owner, created_keys):
    form = settings_client.get(ADD).content.decode()
    for scope in ("read:users", "write:users"):
        assert f'value="{scope}"' in form
    add_key(settings_client, owner, scopes=["read:users", "write:users"])
    [raw] = created_keys
    assert bearer(raw).get("/v1/me").json()["data"]["token"]["scopes"] == ["read:users", "write:users"]
    assert bearer(raw).get("/v1/users").status_code == 200


@pytest.mark.parametrize("button", ["_save", "_continue", "_addanother"])
def test_the_key_is_set_in_no_cookie_whichever_save_button_was_pressed(settings_client, owner, created_keys, button):
    response = add_key(settings_client, owner, button)

    [raw] = created_keys
    set_cookies = [f"{morsel.OutputString()}\n{readable(morsel.value)}" for morsel in response.cookies.values()]
    kept = [readable(morsel.value) for morsel in settings_client.cookies.values()]
    for piece in pieces(raw):
        assert not any(piece in cookie for cookie in set_cookies), "a Set-Cookie header carries the key"
        assert not any(piece in cookie for cookie in kept), "the browser keeps the key in a cookie"
    assert raw not in str(dict(settings_client.session))
    assert response.status_code == 200 and shown_key(response.content.decode()) == raw


def test_the_page_with_the_key_is_never_cached(settings_client, owner):
    response = add_key(settings_client, owner)

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


def test_the_key_reaches_no_log_line_even_at_debug_level(settings_client, owner, created_keys, caplog):
    # The template engine logs a failed variable lookup, with the whole context, at DEBUG.
    caplog.set_level(logging.DEBUG, logger="django.template")

    add_key(settings_client, owner)

    [raw] = created_keys
    assert any(record.name == "django.template" for record in caplog.records)
    assert not any(piece in caplog.text for piece in pieces(raw))


def test_the_next_pages_the_key_list_and_the_keys_page_do_not_show_the_key(settings_client, owner, created_keys):
    add_key(settings_client, owner)
    [raw] = created_keys
    key = ApiKey.objects.get()

    for url in (KEYS, f"{KEYS}{key.pk}/change/"):
        page = settings_client.get(url).content.decode()
        assert key.display_key in page
        assert not any(piece in page for piece in pieces(raw)), url


def test_the_stored_row_keeps_only_the_hash_of_the_key(admin_client, owner, created_keys):
    response = add_key(admin_client, owner, expires_at="2031-05-04 12:00:00")

    assert response.status_code == 200
    [raw] = created_keys
    key = ApiKey.objects.get()
    row = str(ApiKey.objects.filter(pk=key.pk).values().get())
    assert not any(piece in row for piece in pieces(raw))
    assert key.matches(raw) and len(key.key_hash) == 64 and raw.startswith(f"cps_{key.prefix}_")
    assert key.expires_at == datetime(2031, 5, 4, 12, tzinfo=UTC)


def test_an_account_admin_creates_keys_only_in_their_own_account(settings_client, owner, created_keys):
    stranger = UserFactory()

    refused = add_key(settings_client, owner, user=stranger.id)
    elsewhere = add_key(settings_client, owner, account=stranger.account_id)

    assert refused.status_code == 200 and "user" in refused.context["adminform"].form.errors
    assert elsewhere.status_code == 200 and len(created_keys) == 1
    assert ApiKey.objects.get().account_id == owner.account_id


def test_an_editor_may_not_create_a_key(owner, created_keys):
    response = add_key(admin_session(UserFactory(account=owner.account)), owner)

    assert response.status_code == 403
    assert created_keys == [] and not ApiKey.objects.exists()


def test_a_form_with_errors_creates_no_key_and_shows_the_form_again(settings_client, owner, created_keys):
    response = add_key(settings_client, owner, name="")

    assert response.status_code == 200 and "name" in response.context["adminform"].form.errors
    assert created_keys == [] and not ApiKey.objects.exists()


def test_a_key_made_with_the_default_lifetime_says_when_it_expires(settings_client, owner, settings):
    settings.API_KEY_DEFAULT_TTL_DAYS = 30

    page = add_key(settings_client, owner).content.decode()

    key = ApiKey.objects.get()
    assert timedelta(days=29, hours=23) < key.expires_at - timezone.now() <= timedelta(days=30)
    assert f"{key.expires_at:%Y-%m-%d %H:%M} UTC" in page
