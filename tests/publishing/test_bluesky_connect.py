"""Connecting a Bluesky channel: the account's server found from the handle (resolveHandle, then the
DID's document in the directory) or given, every address through the address guard, the app
password checked by signing in and stored encrypted; and the Settings area's connect form, against
the local fakes (tests/publishing/bluesky_fake.py)."""

import pytest

from apps.core import crypto
from apps.core.errors import DomainError, InvalidInput
from apps.publishing.bluesky.models import BlueskyConnection
from apps.publishing.bluesky.services import connection_save
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory, ApiKeyFactory, ChannelFactory
from tests.publishing.bluesky_fake import APP_PASSWORD, DID, HANDLE
from tests.publishing.test_settings_area import messages_of, text_of
from tests.users.test_sso_step_up import asks_for_password, sso_browser

pytestmark = pytest.mark.django_db

CONNECTIONS = "/admin/publishing_bluesky/blueskyconnection/"


@pytest.fixture
def channel():
    return ChannelFactory(platform="bluesky", title="Social")


def test_the_server_is_found_from_the_handle_through_the_directory(bluesky, channel):
    connection = connection_save(channel=channel, handle="@Ada.Test", app_password=APP_PASSWORD, connected_by="tests")

    assert (connection.handle, connection.did, connection.pds_url) == (HANDLE, DID, bluesky.url)
    [resolve] = bluesky.directory.calls("GET", "/xrpc/com.atproto.identity.resolveHandle")
    assert resolve.query == {"handle": HANDLE}
    assert len(bluesky.directory.calls("GET", f"/{DID}")) == 1
    [sign_in] = bluesky.calls("POST", "/xrpc/com.atproto.server.createSession")
    assert sign_in.body == {"identifier": DID, "password": APP_PASSWORD}
    stored = BlueskyConnection.objects.get(channel=channel)
    assert APP_PASSWORD not in stored.app_password_encrypted and crypto.decrypt(stored.app_password_encrypted) == (
        APP_PASSWORD
    )


def test_a_server_given_by_the_person_is_used_without_the_directory(bluesky, channel):
    connection = connection_save(
        channel=channel, handle=HANDLE, app_password=APP_PASSWORD, server=bluesky.url + "/", connected_by="tests"
    )

    assert (connection.did, connection.pds_url) == (DID, bluesky.url)
    assert bluesky.directory.requests == []


def test_a_handle_the_dids_document_does_not_claim_is_refused(bluesky, channel):
    bluesky.directory.handles["mallory.test"] = DID

    with pytest.raises(InvalidInput, match=r"does not claim the handle @mallory\.test"):
        connection_save(channel=channel, handle="mallory.test", app_password=APP_PASSWORD, connected_by="tests")
    assert bluesky.requests == []


def test_private_addresses_are_refused_when_local_servers_are_not_allowed(bluesky, channel, settings):
    settings.BLUESKY_ALLOW_LOCAL_SERVERS = False

    with pytest.raises(DomainError, match="not allowed") as refused:
        connection_save(channel=channel, handle=HANDLE, app_password=APP_PASSWORD, connected_by="tests")
    assert "127.0.0.1" in refused.value.message
    with pytest.raises(InvalidInput, match="https://"):
        connection_save(
            channel=channel, handle=HANDLE, app_password=APP_PASSWORD, server=bluesky.url, connected_by="tests"
        )
    assert bluesky.directory.requests == [] and bluesky.requests == []
    assert not BlueskyConnection.objects.exists()


def test_a_wrong_app_password_is_refused_in_blueskys_words_and_the_accounts_own_password_never_sent(bluesky, channel):
    with pytest.raises(DomainError, match="AuthenticationRequired: Invalid identifier or password"):
        connection_save(channel=channel, handle=HANDLE, app_password="zzzz-zzzz-zzzz-zzzz", connected_by="tests")
    with pytest.raises(InvalidInput, match="app password"):
        connection_save(channel=channel, handle=HANDLE, app_password="hunter2!", connected_by="tests")
    assert len(bluesky.calls("POST", "/xrpc/com.atproto.server.createSession")) == 1
    assert not BlueskyConnection.objects.exists()


def test_only_bluesky_channels_connect(bluesky):
    with pytest.raises(DomainError, match="Only Bluesky channels"):
        connection_save(
            channel=ChannelFactory(platform="git"), handle=HANDLE, app_password=APP_PASSWORD, connected_by="tests"
        )


# --- The Settings area --------------------------------------------------------------------------


@pytest.fixture
def browser(channel):
    return admin_session(AdminUserFactory(account=channel.account))


