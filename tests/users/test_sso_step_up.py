"""A session started by a single sign-on link is limited: a key that may only make SSO tokens must not
climb, through the admin's session, to keys with every scope, the webhook signing secrets, other
users' roles or the publishing destinations. Each of those pages asks for the person's password
first (a step-up, as GitHub's "sudo mode"); a user with no password gets an e-mailed link to set one."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.cache import cache
from django.test import Client

from apps.core import step_up
from apps.core.errors import Forbidden
from apps.publishing.git.models import GitDestination
from apps.users.credentials import sso_token_create
from apps.users.models import ApiKey, Role, User
from apps.users.services import PASSWORD_LINK_SENT
from tests.factories import (
    AdminUserFactory,
    ApiKeyFactory,
    ChannelFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.publishing.conftest import make_bare_repository
from tests.publishing.test_settings_area import destination_form

pytestmark = pytest.mark.django_db

PASSWORD = "A long and right password 42"
CONFIRM = "/admin/confirm-password/"
KEYS = "/admin/accounts/apikey/"
ENDPOINTS = "/admin/webhooks/webhookendpoint/"
USERS = "/admin/users/user/"
DESTINATIONS = "/admin/publishing_git/gitdestination/"


@pytest.fixture
def admin(db):
    user = AdminUserFactory()
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def sso_only_key(admin):
    """A key of the admin's with nothing but `write:sso`."""
    return ApiKeyFactory(user=admin, scopes=["write:sso"])


def sso_browser(client_for, api_key, user) -> Client:
    """A browser signed in through a link that `api_key` made for `user` over the API."""
    made = client_for(api_key).post("/v1/sso_tokens", {"user_id": str(user.pk)}, format="json")
    assert made.status_code == 201, made.content
    login_url = urlsplit(made.json()["data"]["login_url"])
    browser = Client()
    assert browser.get(f"{login_url.path}?{login_url.query}").status_code == 302
    assert browser.session["_auth_user_id"] == str(user.pk)
    return browser


def asks_for_password(response, back_to: str) -> bool:
    if response.status_code != 302:
        return False
    target = urlsplit(response["Location"])
    return target.path == CONFIRM and parse_qs(target.query)["next"] == [back_to]


def without_password(user):
    """A user who has only ever signed in through SSO; no set-password e-mail remembered for their id
    (ids repeat between tests, the cache outlives them)."""
    user.set_unusable_password()
    user.save()
    cache.delete(PASSWORD_LINK_SENT.format(pk=user.pk))
    return user


def confirm(browser, password: str = PASSWORD, next_url: str = "/admin/"):
    return browser.post(CONFIRM, {"password": password, "next": next_url})


@pytest.fixture
def sensitive(admin, settings, tmp_path):
    """Every page of the four sensitive parts, as (what, method, url, data): the last element of each
    is what the session may do only after the step-up."""
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = True
    settings.GIT_CACHE_DIR = tmp_path / "git-cache"
    account = admin.account
    endpoint = WebhookEndpointFactory(account=account)
    editor = UserFactory(account=account, role=Role.EDITOR)
    channel = ChannelFactory(account=account, platform="git")
    repository = make_bare_repository(tmp_path / "site.git")
    key_form = {
        "account": account.pk,
        "user": admin.pk,
        "name": "everything",
        "scopes": list(
            dict.fromkeys(
                ["read:channels", "read:posts", "read:media", "write:posts", "write:sso", "read:users", "write:users"]
            )
        ),
    }
    role_form = {
        "name": editor.name,
        "role": "admin",
        "status": "active",
        "timezone": "UTC",
        "language": "en",
        "notification_preferences": '{"email": true, "push": false}',
        "metadata": "{}",
    }
    return {
        "endpoint": endpoint,
        "editor": editor,
        "channel": channel,
        "pages": [
            ("list API keys", "get", KEYS, None),
            ("open the new key form", "get", f"{KEYS}add/", None),
            ("create an API key", "post", f"{KEYS}add/", key_form),
            ("see a signing secret", "get", f"{ENDPOINTS}{endpoint.pk}/change/", None),
            ("rotate a secret (button)", "post", f"{ENDPOINTS}{endpoint.pk}/rotate-secret/", {}),
            (
                "rotate a secret (action)",
                "post",
                ENDPOINTS,
                {"action": "rotate_secret", "_selected_action": [endpoint.pk]},
            ),
            ("add a webhook endpoint", "get", f"{ENDPOINTS}add/", None),
            ("open a user's role", "get", f"{USERS}{editor.pk}/change/", None),
            ("change a role", "post", f"{USERS}{editor.pk}/change/", role_form),
            (
                "add a user",
                "post",
                f"{USERS}add/",
                {"account": account.pk, "email": "new@example.com", "role": "admin"},
            ),
            ("suspend a user (action)", "post", USERS, {"action": "suspend_selected", "_selected_action": [editor.pk]}),
            (
                "connect a publishing destination",
                "post",
                f"{DESTINATIONS}add/",
                destination_form(channel, repository_url=str(repository)),
            ),
        ],
    }


