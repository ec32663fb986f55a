import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.errors import InvalidInput
from apps.users.credentials import api_key_create, api_key_revoke
from apps.users.models import ApiKey
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_create_api_key_command_prints_a_working_key():
    user = UserFactory(email="owner@example.com")
    out = StringIO()
    call_command(
        "create_api_key",
        "--account",
        str(user.account_id),
        "--user",
        "owner@example.com",
        "--name",
        "ci",
        "--scopes",
        "read:posts,read:channels",
        "--expires-in",
        "7",
        stdout=out,
    )
    raw = out.getvalue().strip()
    body = bearer(raw).get("/v1/me").json()["data"]
    assert body["token"]["name"] == "ci"
    assert body["token"]["scopes"] == ["read:channels", "read:posts"]
    key = ApiKey.objects.get()
    assert timedelta(days=6, hours=23) < key.expires_at - timezone.now() <= timedelta(days=7)


def test_create_api_key_command_gives_the_users_scopes_and_the_key_can_manage_users():
    user = UserFactory(email="owner@example.com", role="admin")
    out = StringIO()
    call_command(
        "create_api_key",
        "--account",
        str(user.account_id),
        "--user",
        "owner@example.com",
        "--name",
        "people",
        "--scopes",
        "write:users,read:users",
        stdout=out,
    )
    client = bearer(out.getvalue().strip())
    assert client.get("/v1/me").json()["data"]["token"]["scopes"] == ["read:users", "write:users"]
    assert client.get("/v1/users").status_code == 200
    created = client.post(
        "/v1/users", {"email": "new@example.com", "name": "New", "send_invitation": False}, format="json"
    )
    assert created.status_code == 201
    assert client.get("/v1/channels").status_code == 403


def test_create_api_key_command_rejects_unknown_scope_and_foreign_user():
    user = UserFactory()
    stranger = UserFactory()
    with pytest.raises(CommandError, match="Unknown scopes: write:all"):
        call_command("create_api_key", account=user.account_id, user=user.email, name="x", scopes="write:all")
    with pytest.raises(CommandError, match="No user"):
        call_command("create_api_key", account=user.account_id, user=stranger.email, name="x")
    assert not ApiKey.objects.exists()


def test_service_defaults_expiry_and_stores_only_a_hash():
    user = UserFactory()
    key, raw = api_key_create(account=user.account, user=user, name="k", scopes=["read:posts"])
    assert key.expires_at > timezone.now() + timedelta(days=364)
    assert raw.startswith(f"cps_{key.prefix}_")
    assert raw not in str(ApiKey.objects.filter(pk=key.pk).values().get())
    assert key.matches(raw)
    assert not key.matches(raw + "x")


def test_service_refuses_a_user_of_another_account():
    user, other = UserFactory(), UserFactory()
    with pytest.raises(InvalidInput):
        api_key_create(account=other.account, user=user, name="k", scopes=[])


def test_revoked_key_stops_working_at_once():
    user = UserFactory()
    key, raw = api_key_create(account=user.account, user=user, name="k", scopes=[])
    assert bearer(raw).get("/v1/me").status_code == 200
    api_key_revoke(api_key=key)
    assert bearer(raw).get("/v1/me").status_code == 401


def test_admin_shows_a_new_key_once_and_stores_its_hash(admin_client):
    user = UserFactory()
    response = admin_client.post(
        "/admin/accounts/apikey/add/",
        {"account": user.account_id, "user": user.id, "name": "from admin", "scopes": ["read:posts"]},
    )
    # On the answer to the POST itself, not in a message (messages travel in a cookie); see
    # test_api_key_admin.py.
    assert response.status_code == 200
    raw = re.search(r'id="api-key"[^>]* value="(cps_\w{8}_[\w-]+)"', response.content.decode())[1]
    key = ApiKey.objects.get(name="from admin")
    assert key.matches(raw)
    assert bearer(raw).get("/v1/me").json()["data"]["token"]["scopes"] == ["read:posts"]
    # The change page never shows the secret again.
    assert raw not in admin_client.get(f"/admin/accounts/apikey/{key.pk}/change/").content.decode()


def test_admin_revoke_action(admin_client):
    user = UserFactory()
    key, raw = api_key_create(account=user.account, user=user, name="k", scopes=[])
    admin_client.post(
        "/admin/accounts/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]}, follow=True
    )
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert bearer(raw).get("/v1/me").status_code == 401