def test_the_channels_page_offers_connect_and_the_form_connects_without_showing_the_password(bluesky, channel, browser):
    page = browser.get(f"/admin/channels/channel/{channel.pk}/change/")
    assert "Not connected: Connect Bluesky" in text_of(page)

    form = browser.get(f"{CONNECTIONS}connect/{channel.pk}/")
    assert form.status_code == 200 and 'type="password"' in form.content.decode()
    done = browser.post(
        f"{CONNECTIONS}connect/{channel.pk}/", {"handle": HANDLE, "app_password": APP_PASSWORD}, follow=True
    )

    connection = BlueskyConnection.objects.get(channel=channel)
    assert done.redirect_chain[-1][0] == f"{CONNECTIONS}{connection.pk}/change/"
    assert messages_of(done) == [f"Bluesky connected: posts appear as @{HANDLE}."]
    assert APP_PASSWORD not in done.content.decode()
    assert connection.connected_by.endswith("(Settings area)")
    page = browser.get(f"/admin/channels/channel/{channel.pk}/change/")
    assert f"Bluesky, posting as @{HANDLE}" in text_of(page)


def test_a_refused_app_password_is_shown_on_the_form_and_not_put_back_into_it(bluesky, channel, browser):
    answer = browser.post(
        f"{CONNECTIONS}connect/{channel.pk}/", {"handle": HANDLE, "app_password": "zzzz-zzzz-zzzz-zzzz"}
    )

    assert answer.status_code == 200
    assert "Invalid identifier or password" in text_of(answer)
    assert "zzzz-zzzz-zzzz-zzzz" not in answer.content.decode()
    assert not BlueskyConnection.objects.exists()


def test_test_connection_and_disconnect_from_the_connections_page(bluesky, bluesky_channel):
    browser = admin_session(AdminUserFactory(account=bluesky_channel.account))
    connection = BlueskyConnection.objects.get(channel=bluesky_channel)

    tested = browser.post(f"{CONNECTIONS}{connection.pk}/test-connection/", follow=True)
    assert messages_of(tested) == [f"Connected to Bluesky as @{HANDLE} ({DID}) on {bluesky.url}."]
    page = browser.get(f"{CONNECTIONS}{connection.pk}/change/").content.decode()
    assert "Reconnect Bluesky" in page and "Disconnect" in page
    assert crypto.decrypt(connection.access_jwt_encrypted) not in page

    browser.post(f"{CONNECTIONS}{connection.pk}/disconnect/")
    assert not BlueskyConnection.objects.exists()


def test_another_accounts_admin_may_not_connect_the_channel(bluesky, channel):
    stranger = admin_session(AdminUserFactory(account=AccountFactory()))

    assert stranger.get(f"{CONNECTIONS}connect/{channel.pk}/").status_code == 404
    assert (
        stranger.post(
            f"{CONNECTIONS}connect/{channel.pk}/", {"handle": HANDLE, "app_password": APP_PASSWORD}
        ).status_code
        == 404
    )
    assert bluesky.requests == []


@pytest.mark.parametrize(
    ("handle", "server", "said"),
    [
        ("ada\x00.test", "", "Null characters are not allowed."),
        ("not a handle", "", "A Bluesky handle looks like"),
        (HANDLE, "ftp://pds.example.com", "A Bluesky server is an https:// address"),
        (HANDLE, "https://user:pw@pds.example.com", "A Bluesky server is an https:// address"),
        ("x" * 300, "", "Ensure this value has at most 253 characters"),
    ],
)
def test_hostile_input_in_the_connect_form_is_a_clear_error_on_the_form(
    bluesky, channel, browser, handle, server, said
):
    answer = browser.post(
        f"{CONNECTIONS}connect/{channel.pk}/", {"handle": handle, "app_password": APP_PASSWORD, "server": server}
    )

    assert answer.status_code == 200
    assert said in text_of(answer)
    assert not BlueskyConnection.objects.exists() and bluesky.requests == []


def test_a_lost_connection_shows_reconnect_bluesky_with_its_reason_on_the_channels_page(bluesky, bluesky_channel):
    from apps.publishing.bluesky.services import connection_lost

    connection_lost(connection=BlueskyConnection.objects.get(channel=bluesky_channel), reason="It was revoked.")
    browser = admin_session(AdminUserFactory(account=bluesky_channel.account))

    page = text_of(browser.get(f"/admin/channels/channel/{bluesky_channel.pk}/change/"))

    assert "Reconnect Bluesky: It was revoked." in page


def test_a_session_from_an_sso_link_confirms_its_password_before_it_connects_or_disconnects(
    bluesky, bluesky_channel, client_for
):
    admin = AdminUserFactory(account=bluesky_channel.account)
    sso = sso_browser(client_for, ApiKeyFactory(user=admin, scopes=["write:sso"]), admin)
    connection = BlueskyConnection.objects.get(channel=bluesky_channel)

    for method, url in (
        ("get", f"{CONNECTIONS}connect/{bluesky_channel.pk}/"),
        ("post", f"{CONNECTIONS}connect/{bluesky_channel.pk}/"),
        ("get", f"{CONNECTIONS}{connection.pk}/change/"),
        ("post", f"{CONNECTIONS}{connection.pk}/disconnect/"),
    ):
        assert asks_for_password(getattr(sso, method)(url), url), (method, url)
    assert BlueskyConnection.objects.filter(pk=connection.pk).exists()
