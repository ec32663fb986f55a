from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.users.models import SsoToken, Status
from tests.factories import SsoTokenFactory

pytestmark = pytest.mark.django_db


def signed_in_as(client) -> int | None:
    user_id = client.session.get("_auth_user_id")
    return int(user_id) if user_id else None


def redeem(client, raw: str):
    return client.get(f"/sso/login?token={raw}")


def assert_error_page(response, status: int, code: str, client) -> None:
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/html")
    assert f'data-code="{code}"' in response.content.decode()
    assert "This sign-in link cannot be used" in response.content.decode()
    assert signed_in_as(client) is None


def test_a_token_signs_its_user_in_and_redirects(client, emitted):
    token = SsoTokenFactory(redirect_to="/account/?tab=profile")
    response = redeem(client, token.raw)
    assert response.status_code == 302
    assert response["Location"] == "/account/?tab=profile"
    assert signed_in_as(client) == token.user_id
    assert token.user.email in client.get("/account/").content.decode()
    token.refresh_from_db()
    assert token.used_at is not None
    token.user.refresh_from_db()
    assert token.user.last_login is not None


def test_without_redirect_to_the_user_lands_on_the_account_page(client):
    assert redeem(client, SsoTokenFactory().raw)["Location"] == "/account/"


def test_sso_sign_in_sends_user_login_once(client, emitted):
    token = SsoTokenFactory()
    redeem(client, token.raw)
    redeem(client, token.raw)
    [body] = emitted("user.login")
    assert body["data"]["via"] == "sso"
    assert body["data"]["user"]["id"] == str(token.user_id)
    assert body["account"]["id"] == token.account_id


def test_a_token_works_once(client, emitted):
    token = SsoTokenFactory()
    assert redeem(client, token.raw).status_code == 302
    other_browser = Client()
    assert_error_page(redeem(other_browser, token.raw), 410, "sso_token_used", other_browser)
    assert "already been used" in redeem(other_browser, token.raw).content.decode()


def test_an_expired_token_does_not_sign_in(client, emitted):
    token = SsoTokenFactory(expires_at=timezone.now() - timedelta(seconds=1))
    assert_error_page(redeem(client, token.raw), 410, "sso_token_expired", client)
    token.refresh_from_db()
    assert token.used_at is None
    assert emitted("user.login") == []


def test_a_token_expires_after_the_ttl(admin_key, client_for, client, settings, monkeypatch):
    settings.SSO_TOKEN_TTL = 60
    raw = client_for(admin_key).post("/v1/sso_tokens", {"user_id": str(admin_key.user_id)}, format="json")
    raw = raw.json()["data"]["token"]
    later = timezone.now() + timedelta(seconds=61)
    monkeypatch.setattr("apps.users.credentials.timezone.now", lambda: later)
    assert_error_page(redeem(client, raw), 410, "sso_token_expired", client)


@pytest.mark.parametrize("raw", ["", "sso_unknown", "x" * 500])
def test_an_unknown_or_missing_token_does_not_sign_in(client, raw):
    SsoTokenFactory()
    assert_error_page(redeem(client, raw), 404, "sso_token_unknown", client)


def test_the_token_parameter_is_required(client):
    assert_error_page(client.get("/sso/login"), 404, "sso_token_unknown", client)


@pytest.mark.parametrize("status", [Status.INACTIVE, Status.SUSPENDED])
def test_a_user_deactivated_after_the_token_was_made_cannot_redeem_it(client, emitted, status):
    token = SsoTokenFactory()
    token.user.status = status
    token.user.save()
    assert_error_page(redeem(client, token.raw), 403, "user_not_active", client)
    assert emitted("user.login") == []
    # Used up all the same: reactivating the user does not bring the link back.
    token.user.status = Status.ACTIVE
    token.user.save()
    assert_error_page(redeem(client, token.raw), 410, "sso_token_used", client)


def test_a_deleted_users_token_is_unknown(client):
    token = SsoTokenFactory()
    token.user.delete()
    assert_error_page(redeem(client, token.raw), 404, "sso_token_unknown", client)


def test_redeeming_replaces_whoever_was_signed_in(client):
    first, second = SsoTokenFactory(), SsoTokenFactory()
    redeem(client, first.raw)
    session_key = client.session.session_key
    redeem(client, second.raw)
    assert signed_in_as(client) == second.user_id
    assert client.session.session_key != session_key


@pytest.mark.parametrize("stored", ["//evil.com", "https://evil.com/", "/\\evil.com"])
def test_an_unsafe_stored_redirect_is_never_followed(client, stored):
    # Creation refuses these; a row written some other way still cannot redirect off-site.
    token = SsoTokenFactory()
    SsoToken.objects.filter(pk=token.pk).update(redirect_to=stored)
    assert redeem(client, token.raw)["Location"] == "/account/"


def test_redemption_only_answers_get(client):
    token = SsoTokenFactory()
    assert client.post("/sso/login", {"token": token.raw}).status_code == 405
    token.refresh_from_db()
    assert token.used_at is None


def test_the_error_page_is_not_cached(client):
    assert "no-store" in redeem(client, "sso_unknown")["Cache-Control"]
