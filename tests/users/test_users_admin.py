import pytest

from apps.users.models import Role, Status, User, default_permissions_for
from tests.factories import AccountFactory, AdminUserFactory, UserFactory

pytestmark = pytest.mark.django_db


def change_form(user: User, **changes) -> dict:
    data = {
        "name": user.name,
        "role": user.role,
        "status": user.status,
        "permissions": list(user.permissions),
        "timezone": user.timezone,
        "language": user.language,
        "notification_preferences": '{"email": true, "push": false}',
        "metadata": "{}",
    }
    data.update(changes)
    return data


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_list_shows_role_status_and_permissions(admin_client):
    UserFactory(email="listed@example.com", role=Role.VIEWER, status=Status.SUSPENDED)
    html = admin_client.get("/admin/users/user/").content.decode()
    assert "listed@example.com" in html
    assert "Suspended" in html
    assert "articles.read, analytics.read" in html


def test_changing_the_role_goes_through_the_service(admin_client, emitted):
    user = UserFactory(role=Role.VIEWER)
    response = admin_client.post(
        f"/admin/users/user/{user.pk}/change/", change_form(user, role=Role.EDITOR), follow=True
    )
    assert response.status_code == 200
    user.refresh_from_db()
    assert user.role == Role.EDITOR
    assert user.permissions == default_permissions_for(Role.EDITOR)  # only the role changed: defaults
    [event] = emitted("user.role_changed")
    assert (event["data"]["old_role"], event["data"]["new_role"]) == ("viewer", "editor")


def test_the_last_admin_cannot_be_suspended_in_the_admin(admin_client, emitted):
    admin = AdminUserFactory()
    response = admin_client.post(
        f"/admin/users/user/{admin.pk}/change/", change_form(admin, status=Status.SUSPENDED), follow=True
    )
    assert any("last active admin" in m for m in messages_of(response))
    admin.refresh_from_db()
    assert admin.status == Status.ACTIVE
    assert emitted("user.updated") == []


def test_the_change_form_validates_profile_fields(admin_client):
    user = UserFactory()
    response = admin_client.post(f"/admin/users/user/{user.pk}/change/", change_form(user, timezone="Nowhere/Land"))
    assert response.status_code == 200
    assert "is not an IANA time zone" in response.content.decode()
    user.refresh_from_db()
    assert user.timezone == "UTC"


def test_adding_a_user_invites_them(admin_client, mailoutbox, emitted):
    account = AccountFactory()
    response = admin_client.post(
        "/admin/users/user/add/",
        {
            "account": account.pk,
            "email": "Added@Example.com",
            "name": "Added",
            "role": Role.EDITOR,
            "metadata": "{}",
            "send_invitation": "on",
        },
        follow=True,
    )
    assert response.status_code == 200
    user = User.objects.get(email="added@example.com")
    assert (user.account, user.status, user.permissions) == (account, Status.INVITED, default_permissions_for("editor"))
    assert len(mailoutbox) == 1
    assert len(emitted("user.created")) == 1


def test_deleting_in_the_admin_goes_through_the_service(admin_client, emitted):
    user = UserFactory()
    admin_client.post(f"/admin/users/user/{user.pk}/delete/", {"post": "yes"}, follow=True)
    assert not User.objects.filter(pk=user.pk).exists()
    assert len(emitted("user.deleted")) == 1


def test_deleting_the_last_admin_in_the_admin_is_refused(admin_client):
    admin = AdminUserFactory()
    response = admin_client.post(f"/admin/users/user/{admin.pk}/delete/", {"post": "yes"}, follow=True)
    assert any("last active admin" in m for m in messages_of(response))
    assert User.objects.filter(pk=admin.pk).exists()


def test_bulk_delete_is_all_or_nothing(admin_client):
    admin = AdminUserFactory()
    other = UserFactory(account=admin.account)
    response = admin_client.post(
        "/admin/users/user/",
        {"action": "delete_selected", "_selected_action": [admin.pk, other.pk], "post": "yes"},
        follow=True,
    )
    assert any("last active admin" in m for m in messages_of(response))
    assert User.objects.filter(pk__in=[admin.pk, other.pk]).count() == 2


def test_suspend_action_uses_the_rules(admin_client, emitted):
    admin = AdminUserFactory()
    editor = UserFactory(account=admin.account)
    response = admin_client.post(
        "/admin/users/user/", {"action": "suspend_selected", "_selected_action": [admin.pk, editor.pk]}, follow=True
    )
    shown = messages_of(response)
    assert any("last active admin" in m for m in shown)
    assert any("Suspended 1 user(s)" in m for m in shown)
    admin.refresh_from_db()
    editor.refresh_from_db()
    assert (admin.status, editor.status) == (Status.ACTIVE, Status.SUSPENDED)
    assert len(emitted("user.updated")) == 1
