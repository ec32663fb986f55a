"""Connecting a Mastodon channel in the Settings area: the instance's address asked (and checked as
every outside host is), the service's app registered there once, then OAuth 2.0's authorization code
flow, against the local fake of Mastodon (tests/publishing/mastodon_fake.py). The test client plays the
admin's browser; the instance's consent page is asked with requests, as the browser would follow the
redirect, and its answer is handed to the callback as the browser would."""

from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from apps.core import crypto
from apps.posts.services import post_create
from apps.publishing.mastodon.admin import SESSION_KEY
from apps.publishing.mastodon.models import MastodonApp, MastodonConnection
from apps.publishing.mastodon.services import connection_options_set
from apps.users.models import Role
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    ChannelFactory,
    OperatorFactory,
    UserFactory,
)
from tests.publishing.mastodon_fake import SCOPES
from tests.publishing.test_settings_area import messages_of, text_of
from tests.users.test_sso_step_up import PASSWORD, asks_for_password, sso_browser

pytestmark = pytest.mark.django_db

CONNECTIONS = "/admin/publishing_mastodon/mastodonconnection/"
CALLBACK = f"{CONNECTIONS}callback/"


def connect_url(channel) -> str:
    return f"{CONNECTIONS}connect/{channel.pk}/"


def channel_page(channel) -> str:
    return f"/admin/channels/channel/{channel.pk}/change/"


def connection_page(connection) -> str:
    return f"{CONNECTIONS}{connection.pk}/change/"


def consent(location: str) -> str:
    """The instance's consent page at `location` (the fake agrees at once): the address it sends the
    browser back to, as this service's path and query."""
    answer = requests.get(location, allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["Location"])
    return f"{back.path}?{back.query}"


def authorize(browser, channel, instance: str) -> str:
    """Type the instance's address and agree there: the callback address the instance answers with."""
    started = browser.post(connect_url(channel), {"instance": instance})
    assert started.status_code == 302, started.content.decode()
    return consent(started["Location"])


@pytest.fixture
def account():
    return AccountFactory()


@pytest.fixture
def admin(account):
    user = AdminUserFactory(account=account)
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def browser(admin):
    return admin_session(admin)


@pytest.fixture
def channel(account, mastodon):
    return ChannelFactory(account=account, platform="mastodon", title="Our toots")


@pytest.fixture
def connected(browser, channel, mastodon) -> MastodonConnection:
    browser.get(authorize(browser, channel, mastodon.url))
    return MastodonConnection.objects.get(channel=channel)


# --- Connect --------------------------------------------------------------------------------------


def test_connect_asks_the_instance_registers_the_app_there_and_sends_the_admin_to_its_consent_page(
    browser, channel, mastodon, settings
):
    assert "Not connected: Connect Mastodon" in text_of(browser.get(channel_page(channel)))
    form = browser.get(connect_url(channel))
    assert "Your Mastodon instance" in text_of(form)
    # Its answer leads to the instance, which the pages' form-action 'self' alone would stop.
    assert "form-action 'self' https: http:;" in form["Content-Security-Policy"]

    started = browser.post(connect_url(channel), {"instance": mastodon.url + "/"})

    [registration] = mastodon.calls("POST", "/api/v1/apps")
    callback = f"{settings.SITE_URL}{CALLBACK}"
    assert registration.body == {
        "client_name": settings.MASTODON_CLIENT_NAME,
        "redirect_uris": callback,
        "scopes": SCOPES,
        "website": settings.SITE_URL,
    }
    app = MastodonApp.objects.get(base_url=mastodon.url)
    assert app.client_secret() == mastodon.apps[app.client_id]["client_secret"]
    assert app.client_secret() not in app.client_secret_encrypted
    location = urlsplit(started["Location"])
    query = parse_qs(location.query)
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{mastodon.url}/oauth/authorize"
    assert query["client_id"] == [app.client_id] and query["redirect_uri"] == [callback]
    assert query["scope"] == [SCOPES] and query["response_type"] == ["code"]
    assert set(browser.session[SESSION_KEY]) == set(query["state"])


def test_the_callback_stores_the_accounts_access_encrypted_and_shows_who_is_connected(browser, channel, mastodon):
    response = browser.get(authorize(browser, channel, mastodon.url), follow=True)

    connection = MastodonConnection.objects.get(channel=channel)
    assert messages_of(response) == ["Mastodon connected: @ada@127.0.0.1. Its statuses are public; change it below."]
    assert response.redirect_chain[-1][0] == connection_page(connection)
    assert (connection.account_id, connection.display_name, connection.base_url) == (
        "109",
        "Ada Lovelace",
        mastodon.url,
    )
    assert connection.access_token() not in connection.access_token_encrypted
    [exchange] = mastodon.token_requests
    assert exchange["grant_type"] == "authorization_code" and exchange["redirect_uri"].endswith(CALLBACK)
    assert "Mastodon (public statuses), posting as @ada@127.0.0.1" in text_of(browser.get(channel_page(channel)))