def assert_nothing_changed(admin, sensitive, keys_before: int, secret_before: str) -> None:
    assert ApiKey.objects.filter(account=admin.account).count() == keys_before
    sensitive["endpoint"].refresh_from_db()
    assert sensitive["endpoint"].secret == secret_before
    sensitive["editor"].refresh_from_db()
    assert (sensitive["editor"].role, sensitive["editor"].status) == (Role.EDITOR, "active")
    assert not User.objects.filter(email="new@example.com").exists()
    assert not GitDestination.objects.filter(channel=sensitive["channel"]).exists()


def test_an_sso_session_of_a_write_sso_key_reaches_no_sensitive_page_before_the_password(
    client_for, sso_only_key, admin, sensitive
):
    browser = sso_browser(client_for, sso_only_key, admin)
    keys_before, secret_before = ApiKey.objects.filter(account=admin.account).count(), sensitive["endpoint"].secret

    for what, method, url, data in sensitive["pages"]:
        response = getattr(browser, method)(url, data) if data is not None else getattr(browser, method)(url)
        assert asks_for_password(response, url), (what, response.status_code, response.get("Location"))
        assert secret_before not in response.content.decode(), what

    assert_nothing_changed(admin, sensitive, keys_before, secret_before)
    # The rest of the Settings area is open, and says what the password would open.
    index = browser.get("/admin/")
    assert index.status_code == 200 and "Confirm your password" in index.content.decode()
    for listing in (ENDPOINTS, USERS, DESTINATIONS, "/admin/posts/post/", "/admin/accounts/ssotoken/"):
        page = browser.get(listing)
        assert page.status_code == 200, listing
        assert secret_before not in page.content.decode()


def test_after_the_password_each_sensitive_action_works(client_for, sso_only_key, admin, sensitive, mailoutbox):
    browser = sso_browser(client_for, sso_only_key, admin)
    asked = browser.get(f"{KEYS}add/")
    form = browser.get(asked["Location"])
    assert form.status_code == 200 and "Confirm your password" in form.content.decode()

    confirmed = confirm(browser, next_url=f"{KEYS}add/")

    assert confirmed.status_code == 302 and confirmed["Location"] == f"{KEYS}add/"
    secret_before = sensitive["endpoint"].secret
    for what, method, url, data in sensitive["pages"]:
        response = getattr(browser, method)(url, data) if data is not None else getattr(browser, method)(url)
        assert response.status_code in (200, 302), (what, response.status_code)
        assert not asks_for_password(response, url), what
    created = ApiKey.objects.get(account=admin.account, name="everything")
    assert len(created.scopes) == 7
    sensitive["endpoint"].refresh_from_db()
    assert sensitive["endpoint"].secret != secret_before
    endpoint_page = browser.get(f"{ENDPOINTS}{sensitive['endpoint'].pk}/change/")
    assert sensitive["endpoint"].secret in endpoint_page.content.decode()
    sensitive["editor"].refresh_from_db()
    assert sensitive["editor"].status == "suspended" and sensitive["editor"].role == Role.ADMIN
    assert User.objects.filter(email="new@example.com", role=Role.ADMIN).exists()
    assert GitDestination.objects.filter(channel=sensitive["channel"]).exists()


