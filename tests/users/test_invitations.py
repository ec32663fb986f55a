import re
from datetime import timedelta

import pytest
from django.core import signing
from django.core.mail.backends.base import BaseEmailBackend

from apps.users.models import Status, User
from apps.users.services import user_invite

pytestmark = pytest.mark.django_db

PASSWORD = "a-Long-unusual-passphrase-42"


class RefusingBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        raise ConnectionRefusedError("mail server down")


@pytest.fixture
def admin(admin_key, client_for):
    return client_for(admin_key)


def invite(admin, email="invitee@example.com", name="Ivy Invitee") -> User:
    response = admin.post("/v1/users", {"email": email, "name": name}, format="json")
    assert response.status_code == 201, response.content
    return User.objects.get(pk=response.json()["id"])


def link_in(message) -> str:
    return re.search(r"http://testserver/account/invitation\?token=\S+", message.body).group(0)


def path_of(link: str) -> str:
    return link.removeprefix("http://testserver")


def accept(client, link: str, password: str = PASSWORD, again: str | None = None):
    token = link.split("token=", 1)[1]
    return client.post(path_of(link), {"token": token, "new_password1": password, "new_password2": again or password})


@pytest.fixture(autouse=True)
def _site_url(settings):
    settings.SITE_URL = "http://testserver"


def test_creating_a_user_emails_an_invitation_with_a_one_time_link(admin, admin_key, mailoutbox):
    user = invite(admin)
    [message] = mailoutbox
    assert message.to == ["invitee@example.com"]
    assert admin_key.account.name in message.subject
    assert "Ivy Invitee" in message.body
    assert link_in(message)
    assert user.status == Status.INVITED
    assert user.invitation_sent_at is not None


def test_the_invitation_page_shows_a_password_form(admin, client, mailoutbox):
    invite(admin)
    response = client.get(path_of(link_in(mailoutbox[0])))
    assert response.status_code == 200
    html = response.content.decode()
    assert "invitee@example.com" in html
    assert 'name="new_password1"' in html
    assert response["Cache-Control"].startswith("max-age=0")


def test_accepting_sets_the_password_and_activates_the_user(admin, client, mailoutbox):
    user = invite(admin)
    response = accept(client, link_in(mailoutbox[0]))
    assert response.status_code == 200
    assert "Your account is active" in response.content.decode()
    user.refresh_from_db()
    assert user.status == Status.ACTIVE
    assert user.check_password(PASSWORD)
    assert client.login(username="invitee@example.com", password=PASSWORD)


def test_an_invitation_link_works_once(admin, client, mailoutbox):
    user = invite(admin)
    link = link_in(mailoutbox[0])
    assert accept(client, link).status_code == 200
    second = accept(client, link, password="another-Unusual-passphrase-7")
    assert second.status_code == 404
    assert "cannot be used" in second.content.decode()
    assert client.get(path_of(link)).status_code == 404
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_sending_the_invitation_again_replaces_the_earlier_link(admin, client, mailoutbox):
    user = invite(admin)
    user_invite(user=user)
    assert len(mailoutbox) == 2
    old, new = link_in(mailoutbox[0]), link_in(mailoutbox[1])
    assert old != new
    assert accept(client, old).status_code == 404
    assert accept(client, new).status_code == 200


def test_an_expired_link_does_not_work(admin, client, mailoutbox, monkeypatch, settings):
    invite(admin)
    link = link_in(mailoutbox[0])
    later = signing.time.time() + timedelta(days=settings.INVITATION_TTL_DAYS, seconds=1).total_seconds()
    monkeypatch.setattr(signing.time, "time", lambda: later)
    assert client.get(path_of(link)).status_code == 404
    assert User.objects.get(email="invitee@example.com").status == Status.INVITED


@pytest.mark.parametrize("token", ["", "garbage", "eyJ1c2VyIjoxfQ:1abc:forged"])
def test_a_bad_token_shows_the_error_page(client, token):
    response = client.get(f"/account/invitation?token={token}")
    assert response.status_code == 404
    assert "cannot be used" in response.content.decode()


def test_mismatched_or_weak_passwords_keep_the_user_invited(admin, client, mailoutbox):
    user = invite(admin)
    link = link_in(mailoutbox[0])
    mismatch = accept(client, link, again="something-else-entirely-9")
    assert mismatch.status_code == 200
    assert "didn\u2019t match" in mismatch.content.decode()
    weak = accept(client, link, password="123")
    assert "too short" in weak.content.decode()
    user.refresh_from_db()
    assert user.status == Status.INVITED
    assert not user.has_usable_password()


def test_an_invited_user_cannot_sign_in_before_accepting(admin, client, mailoutbox):
    user = invite(admin)
    user.set_password(PASSWORD)
    user.save()
    assert not client.login(username=user.email, password=PASSWORD)


def test_when_the_invitation_cannot_be_sent_no_user_is_created(admin, settings):
    settings.EMAIL_BACKEND = "tests.users.test_invitations.RefusingBackend"
    response = admin.post("/v1/users", {"email": "invitee@example.com", "name": "Ivy"}, format="json")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "invitation_not_sent"
    assert not User.objects.filter(email="invitee@example.com").exists()


def test_only_invited_users_can_be_invited_again(admin):
    body = admin.post(
        "/v1/users", {"email": "a@example.com", "name": "A", "send_invitation": False}, format="json"
    ).json()
    with pytest.raises(Exception, match="not invited") as refused:
        user_invite(user=User.objects.get(pk=body["id"]))
    assert refused.value.code == "invalid_status"
