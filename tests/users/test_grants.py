"""Nobody grants more than they hold: in the Settings area and in the users services, a person gives
no one (themselves included) a role above their own or a permission they do not hold."""

import pytest

from apps.core.errors import DomainError
from apps.users.models import Permission, Role, User, default_permissions_for
from apps.users.services import user_create, user_update
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory, OperatorFactory, UserFactory
from tests.users.test_users_admin import change_form, messages_of

pytestmark = pytest.mark.django_db

PEOPLE = [Permission.USERS_READ, Permission.USERS_WRITE]


def add_form(account, **fields) -> dict:
    data = {"account": account.pk, "email": "new@example.com", "name": "New Person", "role": Role.VIEWER}
    return {"metadata": "{}", **data, **fields}


def test_an_editor_who_manages_people_cannot_make_an_admin(emitted):
    editor = UserFactory(role=Role.EDITOR, permissions=[*default_permissions_for(Role.EDITOR), *PEOPLE])
    response = admin_session(editor).post(
        "/admin/users/user/add/", add_form(editor.account, role=Role.ADMIN), follow=True
    )
    assert response.status_code == 200
    assert any("As an editor you cannot make anyone an admin" in m for m in messages_of(response))
    assert not User.objects.filter(email="new@example.com").exists()
    assert emitted("user.created") == []


def test_an_editor_who_manages_people_gives_only_what_they_hold():
    editor = UserFactory(role=Role.EDITOR, permissions=[Permission.ARTICLES_READ, *PEOPLE])
    client = admin_session(editor)
    refused = client.post(
        "/admin/users/user/add/", add_form(editor.account, permissions=[Permission.SYSTEM_SETTINGS]), follow=True
    )
    assert any("do not hold: system.settings" in m for m in messages_of(refused))
    assert not User.objects.filter(email="new@example.com").exists()
    client.post("/admin/users/user/add/", add_form(editor.account, permissions=[Permission.ARTICLES_READ]))
    assert User.objects.get(email="new@example.com").permissions == [Permission.ARTICLES_READ]


def test_a_role_whose_defaults_the_person_does_not_hold_is_refused():
    # A viewer's defaults include analytics.read, which this editor does not hold.
    editor = UserFactory(role=Role.EDITOR, permissions=[Permission.ARTICLES_READ, *PEOPLE])
    response = admin_session(editor).post("/admin/users/user/add/", add_form(editor.account), follow=True)
    assert any("do not hold: analytics.read" in m for m in messages_of(response))


def test_an_admin_cannot_give_a_permission_they_lack_nor_take_it_themselves(emitted):
    admin = AdminUserFactory(permissions=[p for p in Permission.values if p != Permission.SYSTEM_API_KEYS])
    other = UserFactory(account=admin.account, role=Role.EDITOR)
    client = admin_session(admin)
    for user in (other, admin):
        wanted = [*user.permissions, Permission.SYSTEM_API_KEYS]
        response = client.post(
            f"/admin/users/user/{user.pk}/change/", change_form(user, permissions=wanted), follow=True
        )
        assert any("do not hold: system.api_keys" in m for m in messages_of(response))
        user.refresh_from_db()
        assert Permission.SYSTEM_API_KEYS not in user.permissions
    assert emitted("user.updated") == []


def test_what_the_user_had_already_is_no_grant():
    admin = AdminUserFactory(permissions=[p for p in Permission.values if p != Permission.SYSTEM_API_KEYS])
    other = UserFactory(account=admin.account, role=Role.EDITOR, permissions=[Permission.SYSTEM_API_KEYS])
    updated = user_update(user=other, name="Renamed", granted_by=admin)
    assert updated.name == "Renamed"
    assert updated.permissions == [Permission.SYSTEM_API_KEYS]


def test_the_services_refuse_with_a_domain_error():
    editor = UserFactory(role=Role.EDITOR)
    with pytest.raises(DomainError) as refused:
        user_create(account=editor.account, email="x@example.com", name="X", role=Role.ADMIN, granted_by=editor)
    assert refused.value.code == "grant_not_held"
    viewer = UserFactory(account=editor.account, role=Role.VIEWER)
    with pytest.raises(DomainError):
        user_update(user=viewer, permissions=[Permission.USERS_DELETE], granted_by=editor)


def test_an_operator_grants_anything_and_no_person_means_no_rule():
    account = AccountFactory()
    operator = OperatorFactory()
    made = user_create(account=account, email="a@example.com", name="A", role=Role.ADMIN, granted_by=operator)
    assert made.permissions == default_permissions_for(Role.ADMIN)
    # An API key or a command is no person: the Users API keeps the specification's rules.
    by_key = user_create(account=account, email="b@example.com", name="B", role=Role.ADMIN, send_invitation=False)
    assert by_key.role == Role.ADMIN
