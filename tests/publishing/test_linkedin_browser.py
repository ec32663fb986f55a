"""The whole "Connect LinkedIn" flow in a real browser (headless Chromium, Playwright): an account
admin signs in with their password, goes from the channel's page to LinkedIn's consent page (the
local fake, which agrees at once) and back to the live server's callback, and then picks the page
the channel posts as. The session cookie, the redirects and the forms are the browser's own."""

import re

import pytest

from apps.publishing.linkedin.models import LinkedInConnection
from tests.conftest import needs_chromium
from tests.factories import AdminUserFactory, ChannelFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

PASSWORD = "A long and right password 42"
CALLBACK = "/admin/publishing_linkedin/linkedinconnection/callback/"
PAGE = "urn:li:organization:2414183"


def test_an_admin_connects_a_linkedin_channel_in_the_browser_and_chooses_to_post_as_a_page(
    browser, live_server, linkedin, settings
):
    # The redirect URI registered with the LinkedIn app is built from SITE_URL: the live server's here.
    settings.SITE_URL = live_server.url
    settings.LINKEDIN_SCOPES = ["openid", "profile", "w_member_social", "w_organization_social", "r_organization_admin"]
    admin = AdminUserFactory()
    admin.set_password(PASSWORD)
    admin.save()
    channel = ChannelFactory(account=admin.account, platform="linkedin", title="Company news")
    channel_page = f"{live_server.url}/admin/channels/channel/{channel.pk}/change/"
    page = browser.new_page()

    page.goto(f"{live_server.url}/admin/login/?next=/admin/channels/channel/{channel.pk}/change/")
    page.fill("#id_username", admin.email)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(channel_page)
    assert "Not connected: Connect LinkedIn" in " ".join(page.locator("main").inner_text().split())

    with page.expect_request(re.compile(re.escape(linkedin.auth_url) + r"/authorization\?")) as asked:
        page.click("a:text('Connect LinkedIn')")
    page.wait_for_url(re.compile(re.escape(live_server.url) + r"/admin/publishing_linkedin/linkedinconnection/\d+/"))

    assert asked.value.url.startswith(f"{linkedin.auth_url}/authorization?")
    connection = LinkedInConnection.objects.get(channel=channel)
    shown = " ".join(page.locator("main").inner_text().split())
    assert "LinkedIn connected: Ada Lovelace." in " ".join(page.locator(".messagelist").inner_text().split())
    assert "Ada Lovelace (urn:li:person:abc123)" in shown
    assert f"Granted until {connection.expires_at:%Y-%m-%d %H:%M} UTC" in shown
    assert page.locator("a:text('Reconnect LinkedIn')").is_visible()
    assert page.locator("button:text('Disconnect')").is_visible()
    [exchange] = linkedin.token_requests
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["redirect_uri"] == f"{live_server.url}{CALLBACK}"
    # client_secret_post: the secret travels in the form body, as LinkedIn requires.
    assert (exchange["client_id"], exchange["client_secret"]) == (linkedin.client_id, linkedin.client_secret)
    access_token = connection.access_token()
    assert access_token.startswith("AQV") and access_token not in connection.access_token_encrypted
    assert access_token not in page.content()

    page.select_option("select[name=organization_urn]", label=f"Devtestco ({PAGE})")
    page.click("input[name=_save]")
    page.wait_for_url(re.compile(r".*/admin/publishing_linkedin/linkedinconnection/(\?.*)?$"))

    connection.refresh_from_db()
    assert connection.organization_urn == PAGE
    page.goto(channel_page)
    until, renewed = (f"{when:%Y-%m-%d %H:%M} UTC" for when in (connection.expires_at, connection.refresh_expires_at))
    said = f"LinkedIn (access until {until}, renewed by itself until {renewed}), posting as Devtestco"
    assert said in " ".join(page.locator("main").inner_text().split())
