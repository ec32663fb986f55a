import pytest
from dateutil.parser import isoparse

from apps.users.models import Permission, Role, Status, User, default_permissions_for
from tests.factories import AccountFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db

LIST_ITEM_KEYS = {"id", "email", "name", "role", "status", "last_login"}
DETAIL_KEYS = {"id", "email", "name", "role", "status", "permissions", "metadata", "created_at", "updated_at"}
CREATED_KEYS = {"id", "email", "name", "role", "status", "invitation_sent_at"}


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


def key_with_role(role: str, account=None):
    return ApiKeyFactory(user=UserFactory(role=role, account=account or AccountFactory()))


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code
    return error


# --- admin only ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.EDITOR, Role.VIEWER])
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/v1/users", None),
        ("post", "/v1/users", {"email": "new@example.com", "name": "New"}),
        ("put", "/v1/users/{other}", {"name": "Renamed"}),
        ("delete", "/v1/users/{other}", None),
        ("get", "/v1/users/{other}", None),
    ],
)
def test_admin_only_operations_refuse_editor_and_viewer_keys(client_for, role, method, path, body):
    key = key_with_role(role)
    other = UserFactory(account=key.account, name="Untouched")
    response = getattr(client_for(key), method)(path.format(other=other.pk), body, format="json")
    error = assert_error(response, 403, "admin_required")
    assert "admin" in error["message"]
    other.refresh_from_db()
    assert other.name == "Untouched"
    assert User.objects.filter(email="new@example.com").count() == 0


def test_users_endpoints_need_a_key(api_client):
    assert_error(api_client.get("/v1/users"), 401, "authentication_failed")
    assert_error(api_client.get("/v1/users/profile"), 401, "authentication_failed")


# --- list ----------------------------------------------------------------------------------------


def test_list_has_the_spec_shape(admin, admin_key):
    body = admin.get("/v1/users").json()
    assert set(body) == {"data", "pagination"}
    assert body["pagination"] == {"page": 1, "limit": 20, "total": 1, "pages": 1}
    [row] = body["data"]
    assert set(row) == LIST_ITEM_KEYS
    user = admin_key.user
    assert row == {
        "id": str(user.pk),
        "email": user.email,
        "name": user.name,
        "role": "admin",
        "status": "active",
        "last_login": None,
    }


def test_list_shows_only_the_keys_account(admin, admin_key):
    mine = UserFactory(account=admin_key.account)
    UserFactory.create_batch(3)  # each in an account of its own
    ids = [row["id"] for row in admin.get("/v1/users").json()["data"]]
    assert ids == [str(admin_key.user_id), str(mine.pk)]


def test_list_filters_by_role_status_and_search(admin, admin_key):
    account = admin_key.account
    # The key owner's name is Faker's, which may well hold "ada" (Adams, Adam...).
    type(admin_key.user).objects.filter(pk=admin_key.user_id).update(name="Grace", email="grace@example.com")
    ada = UserFactory(account=account, name="Ada Lovelace", email="ada@example.com", role=Role.EDITOR)
    bob = UserFactory(account=account, name="Bob", email="bob@ADA-corp.example.com", role=Role.VIEWER)
    eve = UserFactory(account=account, name="Eve", email="eve@example.com", role=Role.VIEWER, status=Status.SUSPENDED)
    inv = UserFactory(account=account, name="Ivy", email="ivy@example.com", role=Role.EDITOR, status=Status.INVITED)

    def ids(query: str) -> list[str]:
        response = admin.get(f"/v1/users?{query}")
        assert response.status_code == 200, response.content
        return [row["id"] for row in response.json()["data"]]

    assert ids("role=viewer") == [str(bob.pk), str(eve.pk)]
    assert ids("status=suspended") == [str(eve.pk)]
    assert ids("status=invited") == [str(inv.pk)]
    assert ids("search=ada") == [str(ada.pk), str(bob.pk)]  # name, or e-mail in any case
    assert ids("search=LOVELACE") == [str(ada.pk)]
    assert ids("role=viewer&status=active&search=ada") == [str(bob.pk)]
    assert ids("search=nobody") == []
    assert admin.get("/v1/users?role=viewer").json()["pagination"]["total"] == 2


