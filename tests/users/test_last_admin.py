import time

import pytest

from apps.core.errors import DomainError
from apps.users import services
from apps.users.models import Role, Status, User
from apps.users.services import user_delete, user_update
from tests.conftest import requires_postgres, run_together
from tests.factories import AdminUserFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def only_admin(admin_key, client_for):  # the API client of the organization's only admin
    return client_for(admin_key)


def assert_last_admin(response):
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "last_admin"
    assert "last active admin" in error["message"]


@pytest.mark.parametrize(
    "body", [{"role": "editor"}, {"role": "viewer"}, {"status": "suspended"}, {"status": "inactive"}]
)
def test_the_last_active_admin_cannot_be_demoted_or_deactivated(only_admin, admin_key, body):
    assert_last_admin(only_admin.put(f"/v1/users/{admin_key.user_id}", body, format="json"))
    admin = User.objects.get(pk=admin_key.user_id)
    assert (admin.role, admin.status) == (Role.ADMIN, Status.ACTIVE)


def test_the_last_active_admin_cannot_be_deleted(only_admin, admin_key):
    assert_last_admin(only_admin.delete(f"/v1/users/{admin_key.user_id}"))
    assert User.objects.filter(pk=admin_key.user_id).exists()


def test_an_admin_can_be_demoted_while_another_active_admin_remains(only_admin, admin_key):
    other = AdminUserFactory(account=admin_key.account)
    response = only_admin.put(f"/v1/users/{other.pk}", {"role": "editor"}, format="json")
    assert response.status_code == 200
    assert response.json()["role"] == "editor"
    # Now admin_key's owner is the last one.
    assert_last_admin(only_admin.put(f"/v1/users/{admin_key.user_id}", {"role": "editor"}, format="json"))


def test_an_admin_may_step_down_when_another_admin_remains(only_admin, admin_key):
    AdminUserFactory(account=admin_key.account)
    assert only_admin.delete(f"/v1/users/{admin_key.user_id}").status_code == 204


@pytest.mark.parametrize("status", [Status.SUSPENDED, Status.INACTIVE, Status.INVITED])
def test_admins_who_are_not_active_do_not_count(only_admin, admin_key, status):
    AdminUserFactory(account=admin_key.account, status=status)
    assert_last_admin(only_admin.put(f"/v1/users/{admin_key.user_id}", {"role": "viewer"}, format="json"))


def test_admins_of_other_organizations_do_not_count(only_admin, admin_key):
    AdminUserFactory()
    assert_last_admin(only_admin.delete(f"/v1/users/{admin_key.user_id}"))


def test_an_inactive_admin_can_be_deleted_or_demoted(only_admin, admin_key):
    dormant = AdminUserFactory(account=admin_key.account, status=Status.SUSPENDED)
    assert only_admin.put(f"/v1/users/{dormant.pk}", {"role": "viewer"}, format="json").status_code == 200
    assert only_admin.delete(f"/v1/users/{dormant.pk}").status_code == 204


def test_renaming_the_last_admin_is_fine(only_admin, admin_key):
    response = only_admin.put(f"/v1/users/{admin_key.user_id}", {"name": "Still Admin"}, format="json")
    assert response.status_code == 200


def test_the_rule_holds_for_services_called_directly():
    admin = AdminUserFactory()
    UserFactory(account=admin.account, role=Role.EDITOR)
    with pytest.raises(DomainError) as refused:
        user_update(user=admin, status=Status.SUSPENDED)
    assert refused.value.code == "last_admin"
    with pytest.raises(DomainError):
        user_delete(user=admin)


@requires_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "change",
    [
        lambda user: user_update(user=user, role=Role.EDITOR),
        lambda user: user_update(user=user, status=Status.SUSPENDED),
        lambda user: user_delete(user=user),
    ],
    ids=["demote", "suspend", "delete"],
)
def test_two_concurrent_changes_cannot_remove_both_remaining_admins(monkeypatch, change):
    first = AdminUserFactory()
    second = AdminUserFactory(account=first.account)
    check = services._ensure_another_active_admin

    def slow_check(user, action):
        check(user, action)
        # Both transactions would pass the check inside this window if nothing serialized them.
        time.sleep(0.5)

    monkeypatch.setattr(services, "_ensure_another_active_admin", slow_check)
    results = run_together([lambda: change(first), lambda: change(second)])
    refused = [r for r in results if isinstance(r, DomainError)]
    assert len(refused) == 1, results
    assert refused[0].code == "last_admin"
    assert User.objects.filter(account=first.account, role=Role.ADMIN, status=Status.ACTIVE).count() == 1
