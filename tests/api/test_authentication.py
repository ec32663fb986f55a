from datetime import timedelta

import pytest
from django.utils import timezone

from apps.users.models import ApiKey
from tests.factories import AccountFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db


def assert_auth_failed(response):
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_missing_header_is_rejected(api_client):
    assert_auth_failed(api_client.get("/v1/me"))


@pytest.mark.parametrize("header", ["Basic dXNlcjpwYXNz", "Token abc", "Bearer", "Bearer ", "Bearer a b", "bearer"])
def test_wrong_scheme_or_malformed_header_is_rejected(api_client, api_key, header):
    assert_auth_failed(api_client.get("/v1/me", HTTP_AUTHORIZATION=header))


@pytest.mark.parametrize("raw", ["nonsense", "cps_12345678_doesnotexist", "cps_short_x", "cps__"])
def test_unknown_key_is_rejected(api_client, api_key, raw):
    assert_auth_failed(api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {raw}"))


def test_right_prefix_with_wrong_secret_is_rejected(api_client, api_key):
    forged = f"cps_{api_key.prefix}_{'x' * 43}"
    assert_auth_failed(api_client.get("/v1/me", HTTP_AUTHORIZATION=f"Bearer {forged}"))


def test_expired_key_is_rejected(client_for):
    key = ApiKeyFactory(expires_at=timezone.now() - timedelta(seconds=1))
    response = client_for(key).get("/v1/me")
    assert_auth_failed(response)
    assert "expired" in response.json()["error"]["message"]


def test_revoked_key_is_rejected(client_for):
    key = ApiKeyFactory(revoked_at=timezone.now())
    response = client_for(key).get("/v1/me")
    assert_auth_failed(response)
    assert "revoked" in response.json()["error"]["message"]


@pytest.mark.parametrize("status", ["inactive", "suspended", "invited"])
def test_key_of_a_user_who_is_not_active_is_rejected(client_for, status):
    key = ApiKeyFactory(user=UserFactory(status=status))
    assert_auth_failed(client_for(key).get("/v1/me"))


def test_valid_key_authenticates_and_records_last_use(client_for, api_key):
    assert api_key.last_used_at is None
    assert client_for(api_key).get("/v1/me").status_code == 200
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None


def test_key_answers_for_its_own_account_only(client_for):
    mine, other = AccountFactory(name="Mine"), AccountFactory(name="Other")
    key = ApiKeyFactory(user=UserFactory(account=mine))
    ApiKeyFactory(user=UserFactory(account=other))
    assert client_for(key).get("/v1/me").json()["data"]["account"] == {"id": mine.id, "name": "Mine"}


@pytest.mark.urls("tests.api.urls")
def test_key_without_the_scope_gets_403_naming_the_scope(client_for):
    key = ApiKeyFactory(scopes=["read:posts"])
    response = client_for(key).get("/v1/_test/scoped")
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "insufficient_scope"
    assert "write:posts" in error["message"]


@pytest.mark.urls("tests.api.urls")
def test_key_with_the_scope_passes(client_for):
    key = ApiKeyFactory(scopes=["write:posts"])
    assert client_for(key).get("/v1/_test/scoped").status_code == 200


def test_authentication_is_one_key_lookup(client_for, api_key, django_assert_max_num_queries):
    client = client_for(api_key)
    client.get("/v1/me")  # records last use; the next request within the minute does not write
    with django_assert_max_num_queries(1):
        assert client.get("/v1/me").status_code == 200


def test_key_is_never_stored_in_plaintext(api_key):
    row = ApiKey.objects.filter(pk=api_key.pk).values().get()
    secret_part = api_key.raw.split("_", 2)[2]
    for value in row.values():
        assert secret_part not in str(value)
    assert api_key.raw not in str(row)
    assert len(row["key_hash"]) == 64
