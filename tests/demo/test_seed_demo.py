import json
import re
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory
from rest_framework.test import APIClient

from apps.accounts.models import Account
from apps.users.models import ApiKey, User

pytestmark = pytest.mark.django_db


def seed() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)
    return json.loads(out.getvalue())


def signs_in(login: dict) -> User | None:
    # With a request, as a real sign-in: the login throttle only judges attempts from an address.
    request = RequestFactory().post("/account/login/")
    return authenticate(request, email=login["username"], password=login["password"])


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_seed_demo_prints_the_documented_shape():
    result = seed()
    assert set(result) == {"site_url", "accounts", "admin_login"}
    assert result["site_url"] == settings.SITE_URL
    assert len(result["accounts"]) == 2
    for account in result["accounts"]:
        assert set(account) >= {"id", "name", "plan", "users", "keys"}
        assert isinstance(account["id"], int)
        assert account["plan"] in {"free", "starter", "professional", "enterprise"}
        assert set(account["users"]) == {"admin", "editor", "viewer"}
        assert set(account["keys"]) == {"all", "read", "none", "expired", "viewer"}
        assert set(account["logins"]) == {"admin", "editor", "viewer"}
        for login in account["logins"].values():
            assert set(login) == {"username", "password"}
            assert isinstance(login["password"], str)  # a first run sets every password
    assert set(result["admin_login"]) == {"username", "password"}


def test_seed_demo_keys_behave_as_labelled():
    account = seed()["accounts"][0]
    keys, users = account["keys"], account["users"]
    me = bearer(keys["all"]).get("/v1/me").json()["data"]
    assert me["account"]["id"] == account["id"]
    assert me["token"]["scopes"] == [
        "read:channels",
        "read:posts",
        "read:media",
        "write:media",
        "write:posts",
        "write:sso",
        "read:users",
        "write:users",
        "read:subscribers",
        "write:subscribers",
    ]
    assert bearer(keys["read"]).get("/v1/me").json()["data"]["token"]["scopes"] == ["read:channels", "read:posts"]
    assert bearer(keys["none"]).get("/v1/me").json()["data"]["token"]["scopes"] == []
    assert bearer(keys["expired"]).get("/v1/me").status_code == 401
    assert ApiKey.objects.get(prefix=keys["viewer"].split("_")[1]).user.email == users["viewer"]
    assert ApiKey.objects.get(prefix=keys["all"].split("_")[1]).user.email == users["admin"]
    for role, email in users.items():
        assert User.objects.get(email=email).role == role


def test_the_demo_all_key_manages_users_and_the_none_key_cannot_touch_them():
    account = seed()["accounts"][0]
    everything, nothing = bearer(account["keys"]["all"]), bearer(account["keys"]["none"])
    assert everything.get("/v1/users").status_code == 200
    created = everything.post(
        "/v1/users", {"email": "demo-new@example.com", "name": "New", "send_invitation": False}, format="json"
    )
    assert created.status_code == 201
    user_id = created.json()["id"]
    for response in (
        nothing.get("/v1/users"),
        nothing.get(f"/v1/users/{user_id}"),
        nothing.post("/v1/users", {"email": "other@example.com", "name": "Other"}, format="json"),
        nothing.put(f"/v1/users/{user_id}", {"name": "Renamed"}, format="json"),
        nothing.delete(f"/v1/users/{user_id}"),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "insufficient_scope"
    assert nothing.get("/v1/users/profile").status_code == 200
    assert everything.delete(f"/v1/users/{user_id}").status_code == 204


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


def test_seed_demo_logins_sign_in_as_the_demo_users():
    for account in seed()["accounts"]:
        assert {role: login["username"] for role, login in account["logins"].items()} == account["users"]
        for role, login in account["logins"].items():
            user = signs_in(login)
            assert user is not None, f"{account['name']} {role}"
            assert (user.email, user.role, user.account_id) == (login["username"], role, account["id"])


def printed_logins(printed: str) -> list[dict]:
    """The logins a text run printed (`admin login  admin@... / password`), the operator's included."""
    found = re.findall(r"^\s*(?:\w+ login|Admin site login:)\s+(\S+@\S+) / (\S+)$", printed, re.MULTILINE)
    return [{"username": username, "password": password} for username, password in found]


def test_a_second_seed_keeps_the_passwords_that_make_runs_seed_printed(client):
    out = StringIO()
    call_command("seed_demo", "--if-empty", stdout=out)  # as make run seeds an empty database
    first = printed_logins(out.getvalue())
    assert len(first) == 7

    second = seed()  # the README's tour

    for login in first[:-1]:
        assert signs_in(login) is not None, login
    operator = first[-1]
    assert client.login(username=operator["username"], password=operator["password"])
    logins = [login for account in second["accounts"] for login in account["logins"].values()]
    assert [login["username"] for login in logins] == [login["username"] for login in first[:-1]]
    assert {login["password"] for login in [*logins, second["admin_login"]]} == {None}


def test_a_second_seed_says_the_passwords_are_unchanged_instead_of_printing_them():
    seed()
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert printed_logins(out.getvalue()) == []
    lines = [line for line in out.getvalue().splitlines() if " login" in line]
    assert len(lines) == 7
    assert all(line.endswith("/ (password unchanged: the one printed when it was set)") for line in lines)


def test_new_passwords_gives_every_demo_user_a_fresh_one_and_the_old_ones_stop_working(client):
    first = seed()
    out = StringIO()
    call_command("seed_demo", "--json", "--new-passwords", stdout=out)
    second = json.loads(out.getvalue())
    for before, after in zip(first["accounts"], second["accounts"], strict=True):
        for role in ("admin", "editor", "viewer"):
            assert after["logins"][role]["password"] not in {None, before["logins"][role]["password"]}
            assert signs_in(before["logins"][role]) is None
            assert signs_in(after["logins"][role]) is not None
    assert not client.login(**first["admin_login"])
    assert client.login(**second["admin_login"])


def test_the_json_says_where_the_service_answers_and_the_blogs_are_there(settings):
    settings.SITE_URL = "http://127.0.0.1:8765"
    result = seed()
    assert result["site_url"] == "http://127.0.0.1:8765"
    for account in result["accounts"]:
        assert account["blog_url"].startswith("http://127.0.0.1:8765/blog/")
        assert account["newsletter_url"].startswith("http://127.0.0.1:8765/blog/")


def test_seed_demo_prints_the_logins():
    out = StringIO()
    call_command("seed_demo", stdout=out)
    printed = out.getvalue()
    lines = [line for line in printed.splitlines() if line.split()[1:2] == ["login"]]
    for user in User.objects.filter(metadata__demo=True):
        assert any(line.split()[:3] == [user.role, "login", user.email] for line in lines)
    assert len(lines) == 6
    for line in lines:
        role, _, email, _, password = line.split()
        assert signs_in({"username": email, "password": password}).role == role


def test_if_empty_does_nothing_on_a_seeded_database():
    seed()
    before = ApiKey.objects.count()
    out = StringIO()
    call_command("seed_demo", "--if-empty", stdout=out)
    assert ApiKey.objects.count() == before
    assert "not seeding" in out.getvalue()