def test_a_second_channel_on_the_same_instance_uses_the_app_registered_there(browser, account, channel, mastodon):
    other = ChannelFactory(account=account, platform="mastodon", title="Other")

    browser.get(authorize(browser, channel, mastodon.url))
    browser.get(authorize(browser, other, mastodon.url))

    assert len(mastodon.calls("POST", "/api/v1/apps")) == 1
    assert MastodonConnection.objects.filter(app__base_url=mastodon.url).count() == 2


def test_the_app_is_registered_again_when_the_services_address_changes(browser, channel, mastodon, settings):
    browser.get(authorize(browser, channel, mastodon.url))
    settings.SITE_URL = "https://publish.example.org"

    started = browser.post(connect_url(channel), {"instance": mastodon.url})

    assert len(mastodon.calls("POST", "/api/v1/apps")) == 2
    assert parse_qs(urlsplit(started["Location"]).query)["redirect_uri"] == [f"https://publish.example.org{CALLBACK}"]
    assert MastodonApp.objects.get().redirect_uri == f"https://publish.example.org{CALLBACK}"


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("", "This field is required."),
        ("https://mastodon.social/@ada", "Type the instance's address only, without a path"),
        ("ftp://mastodon.social", "An instance's address is https://host"),
        ("http://mastodon.social", "An instance's address is https://host"),
        ("not a valid thing", "is not an instance's address"),
        ("mastodon.social:99999", "is not an instance's address"),
    ],
)
def test_an_address_that_is_no_instances_is_refused_with_a_form_error(
    browser, channel, mastodon, settings, typed, said
):
    settings.MASTODON_ALLOW_LOCAL_INSTANCES = False

    response = browser.post(connect_url(channel), {"instance": typed})

    assert response.status_code == 200 and said in text_of(response)
    assert mastodon.calls() == []
    assert "form-action 'self' https:;" in response["Content-Security-Policy"]  # no http: then


def test_an_instance_resolving_to_a_private_address_is_refused_when_the_setting_is_off(
    browser, channel, mastodon, settings
):
    settings.MASTODON_ALLOW_LOCAL_INSTANCES = False
    port = urlsplit(mastodon.url).port

    for typed in (f"https://127.0.0.1:{port}", f"localhost:{port}", "10.0.0.8"):
        response = browser.post(connect_url(channel), {"instance": typed})
        page = text_of(response)
        assert (
            "This instance cannot be connected: The host resolves to an address that is not publicly routable" in page
        )

    assert mastodon.calls() == [] and not MastodonApp.objects.exists()


def test_a_forged_or_replayed_state_is_refused_and_nothing_is_stored(browser, channel, mastodon):
    callback = authorize(browser, channel, mastodon.url)
    code = parse_qs(urlsplit(callback).query)["code"][0]

    forged = browser.get(CALLBACK, {"code": code, "state": "forged"}, follow=True)
    assert "belongs to no connection started in this session" in " ".join(messages_of(forged))
    assert not MastodonConnection.objects.filter(channel=channel).exists() and mastodon.token_requests == []

    browser.get(callback)
    replayed = browser.get(callback, follow=True)
    assert "belongs to no connection started in this session" in " ".join(messages_of(replayed))
    assert len(mastodon.token_requests) == 1


def test_an_account_that_denies_access_is_told_so_and_nothing_is_stored(browser, channel, mastodon):
    mastodon.deny_next_authorization = True

    response = browser.get(authorize(browser, channel, mastodon.url), follow=True)

    assert response.redirect_chain[-1][0] == channel_page(channel)
    [message] = messages_of(response)
    assert message.startswith("Mastodon did not grant access: The resource owner or authorization server denied")
    assert not MastodonConnection.objects.filter(channel=channel).exists()


# --- Who may connect ------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["editor", "admin of another account", "operator"])
def test_no_one_but_an_admin_of_the_channels_account_may_connect_it(who, connected, mastodon):
    user = {
        "editor": lambda: UserFactory(account=connected.channel.account, role=Role.EDITOR),
        "admin of another account": lambda: AdminUserFactory(),
        # The operator's console shows every connection but connects none: the access is the account's.
        "operator": lambda: OperatorFactory(),
    }[who]()
    someone = admin_session(user)
    calls = len(mastodon.calls())

    assert someone.post(connect_url(connected.channel), {"instance": mastodon.url}).status_code in (403, 404)
    if who != "operator":
        assert someone.post(f"{CONNECTIONS}{connected.pk}/disconnect/").status_code in (302, 403, 404)
        assert MastodonConnection.objects.filter(pk=connected.pk).exists()
    assert len(mastodon.calls()) == calls and SESSION_KEY not in someone.session


