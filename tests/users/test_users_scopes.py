"""Which key may do what on the Users endpoints: the scope first (`read:users`, `write:users`),
then the owner's role, exactly as before the scopes existed."""

import pytest

from apps.accounts.models import ALL_SCOPES, Scope
from apps.users.models import Role, User
from tests.factories import AccountFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db

SCOPE_SETS = {
    "no scopes": [],
    "only read:users": [Scope.READ_USERS],
    "only write:users": [Scope.WRITE_USERS],
    "all": ALL_SCOPES,
}

# (method, path, body, scope it needs or None, status for an admin owner, status for an editor owner)
OPERATIONS = {
    "list": ("get", "/v1/users", None, Scope.READ_USERS, 200, 403),
    "read another user": ("get", "/v1/users/{other}", None, Scope.READ_USERS, 200, 403),
    "read oneself": ("get", "/v1/users/{self}", None, Scope.READ_USERS, 200, 200),
    "create": (
        "post",
        "/v1/users",
        {"email": "new@example.com", "name": "New", "send_invitation": False},
        Scope.WRITE_USERS,
        201,
        403,
    ),
    "update": ("put", "/v1/users/{other}", {"name": "Renamed"}, Scope.WRITE_USERS, 200, 403),
    "delete": ("delete", "/v1/users/{other}", None, Scope.WRITE_USERS, 204, 403),
    "read own profile": ("get", "/v1/users/profile", None, None, 200, 200),
    "update own profile": ("put", "/v1/users/profile", {"name": "Me"}, None, 200, 200),
}


@pytest.mark.parametrize("role", [Role.ADMIN, Role.EDITOR])
@pytest.mark.parametrize("scope_set", SCOPE_SETS)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_each_users_operation_needs_its_scope_and_then_the_owners_role(client_for, operation, scope_set, role):
    method, path, body, needed, admin_status, editor_status = OPERATIONS[operation]
    account = AccountFactory()
    UserFactory(account=account, role=Role.ADMIN)  # the organization keeps an admin whatever happens
    key = ApiKeyFactory(user=UserFactory(account=account, role=role), scopes=list(SCOPE_SETS[scope_set]))
    other = UserFactory(account=account, role=Role.VIEWER, name="Untouched")
    users_before = User.objects.filter(account=account).count()

    response = getattr(client_for(key), method)(path.format(other=other.pk, self=key.user_id), body, format="json")

    if needed is not None and needed not in SCOPE_SETS[scope_set]:
        assert response.status_code == 403, response.content
        error = response.json()["error"]
        assert error["code"] == "insufficient_scope"
        assert needed in error["message"]
    else:
        expected = admin_status if role == Role.ADMIN else editor_status
        assert response.status_code == expected, response.content
        if expected == 403:
            assert response.json()["error"]["code"] == "admin_required"
    if response.status_code >= 400:
        other.refresh_from_db()
        assert other.name == "Untouched"
        assert User.objects.filter(account=account).count() == users_before
