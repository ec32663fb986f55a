"""Admin access follows a user's role, permissions and status, and nothing a user of an account does (in any
form, by SSO, or by script) makes them staff, a superuser, or a member of another account."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import Client

from apps.accounts.models import Scope
from apps.channels.models import Channel, Team
from apps.posts.models import Tag
from apps.users.models import ApiKey, Role, Status, default_permissions_for
from apps.webhooks.models import WebhookEndpoint
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    OperatorFactory,
    SsoTokenFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db
User = get_user_model()
PASSWORD = "a-Long-unusual-passphrase-42"


def test_a_member_of_an_account_can_never_be_a_superuser():
    user = AdminUserFactory()
    user.is_superuser = True
    with pytest.raises(ValidationError):
        user.full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        user.save()
    with pytest.raises(ValueError):
        User.objects.create_superuser("root@example.com", PASSWORD, account=user.account)


def test_there_is_no_staff_flag_group_or_permission_to_tick():
    field_names = {f.name for f in User._meta.get_fields()}
    assert not {"is_staff", "groups", "user_permissions"} & field_names
    with pytest.raises(AttributeError):
        User(email="x@example.com", is_staff=True)


def test_posting_privilege_fields_and_another_account_changes_nothing():
    admin = AdminUserFactory()
    member = UserFactory(account=admin.account, role=Role.EDITOR)
    other = AccountFactory()
    client = admin_session(admin)
    data = {
        "name": "Renamed",
        "role": Role.EDITOR,
        "status": Status.ACTIVE,
        "permissions": ["articles.read"],
        "timezone": "UTC",
        "language": "en",
        "notification_preferences": '{"email": true, "push": false}',
        "metadata": "{}",
        "is_staff": "on",
        "is_superuser": "on",
        "groups": ["1"],
        "user_permissions": ["1"],
        "account": other.pk,
    }
    response = client.post(f"/admin/users/user/{member.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    member.refresh_from_db()
    assert member.name == "Renamed"
    assert (member.account_id, member.is_superuser) == (admin.account_id, False)


def test_every_add_form_puts_the_new_object_in_the_users_own_account(private_targets):
    admin = AdminUserFactory()
    other = AccountFactory().pk
    client = admin_session(admin)
    posts = [
        ("/admin/channels/team/add/", {"name": "Mine", "account": other}),
        (
            "/admin/channels/channel/add/",
            {"title": "Mine", "platform": "blog", "image_width": 1200, "account": other},
        ),
        ("/admin/posts/tag/add/", {"name": "mine", "account": other}),
        (
            "/admin/webhooks/webhookendpoint/add/",
            {"url": "http://127.0.0.1:9/hook", "enabled": "on", "account": other},
        ),
        (
            "/admin/accounts/apikey/add/",
            {"name": "mine", "user": admin.pk, "scopes": [Scope.READ_POSTS], "account": other},
        ),
        (
            "/admin/users/user/add/",
            {"email": "new@example.com", "name": "New", "role": Role.VIEWER, "metadata": "{}", "account": other},
        ),
    ]
    for path, data in posts:
        response = client.post(path, data)
        # A new API key is shown on the answer to the POST that created it; the others redirect.
        key_shown = "admin/accounts/apikey/created.html" in [t.name for t in response.templates]
        assert response.status_code == 302 or key_shown, (path, response.context["adminform"].form.errors)
    for model in (Team, Channel, Tag, WebhookEndpoint, ApiKey):
        assert set(model.objects.values_list("account_id", flat=True)) == {admin.account_id}, model
    assert User.objects.get(email="new@example.com").account_id == admin.account_id


def test_an_add_form_offers_no_account_to_pick():
    page = admin_session(AdminUserFactory()).get("/admin/webhooks/webhookendpoint/add/")
    assert "account" not in page.context["adminform"].form.fields


def test_a_user_of_another_account_cannot_be_the_owner_of_a_new_key():
    admin = AdminUserFactory()
    stranger = AdminUserFactory()
    response = admin_session(admin).post(
        "/admin/accounts/apikey/add/", {"name": "theirs", "user": stranger.pk, "scopes": [Scope.READ_POSTS]}
    )
    assert response.status_code == 200
    assert "user" in response.context["adminform"].form.errors
    assert not ApiKey.objects.exists()


def test_role_permission_and_status_changes_take_effect_at_the_next_request():
    admin = AdminUserFactory()
    client = admin_session(admin)
    assert client.get("/admin/webhooks/webhookendpoint/").status_code == 200
    User.objects.filter(pk=admin.pk).update(permissions=["articles.read"])
    assert client.get("/admin/webhooks/webhookendpoint/").status_code == 403
    User.objects.filter(pk=admin.pk).update(role=Role.EDITOR, permissions=default_permissions_for(Role.EDITOR))
    assert client.get("/admin/webhooks/webhookendpoint/").status_code == 403
    assert client.get("/admin/posts/post/").status_code == 200
    User.objects.filter(pk=admin.pk).update(role=Role.VIEWER)
    page = client.get("/admin/posts/post/")
    assert page.status_code == 403
    assert "viewer" in page.content.decode()
    User.objects.filter(pk=admin.pk).update(role=Role.ADMIN, status=Status.SUSPENDED)
    response = client.get("/admin/posts/post/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_a_viewer_signing_in_is_told_why_the_admin_is_closed():
    viewer = UserFactory(role=Role.VIEWER)
    viewer.set_password(PASSWORD)
    viewer.save()
    response = Client().post("/admin/login/", {"username": viewer.email, "password": PASSWORD})
    assert response.status_code == 200
    assert "only the account" in response.content.decode()


def test_a_signed_in_viewer_gets_a_no_access_page_and_can_sign_out():
    client = admin_session(UserFactory(role=Role.VIEWER))
    page = client.get("/admin/")
    assert page.status_code == 403
    assert "No access" in page.content.decode()
    assert client.post("/admin/logout/").status_code == 200
    assert "_auth_user_id" not in client.session


def test_the_index_tells_each_kind_of_user_what_their_area_is():
    admin = AdminUserFactory()
    assert f"Settings of {admin.account.name}" in admin_session(admin).get("/admin/").content.decode()
    editor = UserFactory(role=Role.EDITOR)
    assert f"Content of {editor.account.name}" in admin_session(editor).get("/admin/").content.decode()
    assert "Operator console" in admin_session(OperatorFactory()).get("/admin/").content.decode()


# --- SSO cannot climb ---


def test_sso_tokens_are_refused_for_the_operator():
    operator = OperatorFactory()
    key = ApiKeyFactory(scopes=[Scope.WRITE_SSO])
    response = Client().post(
        "/v1/sso_tokens",
        {"user_id": str(operator.pk)},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key.raw}",
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("role", "admin_status"), [(Role.ADMIN, 200), (Role.EDITOR, 403), (Role.VIEWER, 403)])
def test_an_sso_sign_in_gives_what_the_users_own_sign_in_gives(role, admin_status):
    user = UserFactory(role=role)
    token = SsoTokenFactory(user=user)
    client = Client()
    assert client.get(f"/sso/login?token={token.raw}").status_code in (302, 303)
    assert client.get("/admin/webhooks/webhookendpoint/").status_code == admin_status
    password_client = admin_session(user)
    assert password_client.get("/admin/webhooks/webhookendpoint/").status_code == admin_status
