import pytest
from dateutil.parser import isoparse

from apps.users.models import Role
from tests.factories import AccountFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db

PROFILE_KEYS = {
    "id",
    "email",
    "name",
    "role",
    "organization",
    "created_at",
    "last_login",
    "timezone",
    "language",
    "notification_preferences",
}


@pytest.fixture
def key():
    account = AccountFactory(name="Acme Publishing")
    return ApiKeyFactory(user=UserFactory(account=account, name="Vera", role=Role.VIEWER), scopes=[])


@pytest.fixture
def client(key, client_for):
    return client_for(key)


def test_profile_has_the_spec_shape_plus_its_settings(client, key):
    response = client.get("/v1/users/profile")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == PROFILE_KEYS
    user = key.user
    assert body["id"] == str(user.pk)
    assert (body["email"], body["name"], body["role"]) == (user.email, "Vera", "viewer")
    assert body["organization"] == {"id": str(user.account_id), "name": "Acme Publishing"}
    assert isoparse(body["created_at"]) == user.created_at
    assert body["last_login"] is None
    assert (body["timezone"], body["language"]) == ("UTC", "en")
    assert body["notification_preferences"] == {"email": True, "push": False}


def test_profile_is_the_key_owners(client_for):
    first, second = ApiKeyFactory(), ApiKeyFactory()
    assert client_for(first).get("/v1/users/profile").json()["id"] == str(first.user_id)
    assert client_for(second).get("/v1/users/profile").json()["id"] == str(second.user_id)


def test_put_profile_updates_and_returns_the_profile(client, key):
    response = client.put(
        "/v1/users/profile",
        {"name": "Vera V.", "timezone": "Asia/Tokyo", "language": "ja-JP", "notification_preferences": {"push": True}},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == PROFILE_KEYS
    assert (body["name"], body["timezone"], body["language"]) == ("Vera V.", "Asia/Tokyo", "ja-JP")
    # Only the channel given changes.
    assert body["notification_preferences"] == {"email": True, "push": True}
    key.user.refresh_from_db()
    assert (key.user.name, key.user.timezone, key.user.language) == ("Vera V.", "Asia/Tokyo", "ja-JP")
    assert key.user.notification_preferences == {"email": True, "push": True}
    assert client.get("/v1/users/profile").json() == body


def test_put_profile_changes_only_the_fields_given(client, key):
    client.put("/v1/users/profile", {"timezone": "Europe/Berlin"}, format="json")
    key.user.refresh_from_db()
    assert (key.user.name, key.user.timezone, key.user.language) == ("Vera", "Europe/Berlin", "en")


@pytest.mark.parametrize("language", ["en", "en-GB", "zh-Hant-TW", "es-419", "de-CH-1996", "sr-Latn-RS"])
def test_put_profile_accepts_language_tags(client, language):
    response = client.put("/v1/users/profile", {"language": language}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["language"] == language


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"timezone": "Mars/Olympus"}, "timezone", "timezone"),
        ({"timezone": "utc+2"}, "timezone", "timezone"),
        ({"timezone": 2}, "timezone", "invalid"),
        ({"language": "english"}, "language", "language_tag"),
        ({"language": "en_US"}, "language", "language_tag"),
        ({"language": "e"}, "language", "language_tag"),
        ({"name": ""}, "name", "blank"),
        ({"name": None}, "name", "null"),
        ({"notification_preferences": {"email": "yes"}}, "notification_preferences.email", "invalid"),
        ({"notification_preferences": {"email": 1}}, "notification_preferences.email", "invalid"),
        ({"notification_preferences": {"sms": True}}, "notification_preferences.sms", "unknown_field"),
        ({"notification_preferences": True}, "notification_preferences", "invalid"),
        ({"role": "admin"}, "role", "unknown_field"),
        ({"email": "me@example.com"}, "email", "unknown_field"),
    ],
)
def test_put_profile_validation_errors(client, key, body, field, rule):
    response = client.put("/v1/users/profile", body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["details"]["field"], error["details"]["rule"]) == (field, rule)
    key.user.refresh_from_db()
    assert (key.user.role, key.user.timezone, key.user.language) == (Role.VIEWER, "UTC", "en")
    assert key.user.notification_preferences == {"email": True, "push": False}
