"""Connecting a LinkedIn channel in the Settings area: OAuth 2.0's authorization code flow from the
channel's page, against the local fake of LinkedIn (tests/publishing/linkedin_fake.py). The test
client plays the admin's browser; LinkedIn's consent page is asked with requests, as the browser
would follow the redirect, and its answer (the redirect back with ?code=&state=) is handed to the
callback as the browser would."""

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.conf import settings as django_settings
from django.utils import timezone

from apps.core import crypto
from apps.posts.editor_status import post_set_status
from apps.posts.models import PublicationStatus
from apps.posts.services import post_create
from apps.publishing.linkedin.admin import SESSION_KEY
from apps.publishing.linkedin.models import LinkedInConnection
from apps.publishing.linkedin.services import connection_author_set, connection_lost, connection_save
from apps.publishing.models import PublicationJob
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
from tests.publishing.test_settings_area import messages_of, text_of
from tests.users.test_sso_step_up import PASSWORD, asks_for_password, sso_browser

pytestmark = pytest.mark.django_db

CONNECTIONS = "/admin/publishing_linkedin/linkedinconnection/"
CALLBACK = f"{CONNECTIONS}callback/"
PAGE = "urn:li:organization:2414183"


def connect_url(channel) -> str:
    return f"{CONNECTIONS}connect/{channel.pk}/"


def channel_page(channel) -> str:
    return f"/admin/channels/channel/{channel.pk}/change/"


def connection_page(connection) -> str:
    return f"{CONNECTIONS}{connection.pk}/change/"


def consent(location: str) -> str:
    """LinkedIn's consent page at `location` (the fake agrees at once): the address it sends the
    browser back to, as this service's path and query."""
    answer = requests.get(location, allow_redirects=False, timeout=10)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["Location"])
    return f"{back.path}?{back.query}"


def authorize(browser, channel) -> str:
    """Press "Connect LinkedIn" and agree on LinkedIn: the callback address LinkedIn answers with."""
    started = browser.get(connect_url(channel))
    assert started.status_code == 302, started.content
    return consent(started["Location"])


def state_of(callback: str) -> str:
    return parse_qs(urlsplit(callback).query)["state"][0]


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
    """The admin's browser, signed in with their password."""
    return admin_session(admin)


@pytest.fixture
def channel(account, linkedin):
    return ChannelFactory(account=account, platform="linkedin", title="Company news")


@pytest.fixture
def connected(channel, linkedin):
    """The channel connected to Ada Lovelace by a token LinkedIn gave with a refresh token."""
    return connection_save(channel=channel, token=linkedin.issue_token(), connected_by="tests")


# --- Connect --------------------------------------------------------------------------------------


def test_connect_sends_the_admin_to_linkedins_authorization_page_with_a_state_kept_in_their_session(
    browser, channel, linkedin, settings
):
    settings.SITE_URL = "https://publishing.example.com"
    settings.LINKEDIN_SCOPES = ["openid", "profile", "w_member_social", "w_organization_social"]

    response = browser.get(connect_url(channel))

    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{linkedin.auth_url}/authorization"
    query = parse_qs(target.query)
    assert query["response_type"] == ["code"]
    assert query["client_id"] == [linkedin.client_id]
    assert query["redirect_uri"] == [f"https://publishing.example.com{CALLBACK}"]
    assert query["scope"] == ["openid profile w_member_social w_organization_social"]
    [state] = query["state"]
    assert len(state) >= 32
    assert set(browser.session[SESSION_KEY]) == {state}
    assert "client_secret" not in query and linkedin.client_secret not in response["Location"]


def test_the_callback_stores_the_members_access_encrypted_and_shows_who_is_connected(browser, admin, channel, linkedin):
    callback = authorize(browser, channel)

    response = browser.get(callback, follow=True)

    connection = LinkedInConnection.objects.get(channel=channel)
    assert response.redirect_chain[-1][0] == connection_page(connection)
    assert (connection.member_urn, connection.member_name) == ("urn:li:person:abc123", "Ada Lovelace")
    assert connection.organizations == [{"urn": PAGE, "name": "Devtestco"}]
    assert connection.organization_urn == ""
    [exchange] = linkedin.token_requests
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["redirect_uri"] == f"{django_settings.SITE_URL}{CALLBACK}"
    assert exchange["client_secret"] == linkedin.client_secret
    access, refresh = connection.access_token(), connection.refresh_token()
    assert access.startswith("AQV") and refresh.startswith("AQX")
    assert access not in connection.access_token_encrypted and refresh not in connection.refresh_token_encrypted
    assert connection.expires_at > timezone.now() + timedelta(days=59)
    assert "LinkedIn connected: Ada Lovelace." in " ".join(messages_of(response))
    page = text_of(response)
    assert "Ada Lovelace (urn:li:person:abc123)" in page
    assert f"Granted until {connection.expires_at:%Y-%m-%d %H:%M} UTC; renewed by itself before then." in page
    assert "Reconnect LinkedIn" in page and "Disconnect" in page
    assert connection.connected_by == f"{admin.email} (Settings area)"