def test_a_wrong_password_raises_nothing_and_is_counted_by_the_sign_in_throttle(
    client_for, sso_only_key, admin, settings
):
    settings.ADMIN_LOGIN_FAILURE_LIMIT = 2
    browser = sso_browser(client_for, sso_only_key, admin)

    first = confirm(browser, "not it")
    assert first.status_code == 200 and "That is not your password." in first.content.decode()
    assert asks_for_password(browser.get(KEYS), KEYS)
    confirm(browser, "not it either")
    # The address has used its failed sign-ins up: even the right password is refused for now.
    assert confirm(browser).status_code == 429
    assert asks_for_password(browser.get(KEYS), KEYS)


def test_the_confirmation_lasts_step_up_ttl_seconds(client_for, sso_only_key, admin, settings, monkeypatch):
    settings.STEP_UP_TTL = 600
    now = [1_900_000_000.0]
    monkeypatch.setattr(step_up, "clock", lambda: now[0])
    browser = sso_browser(client_for, sso_only_key, admin)
    confirm(browser)
    now[0] += 599
    assert browser.get(KEYS).status_code == 200
    now[0] += 1
    assert asks_for_password(browser.get(KEYS), KEYS)


def test_a_password_sign_in_is_never_limited_even_in_a_browser_an_sso_link_signed_in(client_for, sso_only_key, admin):
    browser = sso_browser(client_for, sso_only_key, admin)
    assert asks_for_password(browser.get(KEYS), KEYS)
    browser.post("/admin/logout/")
    signed_in = browser.post("/admin/login/?next=/admin/", {"username": admin.email, "password": PASSWORD})
    assert signed_in.status_code == 302
    assert browser.get(KEYS).status_code == 200
    password_browser = Client()
    assert password_browser.post("/account/login/", {"username": admin.email, "password": PASSWORD}).status_code == 302
    assert password_browser.get(KEYS).status_code == 200


def test_the_confirmation_page_sends_only_to_pages_of_this_site(client_for, sso_only_key, admin):
    browser = sso_browser(client_for, sso_only_key, admin)
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        response = confirm(browser, next_url=target)
        assert response.status_code == 302 and response["Location"] == "/admin/", target


def test_a_user_without_a_password_gets_a_link_by_e_mail_and_then_signs_in_with_the_new_password(
    client_for, sso_only_key, admin, mailoutbox
):
    other_admin = without_password(AdminUserFactory(account=admin.account))
    browser = sso_browser(client_for, sso_only_key, other_admin)

    page = browser.get(CONFIRM)
    assert "You have no password yet" in page.content.decode()
    assert 'name="password"' not in page.content.decode()
    assert browser.post(CONFIRM, {"next": KEYS}).status_code == 200
    assert browser.post(CONFIRM, {"next": KEYS}).status_code == 200  # within the interval: no second e-mail
    assert len(mailoutbox) == 1 and mailoutbox[0].to == [other_admin.email]
    [link] = re.findall(r"https?://\S+/account/password/\S+", mailoutbox[0].body)
    assert asks_for_password(browser.get(KEYS), KEYS)  # asking for the link raised nothing

    reader = Client()  # whoever reads the mailbox, in any browser
    form = reader.get(urlsplit(link).path, follow=True)
    assert "Set your password" in form.content.decode()
    new_password = "Chosen by the mailbox's owner 7"
    done = reader.post(
        form.redirect_chain[-1][0], {"new_password1": new_password, "new_password2": new_password}, follow=True
    )
    assert "Your password is set" in done.content.decode()

    # The SSO session ended with the new password; the link works once.
    assert browser.get(KEYS).status_code == 302 and "/admin/login/" in browser.get(KEYS)["Location"]
    assert "This link cannot be used" in Client().get(urlsplit(link).path, follow=True).content.decode()
    signed_in = Client()
    assert signed_in.post("/admin/login/", {"username": other_admin.email, "password": new_password}).status_code == 302
    assert signed_in.get(KEYS).status_code == 200


