import pytest
from dateutil.parser import isoparse

from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db


def test_me_returns_account_and_token_in_the_spec_shape(client_for):
    key = ApiKeyFactory(name="CI key", scopes=["read:posts", "read:channels"])
    response = client_for(key).get("/v1/me")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"data"}
    assert set(body["data"]) == {"account", "token"}
    assert body["data"]["account"] == {"id": key.account.id, "name": key.account.name}
    token = body["data"]["token"]
    assert set(token) == {"name", "scopes", "expires_at"}
    assert token["name"] == "CI key"
    assert token["scopes"] == ["read:posts", "read:channels"]
    assert isoparse(token["expires_at"]) == key.expires_at


def test_me_needs_no_scope(client_for):
    key = ApiKeyFactory(scopes=[])
    assert client_for(key).get("/v1/me").json()["data"]["token"]["scopes"] == []


def test_me_does_not_reveal_the_key(client_for, api_key):
    assert api_key.raw not in client_for(api_key).get("/v1/me").content.decode()


def test_me_lists_the_users_scopes_of_a_key_that_holds_them(client_for):
    key = ApiKeyFactory(scopes=["read:users", "write:users"])
    assert client_for(key).get("/v1/me").json()["data"]["token"]["scopes"] == ["read:users", "write:users"]