def test_the_connection_page_names_the_redirect_url_to_register_with_the_linkedin_app(browser, connected, settings):
    settings.SITE_URL = "https://publishing.example.com"

    page = text_of(browser.get(connection_page(connected)))

    assert f"https://publishing.example.com{CALLBACK}" in page


# --- The state: this session's, once, fresh ------------------------------------------------------


def assert_refused(response, linkedin, channel) -> None:
    assert "belongs to no connection started in this session" in " ".join(messages_of(response))
    assert not LinkedInConnection.objects.filter(channel=channel).exists()
    assert linkedin.token_requests == []  # the code was not even exchanged


def test_a_forged_state_is_refused_and_nothing_is_stored(browser, channel, linkedin):
    callback = authorize(browser, channel)
    code = parse_qs(urlsplit(callback).query)["code"][0]

    response = browser.get(CALLBACK, {"code": code, "state": "forged-state"}, follow=True)

    assert response.status_code == 200
    assert_refused(response, linkedin, channel)


def test_an_answer_without_any_connection_started_in_the_session_is_refused(browser, channel, linkedin):
    started = admin_session(AdminUserFactory(account=channel.account)).get(connect_url(channel))
    code = parse_qs(urlsplit(consent(started["Location"])).query)["code"][0]

    response = browser.get(CALLBACK, {"code": code, "state": "made-up"}, follow=True)

    assert_refused(response, linkedin, channel)


def test_the_same_state_used_twice_is_refused_the_second_time(browser, channel, linkedin):
    callback = authorize(browser, channel)
    browser.get(callback)
    connection = LinkedInConnection.objects.get(channel=channel)

    replayed = browser.get(callback, follow=True)

    assert "belongs to no connection started in this session" in " ".join(messages_of(replayed))
    assert len(linkedin.token_requests) == 1
    assert LinkedInConnection.objects.get(channel=channel).connected_at == connection.connected_at


def test_a_state_from_another_admins_session_is_refused_and_stays_good_for_its_own_session(browser, channel, linkedin):
    callback = authorize(browser, channel)
    colleague = admin_session(AdminUserFactory(account=channel.account))

    response = colleague.get(callback, follow=True)

    assert_refused(response, linkedin, channel)
    browser.get(callback)
    assert LinkedInConnection.objects.get(channel=channel).member_name == "Ada Lovelace"


@pytest.mark.parametrize(("minutes", "taken"), [(14, True), (16, False)])
def test_an_authorization_started_more_than_15_minutes_ago_is_refused(browser, channel, linkedin, minutes, taken):
    callback = authorize(browser, channel)
    session = browser.session
    session[SESSION_KEY][state_of(callback)]["at"] -= minutes * 60
    session.save()

    response = browser.get(callback, follow=True)

    assert LinkedInConnection.objects.filter(channel=channel).exists() is taken
    if not taken:
        assert_refused(response, linkedin, channel)


def test_a_member_who_cancels_on_linkedin_is_told_so_and_nothing_is_stored(browser, channel, linkedin):
    linkedin.deny_next_authorization = True

    response = browser.get(authorize(browser, channel), follow=True)

    assert response.redirect_chain[-1][0] == channel_page(channel)
    assert messages_of(response) == ["LinkedIn did not grant access: The user cancelled the authorization."]
    assert not LinkedInConnection.objects.filter(channel=channel).exists()
    assert linkedin.token_requests == []
    assert "Not connected: Connect LinkedIn" in text_of(response)


def test_without_linkedin_client_id_the_admin_is_told_what_to_set_and_not_sent_to_linkedin(
    browser, channel, linkedin, settings
):
    settings.LINKEDIN_CLIENT_ID = ""

    response = browser.get(connect_url(channel), follow=True)

    assert response.redirect_chain == [(channel_page(channel), 302)]
    [message] = messages_of(response)
    assert "LINKEDIN_CLIENT_ID" in message and "connect_linkedin" in message
    assert linkedin.calls() == []
    assert SESSION_KEY not in browser.session


# --- Who may connect ------------------------------------------------------------------------------


@pytest.fixture(params=["editor", "viewer", "admin of another account"])
def outsider(request, account):
    return {
        "editor": lambda: UserFactory(account=account, role=Role.EDITOR),
        "viewer": lambda: UserFactory(account=account, role=Role.VIEWER),
        "admin of another account": lambda: AdminUserFactory(),
    }[request.param]()