def test_a_key_makes_links_only_for_users_whose_role_is_not_above_its_owners(client_for, admin):
    editor = UserFactory(account=admin.account, role=Role.EDITOR)
    viewer = UserFactory(account=admin.account, role=Role.VIEWER)
    editor_key = ApiKeyFactory(user=editor, scopes=["write:sso"])
    admin_key = ApiKeyFactory(user=admin, scopes=["write:sso"])

    for key, user, status in [
        (editor_key, admin, 403),
        (editor_key, viewer, 403),
        (editor_key, editor, 201),
        (admin_key, admin, 201),
        (admin_key, editor, 201),
        (admin_key, viewer, 201),
    ]:
        response = client_for(key).post("/v1/sso_tokens", {"user_id": str(user.pk)}, format="json")
        assert response.status_code == status, (key.user.role, user.role, response.content)
    # The rule is the service's, whoever calls it: a key is never turned into a link above its owner.
    with pytest.raises(Forbidden) as refused:
        sso_token_create(account=admin.account, user=admin, api_key=editor_key)
    assert refused.value.code == "admin_required"
    admin.role = Role.EDITOR  # the owner demoted after the key was made
    admin.save()
    other_admin = AdminUserFactory(account=admin.account)
    with pytest.raises(Forbidden):
        sso_token_create(account=admin.account, user=other_admin, api_key=admin_key)


def test_every_admin_that_shows_secrets_or_grants_access_asks_for_the_password():
    """A model admin added later that holds credentials must say so too (its `step_up`)."""
    from django.contrib import admin as django_admin

    limited = {
        model._meta.label_lower: model_admin.step_up
        for model, model_admin in django_admin.site._registry.items()
        if getattr(model_admin, "step_up", None)
    }
    assert limited == {
        "accounts.apikey": step_up.StepUp.EVERY_PAGE,
        "webhooks.webhookendpoint": step_up.StepUp.ALL_BUT_THE_LIST,
        "users.user": step_up.StepUp.ALL_BUT_THE_LIST,
        "publishing_git.gitdestination": step_up.StepUp.ALL_BUT_THE_LIST,
        "publishing_linkedin.linkedinconnection": step_up.StepUp.ALL_BUT_THE_LIST,
        "publishing_bluesky.blueskyconnection": step_up.StepUp.ALL_BUT_THE_LIST,
        "publishing_mastodon.mastodonconnection": step_up.StepUp.ALL_BUT_THE_LIST,
        # Readers' addresses are personal data: every page of the subscribers and the suppressions (whose
        # details quote mail servers) names them, an edition's own page its failed and uncertain ones.
        "publishing_newsletter.subscriber": step_up.StepUp.EVERY_PAGE,
        "publishing_newsletter.suppression": step_up.StepUp.EVERY_PAGE,
        "publishing_newsletter.edition": step_up.StepUp.ALL_BUT_THE_LIST,
        # A webhook delivery's page shows its event's body: a subscriber event's names the reader.
        "webhooks.delivery": step_up.StepUp.ALL_BUT_THE_LIST,
    }
    holding_secrets = {
        model._meta.label_lower
        for model in django_admin.site._registry
        if any(field.name.endswith(("_encrypted", "secret", "key_hash")) for field in model._meta.fields)
    }
    assert holding_secrets <= set(limited)


def test_a_set_password_e_mail_the_mail_server_refused_can_be_asked_for_again_at_once(
    client_for, sso_only_key, admin, mailoutbox, monkeypatch
):
    from apps.users import services

    no_password = without_password(AdminUserFactory(account=admin.account))
    browser = sso_browser(client_for, sso_only_key, no_password)
    real_send_mail = services.send_mail

    def refused(*args, **kwargs):
        raise ConnectionRefusedError("mail server down")

    monkeypatch.setattr(services, "send_mail", refused)
    page = browser.post(CONFIRM, {"next": KEYS})
    assert "The e-mail could not be sent. Try again later." in page.content.decode()
    monkeypatch.setattr(services, "send_mail", real_send_mail)
    assert "The link is on its way" in browser.post(CONFIRM, {"next": KEYS}).content.decode()
    assert len(mailoutbox) == 1 and mailoutbox[0].to == [no_password.email]
