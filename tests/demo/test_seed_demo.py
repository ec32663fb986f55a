import json
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.accounts.models import Account, ApiKey
from apps.users.models import User

pytestmark = pytest.mark.django_db


def seed() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_seed_demo_prints_the_documented_shape():
    result = seed()
    assert set(result) == {"accounts", "admin_login"}
    assert len(result["accounts"]) == 2
    for account in result["accounts"]:
        assert set(account) >= {"id", "name", "plan", "users", "keys"}
        assert isinstance(account["id"], int)
        assert account["plan"] in {"free", "starter", "professional", "enterprise"}
        assert set(account["users"]) == {"admin", "editor", "viewer"}
        assert set(account["keys"]) == {"all", "read", "none", "expired", "viewer"}
    assert set(result["admin_login"]) == {"username", "password"}


def test_seed_demo_keys_behave_as_labelled():
    account = seed()["accounts"][0]
    keys, users = account["keys"], account["users"]
    me = bearer(keys["all"]).get("/v1/me").json()["data"]
    assert me["account"]["id"] == account["id"]
    assert me["token"]["scopes"] == ["read:channels", "read:posts", "read:media", "write:posts", "write:sso"]
    assert bearer(keys["read"]).get("/v1/me").json()["data"]["token"]["scopes"] == ["read:channels", "read:posts"]
    assert bearer(keys["none"]).get("/v1/me").json()["data"]["token"]["scopes"] == []
    assert bearer(keys["expired"]).get("/v1/me").status_code == 401
    assert ApiKey.objects.get(prefix=keys["viewer"].split("_")[1]).user.email == users["viewer"]
    assert ApiKey.objects.get(prefix=keys["all"].split("_")[1]).user.email == users["admin"]
    for role, email in users.items():
        assert User.objects.get(email=email).role == role


def test_seed_demo_is_idempotent_and_revokes_earlier_keys():
    first = seed()
    counts = (Account.objects.count(), User.objects.count())
    second = seed()
    assert (Account.objects.count(), User.objects.count()) == counts
    assert [a["id"] for a in first["accounts"]] == [a["id"] for a in second["accounts"]]
    assert bearer(first["accounts"][0]["keys"]["all"]).get("/v1/me").status_code == 401
    assert bearer(second["accounts"][0]["keys"]["all"]).get("/v1/me").status_code == 200


def test_admin_login_works(client):
    login = seed()["admin_login"]
    assert client.login(username=login["username"], password=login["password"])
    assert client.get("/admin/").status_code == 200


def test_if_empty_does_nothing_on_a_seeded_database():
    seed()
    before = ApiKey.objects.count()
    out = StringIO()
    call_command("seed_demo", "--if-empty", stdout=out)
    assert ApiKey.objects.count() == before
    assert "not seeding" in out.getvalue()