def test_no_one_but_an_admin_of_the_channels_account_may_connect_see_or_disconnect_it(outsider, connected, linkedin):
    someone = admin_session(outsider)

    assert someone.get(connect_url(connected.channel)).status_code in (403, 404)
    seen = someone.get(connection_page(connected))
    assert seen.status_code in (302, 403)  # 302: to the index, "doesn't exist" (another account's)
    assert "Ada Lovelace" not in seen.content.decode()
    assert someone.post(f"{CONNECTIONS}{connected.pk}/disconnect/").status_code in (302, 403)
    assert LinkedInConnection.objects.filter(pk=connected.pk).exists()
    assert "Ada Lovelace" not in someone.get(CONNECTIONS).content.decode()
    assert linkedin.calls(path_prefix="/oauth") == []
    assert SESSION_KEY not in someone.session


def test_an_operator_may_not_connect_a_channel_with_a_linkedin_account_of_theirs(connected, linkedin):
    operator = admin_session(OperatorFactory())

    assert operator.get(connect_url(connected.channel)).status_code == 403
    # The operator's console shows every connection, as it shows git destinations, but offers no reconnect.
    page = operator.get(connection_page(connected))
    assert page.status_code == 200 and "Reconnect LinkedIn" not in page.content.decode()
    assert linkedin.calls(path_prefix="/oauth") == []
    assert SESSION_KEY not in operator.session


def test_a_channel_that_is_not_a_linkedin_channel_has_no_connect(browser, account, linkedin):
    blog = ChannelFactory(account=account, platform="git")

    assert browser.get(connect_url(blog)).status_code == 404
    assert browser.get(f"{CONNECTIONS}connect/999999999/").status_code == 404


def test_an_sso_session_confirms_its_password_before_connecting_disconnecting_or_seeing_the_connection(
    client_for, admin, connected, linkedin
):
    sso = sso_browser(client_for, ApiKeyFactory(user=admin, scopes=["write:sso"]), admin)

    for method, url in (
        ("get", connect_url(connected.channel)),
        ("get", connection_page(connected)),
        ("post", f"{CONNECTIONS}{connected.pk}/disconnect/"),
        ("post", f"{CONNECTIONS}{connected.pk}/test-connection/"),
    ):
        assert asks_for_password(getattr(sso, method)(url), url), (method, url)
    assert linkedin.calls(path_prefix="/oauth") == []
    assert LinkedInConnection.objects.filter(pk=connected.pk).exists()

    sso.post("/admin/confirm-password/", {"password": PASSWORD, "next": "/admin/"})
    assert sso.get(connect_url(connected.channel))["Location"].startswith(linkedin.auth_url)


# --- Reconnect and disconnect ---------------------------------------------------------------------


def test_reconnect_keeps_the_channel_its_scheduled_posts_and_the_chosen_page(browser, connected, linkedin):
    channel = connected.channel
    connection_author_set(connection=connected, organization=PAGE)
    post = post_create(channel=channel, title="Our launch", body="It is out.")
    when = timezone.now() + timedelta(days=2)
    post_set_status(post_id=post.pk, status=PublicationStatus.SCHEDULED, scheduled_at=when)
    page = browser.get(connection_page(connected)).content.decode()
    [reconnect] = re.findall(r'<a href="([^"]+)">Reconnect LinkedIn</a>', page)
    assert reconnect == connect_url(channel)

    browser.get(authorize(browser, channel))

    connection = LinkedInConnection.objects.get(channel=channel)
    assert connection.pk == connected.pk
    assert connection.organization_urn == PAGE and connection.author_name == "Devtestco"
    assert connection.access_token() != connected.access_token()
    post.refresh_from_db()
    assert (post.publication_status, post.scheduled_at) == (PublicationStatus.SCHEDULED, when)
    # Nor is it published early: it waits for its time, as before.
    assert not PublicationJob.objects.filter(post_id=post.pk).exists()


def test_a_reconnect_by_another_member_who_does_not_administer_the_page_posts_as_that_member(
    browser, connected, linkedin
):
    connection_author_set(connection=connected, organization=PAGE)
    linkedin.members["zz9"] = {"sub": "zz9", "name": "Grace Hopper", "given_name": "Grace", "family_name": "Hopper"}
    linkedin.authorizing_sub = "zz9"

    response = browser.get(authorize(browser, connected.channel), follow=True)

    connection = LinkedInConnection.objects.get(channel=connected.channel)
    assert (connection.member_urn, connection.organization_urn) == ("urn:li:person:zz9", "")
    assert connection.author_name == "Grace Hopper"
    assert "Posts appear as Grace Hopper" in " ".join(messages_of(response))


