from datetime import timedelta

import pytest
from dateutil.parser import isoparse
from django.utils import timezone

from apps.users.credentials import sso_tokens_prune
from apps.users.models import Role, SsoToken, Status, hash_secret
from tests.factories import ApiKeyFactory, SsoTokenFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


@pytest.fixture
def member(admin_key):
    return UserFactory(account=admin_key.account, email="member@example.com", role=Role.EDITOR)


def create(client, body):
    return client.post("/v1/sso_tokens", body, format="json")


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code
    return error


def test_create_returns_the_token_login_url_expiry_and_user(admin, member, settings):
    settings.SITE_URL = "https://cps.example.com"
    settings.SSO_TOKEN_TTL = 120
    before = timezone.now()
    response = create(admin, {"email": "member@example.com"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"data"}
    data = body["data"]
    assert set(data) == {"token", "login_url", "expires_at", "user"}
    assert data["user"] == {"id": str(member.pk), "email": "member@example.com"}
    assert data["login_url"] == f"https://cps.example.com/sso/login?token={data['token']}"
    expires_at = isoparse(data["expires_at"])
    assert before + timedelta(seconds=120) <= expires_at <= timezone.now() + timedelta(seconds=120)
    token = SsoToken.objects.get()
    assert (token.user, token.account, token.used_at) == (member, member.account, None)
    assert token.expires_at == expires_at


def test_the_token_is_stored_only_as_a_hash(admin, member):
    raw = create(admin, {"email": member.email}).json()["data"]["token"]
    row = SsoToken.objects.values().get()
    assert row["token_hash"] == hash_secret(raw)
    assert raw not in str(row)


def test_each_token_is_different(admin, member):
    tokens = {create(admin, {"email": member.email}).json()["data"]["token"] for _ in range(3)}
    assert len(tokens) == 3


@pytest.mark.parametrize("as_type", [str, int, float])
def test_create_by_user_id(admin, member, as_type):
    response = create(admin, {"user_id": as_type(member.pk), "redirect_to": "/account/"})
    assert response.status_code == 201, response.content
    assert response.json()["data"]["user"]["id"] == str(member.pk)
    assert SsoToken.objects.get().redirect_to == "/account/"


def test_email_matches_in_any_case(admin, member):
    assert create(admin, {"email": "MEMBER@Example.com"}).json()["data"]["user"]["id"] == str(member.pk)


def test_create_needs_the_write_sso_scope(client_for, admin_key, member):
    key = ApiKeyFactory(user=admin_key.user, scopes=["read:channels", "read:posts", "write:posts"])
    error = assert_error(create(client_for(key), {"email": member.email}), 403, "insufficient_scope")
    assert "write:sso" in error["message"]
    assert not SsoToken.objects.exists()


def test_create_needs_a_key(api_client):
    assert_error(create(api_client, {"email": "x@example.com"}), 401, "authentication_failed")


def test_a_non_admin_key_may_create_a_token_only_for_its_owner(client_for, admin_key, member):
    key = ApiKeyFactory(user=member)
    assert create(client_for(key), {"email": member.email}).status_code == 201
    assert_error(create(client_for(key), {"user_id": str(admin_key.user_id)}), 403, "admin_required")
    assert SsoToken.objects.filter(user=admin_key.user).count() == 0


def test_users_of_other_organizations_are_not_found(admin):
    stranger = UserFactory()
    assert_error(create(admin, {"email": stranger.email}), 404, "not_found")
    assert_error(create(admin, {"user_id": str(stranger.pk)}), 404, "not_found")
    assert_error(create(admin, {"email": "nobody@example.com"}), 404, "not_found")
    assert not SsoToken.objects.exists()


@pytest.mark.parametrize("status", [Status.INACTIVE, Status.SUSPENDED, Status.INVITED])
def test_users_who_are_not_active_get_no_token(admin, admin_key, status):
    user = UserFactory(account=admin_key.account, status=status)
    error = assert_error(create(admin, {"email": user.email}), 422, "user_not_active")
    assert status in error["message"]
    assert not SsoToken.objects.exists()


@pytest.mark.parametrize(
    "redirect_to",
    [
        "//evil.com",
        "//evil.com/account/",
        "https://evil.com",
        "http://testserver/account/",
        "/\\evil.com",
        "\\\\evil.com",
        "///evil.com",
        "/\t/evil.com",
        " //evil.com",
        "javascript:alert(1)",
        "account/",
        "evil.com",
    ],
)
def test_redirect_to_must_be_a_local_path(admin, member, redirect_to):
    error = assert_error(create(admin, {"email": member.email, "redirect_to": redirect_to}), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["rule"]) == ("redirect_to", "local_path")
    assert not SsoToken.objects.exists()


@pytest.mark.parametrize("redirect_to", ["/", "/account/", "/admin/posts/post/?q=a&page=2", "/account/#top"])
def test_local_paths_are_accepted(admin, member, redirect_to):
    assert create(admin, {"email": member.email, "redirect_to": redirect_to}).status_code == 201
    assert SsoToken.objects.get().redirect_to == redirect_to


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({}, "email", "required"),
        ({"email": "a@example.com", "user_id": "1"}, "user_id", "exclusive"),
        ({"email": "not-an-email"}, "email", "invalid"),
        ({"user_id": "abc"}, "user_id", "invalid"),
        ({"user_id": True}, "user_id", "invalid"),
        ({"user_id": 1.5}, "user_id", "invalid"),
        ({"email": "a@example.com", "redirect_to": 5}, "redirect_to", "invalid"),
        ({"email": "a@example.com", "expires_in": 5}, "expires_in", "unknown_field"),
    ],
)
def test_create_validation_errors(admin, body, field, rule):
    error = assert_error(create(admin, body), 400, "VALIDATION_ERROR")
    assert (error["details"]["field"], error["details"]["rule"]) == (field, rule)


def test_the_admin_lists_tokens_with_their_state_but_not_their_secret(admin_client, admin, member):
    used = create(admin, {"email": member.email}).json()["data"]["token"]
    expired = create(admin, {"email": member.email}).json()["data"]["token"]
    unused = create(admin, {"email": member.email}).json()["data"]["token"]
    SsoToken.objects.filter(token_hash=hash_secret(used)).update(used_at=timezone.now())
    SsoToken.objects.filter(token_hash=hash_secret(expired)).update(expires_at=timezone.now())
    html = admin_client.get("/admin/accounts/ssotoken/").content.decode()
    assert member.email in html
    for label in ("Used", "Expired", "Unused"):
        assert f'<td class="field-state">{label}</td>' in html
    for raw in (used, expired, unused):
        assert raw not in html
        assert hash_secret(raw) not in html
    assert "Used" in admin_client.get("/admin/accounts/ssotoken/?state=used").content.decode()
    assert admin_client.get("/admin/accounts/ssotoken/add/").status_code == 403


def test_old_tokens_are_pruned():
    old = SsoTokenFactory(expires_at=timezone.now() - timedelta(days=8))
    recent = SsoTokenFactory(expires_at=timezone.now() - timedelta(days=6))
    assert sso_tokens_prune() == 1
    assert list(SsoToken.objects.all()) == [recent]
    assert not SsoToken.objects.filter(pk=old.pk).exists()