def test_list_paginates_with_limit(admin, admin_key):
    UserFactory.create_batch(24, account=admin_key.account)  # 25 users in all
    first = admin.get("/v1/users").json()
    assert len(first["data"]) == 20
    assert first["pagination"] == {"page": 1, "limit": 20, "total": 25, "pages": 2}
    page = admin.get("/v1/users?limit=10&page=3").json()
    assert page["pagination"] == {"page": 3, "limit": 10, "total": 25, "pages": 3}
    all_ids = [u.pk for u in User.objects.filter(account=admin_key.account).order_by("id")]
    assert [int(row["id"]) for row in page["data"]] == all_ids[20:]
    assert admin.get("/v1/users?page=4&limit=10").json()["data"] == []


def test_list_limit_is_capped_at_100(admin, admin_key):
    UserFactory.create_batch(104, account=admin_key.account)
    body = admin.get("/v1/users?limit=1000").json()
    assert body["pagination"]["limit"] == 100
    assert len(body["data"]) == 100


@pytest.mark.parametrize(
    ("query", "field"),
    [("limit=0", "limit"), ("page=x", "page"), ("role=owner", "role"), ("status=deleted", "status")],
)
def test_list_rejects_bad_query_parameters(admin, query, field):
    error = assert_error(admin.get(f"/v1/users?{query}"), 400, "VALIDATION_ERROR")
    assert error["details"]["field"] == field


# --- get one -------------------------------------------------------------------------------------


def test_get_user_has_the_spec_shape(admin, admin_key):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER, metadata={"team": "sales"})
    body = admin.get(f"/v1/users/{user.pk}").json()
    assert set(body) == DETAIL_KEYS
    assert body["id"] == str(user.pk)
    assert body["email"] == user.email
    assert body["role"] == "viewer"
    assert body["status"] == "active"
    assert body["permissions"] == ["articles.read", "analytics.read"]
    assert body["metadata"] == {"team": "sales"}
    assert isoparse(body["created_at"]) == user.created_at
    assert isoparse(body["updated_at"]) == user.updated_at


@pytest.mark.parametrize("role", [Role.EDITOR, Role.VIEWER])
def test_non_admin_may_read_their_own_record(client_for, role):
    key = key_with_role(role)
    body = client_for(key).get(f"/v1/users/{key.user_id}").json()
    assert body["id"] == str(key.user_id)
    assert body["role"] == role


def test_another_organizations_user_is_not_found(admin):
    stranger = UserFactory()
    assert_error(admin.get(f"/v1/users/{stranger.pk}"), 404, "not_found")
    assert_error(admin.put(f"/v1/users/{stranger.pk}", {"name": "x"}, format="json"), 404, "not_found")
    assert_error(admin.delete(f"/v1/users/{stranger.pk}"), 404, "not_found")
    assert User.objects.filter(pk=stranger.pk, name=stranger.name).exists()


@pytest.mark.parametrize("user_id", ["abc", "0", "99999999", "1" * 40, "\u0661"])
def test_malformed_or_unknown_user_ids_are_not_found(admin, user_id):
    assert_error(admin.get(f"/v1/users/{user_id}"), 404, "not_found")


# --- create --------------------------------------------------------------------------------------