def test_a_reconnect_by_the_member_who_no_longer_administers_the_page_goes_through_and_posts_as_them(
    browser, connected, linkedin
):
    connection_author_set(connection=connected, organization=PAGE)
    linkedin.organizations["abc123"] = []

    browser.get(authorize(browser, connected.channel))

    connection = LinkedInConnection.objects.get(channel=connected.channel)
    assert connection.access_token() != connected.access_token()
    assert (connection.organization_urn, connection.organizations) == ("", [])


def test_disconnect_deletes_the_connection_and_the_channel_page_offers_connect_again(browser, connected):
    response = browser.post(f"{CONNECTIONS}{connected.pk}/disconnect/", follow=True)

    assert response.redirect_chain == [(channel_page(connected.channel), 302)]
    assert not LinkedInConnection.objects.filter(pk=connected.pk).exists()
    assert "LinkedIn disconnected" in messages_of(response)[0]
    assert "Not connected: Connect LinkedIn" in text_of(response)


def test_disconnect_is_a_post_only(browser, connected):
    assert browser.get(f"{CONNECTIONS}{connected.pk}/disconnect/").status_code == 405
    assert LinkedInConnection.objects.filter(pk=connected.pk).exists()


# --- What the channel's and the connection's pages say ----------------------------------------------


def test_the_channel_page_says_where_its_posts_go_before_and_after_connecting(browser, channel):
    before = browser.get(channel_page(channel))
    assert "Publishes to: Not connected: Connect LinkedIn" in text_of(before)
    assert f'href="{connect_url(channel)}"' in before.content.decode()

    browser.get(authorize(browser, channel))

    after = text_of(browser.get(channel_page(channel)))
    assert "), posting as Ada Lovelace" in after
    assert "Not connected" not in after


def test_access_ending_within_7_days_without_a_refresh_token_is_a_warning_on_both_pages(browser, channel, linkedin):
    connection = connection_save(
        channel=channel, token=linkedin.issue_token(expires_in=3 * 86400, refresh=False), connected_by="tests"
    )
    warning = (
        f"The access LinkedIn granted ends on {connection.expires_at:%Y-%m-%d %H:%M} UTC: reconnect LinkedIn "
        "before then."
    )

    assert warning in text_of(browser.get(channel_page(channel)))
    assert warning in text_of(browser.get(connection_page(connection)))


def test_access_ending_soon_with_a_refresh_token_is_no_warning(browser, channel, linkedin):
    connection = connection_save(channel=channel, token=linkedin.issue_token(expires_in=3 * 86400), connected_by="t")

    for url in (channel_page(channel), connection_page(connection)):
        assert "reconnect LinkedIn" not in text_of(browser.get(url)), url


def test_a_connection_that_needs_reconnecting_says_why_on_both_pages(browser, connected):
    connection_lost(connection=connected, reason="LinkedIn refused the access token (Invalid access token).")
    said = "Reconnect LinkedIn: LinkedIn refused the access token (Invalid access token)."

    assert said in text_of(browser.get(channel_page(connected.channel)))
    assert said in text_of(browser.get(connection_page(connected)))


def test_test_connection_says_whom_linkedin_knows_the_access_as(browser, connected):
    response = browser.post(f"{CONNECTIONS}{connected.pk}/test-connection/", follow=True)

    [message] = messages_of(response)
    assert message.startswith("Connected to LinkedIn as Ada Lovelace; posts appear as Ada Lovelace")


def test_test_connection_with_a_revoked_token_shows_linkedins_refusal_and_asks_for_a_reconnect(
    browser, connected, linkedin
):
    linkedin.revoke(connected.access_token())

    response = browser.post(f"{CONNECTIONS}{connected.pk}/test-connection/", follow=True)

    [message] = messages_of(response)
    assert "LinkedIn refused: The token used in the request has been revoked by the user" in message
    connected.refresh_from_db()
    assert connected.needs_reconnect
    assert "Reconnect LinkedIn: LinkedIn refused the access token" in text_of(response)


def test_no_page_ever_shows_the_tokens(browser, channel, linkedin):
    browser.get(authorize(browser, channel))
    connection = LinkedInConnection.objects.get(channel=channel)
    secrets = [
        connection.access_token(),
        connection.refresh_token(),
        connection.access_token_encrypted,
        connection.refresh_token_encrypted,
    ]
    assert all(secrets) and crypto.decrypt(connection.access_token_encrypted) == secrets[0]
    pages = {
        "connection page": browser.get(connection_page(connection)),
        "list": browser.get(CONNECTIONS),
        "history": browser.get(f"{CONNECTIONS}{connection.pk}/history/"),
        "channel page": browser.get(channel_page(channel)),
        "test connection": browser.post(f"{CONNECTIONS}{connection.pk}/test-connection/", follow=True),
    }
    for where, page in pages.items():
        assert page.status_code == 200, where
        content = page.content.decode()
        assert not [secret for secret in secrets if secret in content], where
    assert "Ada Lovelace" in text_of(pages["list"])
