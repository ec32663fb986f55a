"""What the Users and SSO endpoints really return matches what /v1/openapi.json declares."""

import pytest

from apps.users.models import Role
from tests.factories import ApiKeyFactory, UserFactory
from tests.posts.test_openapi_conformance import check  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


def test_successful_responses_match_the_schema(admin, admin_key, check):  # noqa: F811
    member = UserFactory(account=admin_key.account, role=Role.EDITOR, metadata={"nested": {"a": [1, None]}})
    check(admin.get("/v1/users/profile"), "/v1/users/profile")
    check(admin.put("/v1/users/profile", {"language": "de-CH"}, format="json"), "/v1/users/profile", "put")
    check(admin.get("/v1/users?limit=1"), "/v1/users")
    check(admin.get(f"/v1/users/{member.pk}"), "/v1/users/{user_id}")
    check(admin.put(f"/v1/users/{member.pk}", {"role": "viewer"}, format="json"), "/v1/users/{user_id}", "put")
    invited = admin.post("/v1/users", {"email": "i@example.com", "name": "I"}, format="json")
    assert invited.status_code == 201
    check(invited, "/v1/users", "post")
    active = admin.post("/v1/users", {"email": "a@example.com", "name": "A", "send_invitation": False}, format="json")
    check(active, "/v1/users", "post")
    token = admin.post("/v1/sso_tokens", {"user_id": str(member.pk)}, format="json")
    assert token.status_code == 201
    check(token, "/v1/sso_tokens", "post")


def test_error_responses_match_the_schema(admin, admin_key, client_for, check):  # noqa: F811
    viewer = client_for(ApiKeyFactory(user=UserFactory(account=admin_key.account, role=Role.VIEWER)))
    check(viewer.get("/v1/users"), "/v1/users")  # 403 admin_required
    check(admin.get("/v1/users?role=x"), "/v1/users")  # 400
    check(admin.post("/v1/users", {"email": admin_key.user.email, "name": "D"}, format="json"), "/v1/users", "post")
    detail = "/v1/users/{user_id}"
    check(admin.get("/v1/users/424242"), detail)  # 404
    last_admin = admin.put(f"/v1/users/{admin_key.user_id}", {"role": "viewer"}, format="json")
    assert last_admin.status_code == 422
    check(last_admin, detail, "put")
    check(admin.delete(f"/v1/users/{admin_key.user_id}"), detail, "delete")
    inactive = UserFactory(account=admin_key.account, status="suspended")
    check(admin.post("/v1/sso_tokens", {"email": inactive.email}, format="json"), "/v1/sso_tokens", "post")
    check(admin.post("/v1/sso_tokens", {"redirect_to": "//x"}, format="json"), "/v1/sso_tokens", "post")