def test_create_returns_201_with_the_spec_shape_and_invites(admin, admin_key, mailoutbox):
    response = admin.post(
        "/v1/users",
        {"email": "New.Person@Example.com", "name": "New Person", "role": "editor", "metadata": {"team": "blog"}},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == CREATED_KEYS
    user = User.objects.get(pk=int(body["id"]))
    assert body["email"] == "new.person@example.com" == user.email
    assert body["status"] == "invited"
    assert isoparse(body["invitation_sent_at"]) == user.invitation_sent_at
    assert user.account == admin_key.account
    assert user.permissions == default_permissions_for(Role.EDITOR)
    assert user.metadata == {"team": "blog"}
    assert not user.has_usable_password()
    assert len(mailoutbox) == 1


def test_create_defaults_to_viewer_with_its_permissions(admin):
    body = admin.post("/v1/users", {"email": "v@example.com", "name": "V"}, format="json").json()
    assert body["role"] == "viewer"
    assert User.objects.get(pk=body["id"]).permissions == default_permissions_for(Role.VIEWER)


def test_create_without_invitation_is_active_at_once(admin, mailoutbox):
    body = admin.post(
        "/v1/users", {"email": "a@example.com", "name": "A", "send_invitation": False}, format="json"
    ).json()
    assert body["status"] == "active"
    assert body["invitation_sent_at"] is None
    assert mailoutbox == []


def test_create_keeps_given_permissions_without_repeats_in_canonical_order(admin):
    body = admin.post(
        "/v1/users",
        {"email": "p@example.com", "name": "P", "permissions": ["users.read", "articles.read", "users.read"]},
        format="json",
    ).json()
    assert User.objects.get(pk=body["id"]).permissions == ["articles.read", "users.read"]


def test_create_with_no_permissions_at_all(admin):
    body = admin.post("/v1/users", {"email": "n@example.com", "name": "N", "permissions": []}, format="json").json()
    assert User.objects.get(pk=body["id"]).permissions == []


@pytest.mark.parametrize("email", ["taken@example.com", "TAKEN@example.com"])
def test_create_with_a_taken_email_is_409(admin, email):
    UserFactory(email="taken@example.com")  # in another organization: e-mails are unique service-wide
    error = assert_error(admin.post("/v1/users", {"email": email, "name": "T"}, format="json"), 409, "email_taken")
    assert "taken@example.com" in error["message"]
    assert User.objects.filter(email__iexact="taken@example.com").count() == 1


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"name": "No Email"}, "email", "required"),
        ({"email": "x@example.com"}, "name", "required"),
        ({"email": "x@example.com", "name": "   "}, "name", "blank"),
        ({"email": "not-an-email", "name": "X"}, "email", "invalid"),
        ({"email": 12, "name": "X"}, "email", "invalid"),
        ({"email": "x@example.com", "name": 12}, "name", "invalid"),
        ({"email": "x@example.com", "name": "X", "role": "owner"}, "role", "invalid_choice"),
        ({"email": "x@example.com", "name": "X", "permissions": ["articles.read", "root"]}, "permissions", None),
        ({"email": "x@example.com", "name": "X", "permissions": "articles.read"}, "permissions", "not_a_list"),
        ({"email": "x@example.com", "name": "X", "metadata": ["a"]}, "metadata", "not_a_dict"),
        ({"email": "x@example.com", "name": "X", "metadata": {"blob": "x" * 17000}}, "metadata", "max_size"),
        ({"email": "x@example.com", "name": "X", "send_invitation": "yes"}, "send_invitation", "invalid"),
        ({"email": "x@example.com", "name": "X", "status": "active"}, "status", "unknown_field"),
    ],
)
def test_create_validation_errors(admin, body, field, rule):
    error = assert_error(admin.post("/v1/users", body, format="json"), 400, "VALIDATION_ERROR")
    assert error["details"]["field"].startswith(field)
    if rule:
        assert error["details"]["rule"] == rule
    assert User.objects.filter(email="x@example.com").count() == 0


def test_create_rejects_a_body_that_is_not_an_object(admin):
    assert_error(admin.post("/v1/users", ["x"], format="json"), 400, "VALIDATION_ERROR")


# --- update --------------------------------------------------------------------------------------