def test_an_sso_session_confirms_its_password_before_connecting_disconnecting_or_seeing_the_connection(
    client_for, admin, connected, mastodon
):
    sso = sso_browser(client_for, ApiKeyFactory(user=admin, scopes=["write:sso"]), admin)
    calls = len(mastodon.calls())

    for method, url in (
        ("get", connect_url(connected.channel)),
        ("post", connect_url(connected.channel)),
        ("get", connection_page(connected)),
        ("post", f"{CONNECTIONS}{connected.pk}/disconnect/"),
        ("post", f"{CONNECTIONS}{connected.pk}/test-connection/"),
    ):
        assert asks_for_password(getattr(sso, method)(url), url), (method, url)
    assert len(mastodon.calls()) == calls
    assert MastodonConnection.objects.filter(pk=connected.pk).exists()

    sso.post("/admin/confirm-password/", {"password": PASSWORD, "next": "/admin/"})
    started = sso.post(connect_url(connected.channel), {"instance": mastodon.url})
    assert started["Location"].startswith(f"{mastodon.url}/oauth/authorize?")


# --- The connection's page --------------------------------------------------------------------------


def test_visibility_and_language_are_edited_on_the_connections_page_and_a_bad_language_is_refused(browser, connected):
    form = {"visibility": "private", "language": "JA"}
    browser.post(connection_page(connected), form)
    connected.refresh_from_db()
    assert (connected.visibility, connected.language) == ("private", "ja")

    refused = browser.post(connection_page(connected), {"visibility": "public", "language": "xx"})

    assert "'xx' is no ISO 639-1 language code" in text_of(refused)
    connected.refresh_from_db()
    assert (connected.visibility, connected.language) == ("private", "ja")


def test_reconnect_keeps_the_visibility_and_language(browser, connected, mastodon):
    connection_options_set(connection=connected, visibility="unlisted", language="fr")
    page = browser.get(connection_page(connected)).content.decode()
    assert f'<a href="{connect_url(connected.channel)}">Reconnect Mastodon</a>' in page
    # The connect page offers the instance the channel is on.
    assert f'value="{mastodon.url}"' in browser.get(connect_url(connected.channel)).content.decode()

    browser.get(authorize(browser, connected.channel, mastodon.url))

    reconnected = MastodonConnection.objects.get(channel=connected.channel)
    assert reconnected.pk == connected.pk and (reconnected.visibility, reconnected.language) == ("unlisted", "fr")
    assert reconnected.access_token() != connected.access_token()


def test_disconnect_deletes_the_connection_and_the_channel_page_offers_connect_again(browser, connected):
    assert browser.get(f"{CONNECTIONS}{connected.pk}/disconnect/").status_code == 405

    response = browser.post(f"{CONNECTIONS}{connected.pk}/disconnect/", follow=True)

    assert not MastodonConnection.objects.filter(pk=connected.pk).exists()
    assert messages_of(response)[-1].startswith("Mastodon disconnected: the channel's posts are not published")
    assert "Not connected: Connect Mastodon" in text_of(response)


def test_test_connection_says_whom_the_instance_knows_the_access_as_and_a_revoked_one_asks_for_a_reconnect(
    browser, connected, mastodon
):
    said = messages_of(browser.post(f"{CONNECTIONS}{connected.pk}/test-connection/", follow=True))[-1]
    assert said.startswith(f"Connected to {mastodon.url} as Ada Lovelace (@ada@127.0.0.1); its statuses are public")

    mastodon.revoke(connected.access_token())
    response = browser.post(f"{CONNECTIONS}{connected.pk}/test-connection/", follow=True)

    assert f"{mastodon.url} refused: The access token was revoked" in messages_of(response)[-1]
    assert "Reconnect Mastodon:" in text_of(response)
    assert "Reconnect Mastodon:" in text_of(browser.get(channel_page(connected.channel)))


def test_no_page_ever_shows_the_token_or_the_apps_secret(browser, connected):
    secrets = [
        connected.access_token(),
        connected.access_token_encrypted,
        connected.app.client_secret(),
        connected.app.client_secret_encrypted,
    ]
    assert crypto.decrypt(connected.access_token_encrypted) == secrets[0]
    pages = [
        browser.get(connection_page(connected)),
        browser.get(CONNECTIONS),
        browser.get(channel_page(connected.channel)),
        browser.post(f"{CONNECTIONS}{connected.pk}/test-connection/", follow=True),
    ]
    for page in pages:
        assert page.status_code == 200
        assert not [secret for secret in secrets if secret in page.content.decode()]


# --- The post's preview -----------------------------------------------------------------------------


def test_a_posts_page_shows_the_status_and_its_length_as_mastodon_counts_it_against_the_instances_limit(
    browser, connected
):
    MastodonConnection.objects.filter(pk=connected.pk).update(max_characters=1000)
    link = "https://example.com/" + "x" * 100
    post = post_create(channel=connected.channel, title="Hi 👋🏽", body=f"Read {link} now.")

    page = text_of(browser.get(f"/admin/posts/post/{post.pk}/change/"))

    assert f"As it will be posted: Hi 👋🏽 Read {link} now." in page
    # "Hi 👋🏽" 4, the blank line 2, "Read " 5, the link 23, " now." 5.
    assert "39 of 1,000 characters." in page
