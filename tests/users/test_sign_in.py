import pytest

from apps.users.models import Role, Status
from tests.factories import AdminUserFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a-Long-unusual-passphrase-42"


def with_password(user):
    user.set_password(PASSWORD)
    user.save()
    return user


def signed_in_as(client) -> int | None:
    user_id = client.session.get("_auth_user_id")
    return int(user_id) if user_id else None


def test_admin_site_sign_in_sends_user_login_once(client, emitted):
    staff = with_password(AdminUserFactory())
    response = client.post("/admin/login/?next=/admin/", {"username": staff.email, "password": PASSWORD})
    assert response.status_code == 302
    [body] = emitted("user.login")
    assert body["data"]["via"] == "admin"
    assert body["data"]["user"]["id"] == str(staff.pk)
    assert body["data"]["user"]["last_login"] is not None
    assert body["account"]["id"] == staff.account_id
    staff.refresh_from_db()
    assert staff.last_login is not None


def test_a_failed_admin_site_sign_in_sends_nothing(client, emitted):
    staff = with_password(AdminUserFactory())
    response = client.post("/admin/login/", {"username": staff.email, "password": "wrong"})
    assert response.status_code == 200
    assert signed_in_as(client) is None
    assert emitted("user.login") == []


def test_an_operator_without_organization_signs_in_without_an_event(client, emitted, django_user_model):
    operator = django_user_model.objects.create_superuser("operator@example.com", PASSWORD)
    assert client.post("/admin/login/", {"username": operator.email, "password": PASSWORD}).status_code == 302
    assert signed_in_as(client) == operator.pk
    assert emitted("user.login") == []


def test_sign_in_page_signs_in_and_sends_user_login(client, emitted):
    user = with_password(UserFactory(role=Role.EDITOR))
    response = client.post("/account/login/", {"username": user.email, "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/account/"
    assert signed_in_as(client) == user.pk
    [body] = emitted("user.login")
    assert body["data"]["via"] == "password"
    home = client.get("/account/")
    assert home.status_code == 200
    assert user.email in home.content.decode()


@pytest.mark.parametrize("status", [Status.INACTIVE, Status.SUSPENDED, Status.INVITED])
def test_users_who_are_not_active_cannot_sign_in(client, emitted, status):
    user = with_password(UserFactory(status=status))
    response = client.post("/account/login/", {"username": user.email, "password": PASSWORD})
    assert response.status_code == 200
    assert signed_in_as(client) is None
    assert emitted("user.login") == []


def test_a_suspended_users_session_stops_working(client):
    user = with_password(UserFactory())
    client.post("/account/login/", {"username": user.email, "password": PASSWORD})
    assert client.get("/account/").status_code == 200
    user.status = Status.SUSPENDED
    user.save()
    assert client.get("/account/")["Location"].startswith("/account/login/")


def test_the_account_page_needs_a_session(client):
    response = client.get("/account/")
    assert response.status_code == 302
    assert response["Location"] == "/account/login/?next=/account/"


def test_sign_out(client):
    user = with_password(UserFactory())
    client.post("/account/login/", {"username": user.email, "password": PASSWORD})
    assert client.post("/account/logout/").status_code == 302
    assert signed_in_as(client) is None