def test_update_returns_the_updated_user(admin, admin_key):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER)
    response = admin.put(f"/v1/users/{user.pk}", {"name": "Renamed", "status": "suspended"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == DETAIL_KEYS
    assert (body["name"], body["status"], body["role"]) == ("Renamed", "suspended", "viewer")
    user.refresh_from_db()
    assert (user.name, user.status) == ("Renamed", Status.SUSPENDED)


def test_update_is_partial(admin, admin_key):
    user = UserFactory(account=admin_key.account, name="Keep", role=Role.EDITOR, metadata={"a": 1})
    body = admin.put(f"/v1/users/{user.pk}", {}, format="json").json()
    assert (body["name"], body["role"], body["metadata"]) == ("Keep", "editor", {"a": 1})


def test_new_role_resets_permissions_to_its_defaults(admin, admin_key):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER, permissions=["system.billing"])
    body = admin.put(f"/v1/users/{user.pk}", {"role": "editor"}, format="json").json()
    assert body["permissions"] == default_permissions_for(Role.EDITOR)


def test_new_role_with_given_permissions_keeps_those(admin, admin_key):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER)
    body = admin.put(
        f"/v1/users/{user.pk}", {"role": "editor", "permissions": ["articles.delete"]}, format="json"
    ).json()
    assert (body["role"], body["permissions"]) == ("editor", ["articles.delete"])


def test_same_role_keeps_custom_permissions(admin, admin_key):
    user = UserFactory(account=admin_key.account, role=Role.EDITOR, permissions=[Permission.USERS_READ.value])
    body = admin.put(f"/v1/users/{user.pk}", {"role": "editor"}, format="json").json()
    assert body["permissions"] == ["users.read"]


def test_permissions_alone_replace_the_permissions(admin, admin_key):
    user = UserFactory(account=admin_key.account, role=Role.EDITOR)
    body = admin.put(f"/v1/users/{user.pk}", {"permissions": ["analytics.export"]}, format="json").json()
    assert (body["role"], body["permissions"]) == ("editor", ["analytics.export"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "root"}, "role"),
        ({"status": "deleted"}, "status"),
        ({"permissions": ["articles.read", "nope"]}, "permissions"),
        ({"name": ""}, "name"),
        ({"name": ["x"]}, "name"),
        ({"email": "new@example.com"}, "email"),
    ],
)
def test_update_validation_errors(admin, admin_key, body, field):
    user = UserFactory(account=admin_key.account, role=Role.VIEWER, name="Same")
    error = assert_error(admin.put(f"/v1/users/{user.pk}", body, format="json"), 400, "VALIDATION_ERROR")
    assert error["details"]["field"].startswith(field)
    user.refresh_from_db()
    assert (user.name, user.role, user.status) == ("Same", Role.VIEWER, Status.ACTIVE)


def test_an_active_user_cannot_be_set_back_to_invited(admin, admin_key):
    user = UserFactory(account=admin_key.account)
    assert_error(admin.put(f"/v1/users/{user.pk}", {"status": "invited"}, format="json"), 422, "invalid_status")
    user.refresh_from_db()
    assert user.status == Status.ACTIVE


@pytest.mark.parametrize("status", [Status.INACTIVE, Status.SUSPENDED])
def test_deactivated_users_keys_answer_401_and_reactivation_restores_them(admin, admin_key, client_for, status):
    key = ApiKeyFactory(user=UserFactory(account=admin_key.account))
    assert client_for(key).get("/v1/users/profile").status_code == 200
    admin.put(f"/v1/users/{key.user_id}", {"status": status}, format="json")
    assert_error(client_for(key).get("/v1/users/profile"), 401, "authentication_failed")
    admin.put(f"/v1/users/{key.user_id}", {"status": "active"}, format="json")
    assert client_for(key).get("/v1/users/profile").status_code == 200


# --- delete --------------------------------------------------------------------------------------


def test_delete_answers_204_and_revokes_the_users_keys(admin, admin_key, client_for):
    key = ApiKeyFactory(user=UserFactory(account=admin_key.account))
    response = admin.delete(f"/v1/users/{key.user_id}")
    assert response.status_code == 204
    assert response.content == b""
    assert not User.objects.filter(pk=key.user_id).exists()
    assert_error(client_for(key).get("/v1/me"), 401, "authentication_failed")
    assert_error(admin.get(f"/v1/users/{key.user_id}"), 404, "not_found")
