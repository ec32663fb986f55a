import pytest
from dateutil.parser import isoparse

from apps.users.events import UserEvent
from apps.users.models import Role, Status, User
from apps.users.services import user_update
from tests.factories import AccountFactory, AdminUserFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db

USER_KEYS = {
    "id",
    "email",
    "name",
    "role",
    "status",
    "permissions",
    "metadata",
    "timezone",
    "language",
    "notification_preferences",
    "organization",
    "created_at",
    "updated_at",
    "last_login",
    "invitation_sent_at",
}
PASSWORD = "a-Long-unusual-passphrase-42"


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


def only(bodies: list[dict]) -> dict:
    assert len(bodies) == 1, bodies
    return bodies[0]


def test_user_created_is_emitted_once_with_the_user(admin, admin_key, emitted):
    response = admin.post(
        "/v1/users", {"email": "new@example.com", "name": "New", "role": "editor", "metadata": {"a": 1}}, format="json"
    )
    body = only(emitted("user.created"))
    assert body["event"] == "user.created"
    assert body["account"] == {"id": admin_key.account_id, "name": admin_key.account.name}
    isoparse(body["timestamp"])
    user = body["data"]["user"]
    assert set(body["data"]) == {"user"}
    assert set(user) == USER_KEYS
    assert user["id"] == response.json()["id"]
    assert (user["email"], user["name"], user["role"]) == ("new@example.com", "New", "editor")
    assert user["status"] == "invited"
    assert user["metadata"] == {"a": 1}
    assert user["organization"] == {"id": str(admin_key.account_id), "name": admin_key.account.name}
    assert user["invitation_sent_at"] is not None
    assert emitted("user.updated") == []


def test_user_events_carry_no_secrets(admin, emitted):
    admin.post("/v1/users", {"email": "new@example.com", "name": "New"}, format="json")
    stored = User.objects.get(email="new@example.com")
    stored.set_password(PASSWORD)
    stored.save()
    admin.put(f"/v1/users/{stored.pk}", {"name": "Newer"}, format="json")
    for body in (*emitted("user.created"), *emitted("user.updated")):
        assert "password" not in str(body)
        assert stored.password not in str(body)


def test_user_updated_lists_the_changed_fields(admin, admin_key, emitted):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER)
    admin.put(f"/v1/users/{user.pk}", {"name": "Renamed", "status": "suspended"}, format="json")
    body = only(emitted("user.updated"))
    assert body["data"]["changed"] == ["name", "status"]
    assert (body["data"]["user"]["name"], body["data"]["user"]["status"]) == ("Renamed", "suspended")
    assert emitted("user.role_changed") == []


def test_a_new_role_sends_role_changed_with_old_and_new_role_and_updated(admin, admin_key, emitted):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER)
    admin.put(f"/v1/users/{user.pk}", {"role": "editor"}, format="json")
    changed = only(emitted("user.role_changed"))
    assert (changed["data"]["old_role"], changed["data"]["new_role"]) == ("viewer", "editor")
    assert changed["data"]["user"]["role"] == "editor"
    assert changed["data"]["user"]["permissions"] == ["articles.read", "articles.write", "articles.publish"]
    assert only(emitted("user.updated"))["data"]["changed"] == ["role", "permissions"]


def test_profile_changes_send_user_updated(client_for, emitted):
    key = ApiKeyFactory()
    client_for(key).put("/v1/users/profile", {"timezone": "Europe/Paris"}, format="json")
    body = only(emitted("user.updated"))
    assert body["data"]["changed"] == ["timezone"]
    assert body["data"]["user"]["timezone"] == "Europe/Paris"


def test_nothing_changed_sends_nothing(admin, admin_key, emitted):
    user = UserFactory(account=admin_key.account, name="Same", role=Role.EDITOR)
    admin.put(f"/v1/users/{user.pk}", {"name": "Same", "role": "editor"}, format="json")
    admin.put(f"/v1/users/{user.pk}", {}, format="json")
    assert emitted("user.updated") == []
    assert emitted("user.role_changed") == []


def test_a_refused_change_sends_nothing(admin, admin_key, emitted):
    admin.put(f"/v1/users/{admin_key.user_id}", {"role": "viewer"}, format="json")  # last admin: 422
    admin.post("/v1/users", {"email": admin_key.user.email, "name": "Dup"}, format="json")  # 409
    assert emitted("user.updated") == emitted("user.role_changed") == emitted("user.created") == []


def test_user_deleted_is_emitted_once_with_the_user_as_it_was(admin, admin_key, emitted):
    user = UserFactory(account=admin_key.account, name="Gone Soon")
    admin.delete(f"/v1/users/{user.pk}")
    body = only(emitted("user.deleted"))
    assert body["data"]["user"]["id"] == str(user.pk)
    assert body["data"]["user"]["name"] == "Gone Soon"


def test_accepting_an_invitation_sends_user_updated(admin, client, emitted, mailoutbox, settings):
    settings.SITE_URL = ""
    admin.post("/v1/users", {"email": "new@example.com", "name": "New"}, format="json")
    path = next(line for line in mailoutbox[0].body.splitlines() if "token=" in line).strip()
    token = path.split("token=", 1)[1]
    client.post(path, {"token": token, "new_password1": PASSWORD, "new_password2": PASSWORD})
    body = only(emitted("user.updated"))
    assert body["data"]["changed"] == ["status"]
    assert body["data"]["user"]["status"] == "active"


def test_events_go_to_the_users_own_account(emitted):
    first, second = AdminUserFactory(account=AccountFactory()), UserFactory(account=AccountFactory())
    user_update(user=second, status=Status.INACTIVE)
    user_update(user=first, name="First")
    bodies = emitted("user.updated")
    assert [b["account"]["id"] for b in bodies] == [second.account_id, first.account_id]


def test_the_user_events_are_described_in_plain_words_where_account_admins_pick_them():
    """The descriptions label the events' boxes of a webhook's page in the Settings area."""
    for event in UserEvent:
        assert "`" not in event.label, event
    assert UserEvent.UPDATED.label == "A user was changed; data.changed names the fields"
