"""The whole "Connect Mastodon" flow in a real browser (headless Chromium, Playwright): an account admin
signs in with their password, goes from the channel's page to the form asking their instance, types
the local fake's address, is sent to the instance's consent page (the fake agrees at once) and back to
the live server's callback, then makes the channel's statuses unlisted and in German. The session
cookie, the redirects and the forms are the browser's own."""

import re

import pytest

from apps.publishing.mastodon.models import MastodonApp, MastodonConnection
from tests.conftest import needs_chromium
from tests.factories import AdminUserFactory, ChannelFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]

PASSWORD = "A long and right password 42"
CALLBACK = "/admin/publishing_mastodon/mastodonconnection/callback/"


def test_an_admin_connects_a_mastodon_channel_in_the_browser_and_makes_its_statuses_unlisted(
    browser, live_server, mastodon, settings
):
    # The redirect URI registered with the instance's app is built from SITE_URL: the live server's here.
    settings.SITE_URL = live_server.url
    admin = AdminUserFactory()
    admin.set_password(PASSWORD)
    admin.save()
    channel = ChannelFactory(account=admin.account, platform="mastodon", title="Our toots")
    channel_page = f"{live_server.url}/admin/channels/channel/{channel.pk}/change/"
    page = browser.new_page()

    page.goto(f"{live_server.url}/admin/login/?next=/admin/channels/channel/{channel.pk}/change/")
    page.fill("#id_username", admin.email)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(channel_page)
    assert "Not connected: Connect Mastodon" in " ".join(page.locator("main").inner_text().split())

    page.click("a:text('Connect Mastodon')")
    page.fill("input[name=instance]", mastodon.url)
    with page.expect_request(re.compile(re.escape(mastodon.url) + r"/oauth/authorize\?")) as asked:
        page.click("input[type=submit]")
    page.wait_for_url(re.compile(re.escape(live_server.url) + r"/admin/publishing_mastodon/mastodonconnection/\d+/"))

    app = MastodonApp.objects.get(base_url=mastodon.url)
    assert app.redirect_uri == f"{live_server.url}{CALLBACK}"
    assert f"client_id={app.client_id}" in asked.value.url
    connection = MastodonConnection.objects.get(channel=channel)
    shown = " ".join(page.locator("main").inner_text().split())
    assert "Mastodon connected: @ada@127.0.0.1." in " ".join(page.locator(".messagelist").inner_text().split())
    assert "Ada Lovelace (@ada@127.0.0.1)" in shown and "500 characters a status" in shown
    assert page.locator("a:text('Reconnect Mastodon')").is_visible()
    assert page.locator("button:text('Disconnect')").is_visible()
    [exchange] = mastodon.token_requests
    assert exchange["redirect_uri"] == f"{live_server.url}{CALLBACK}"
    assert connection.access_token() not in page.content()

    page.select_option("select[name=visibility]", value="unlisted")
    page.fill("input[name=language]", "de")
    page.click("input[name=_save]")
    page.wait_for_url(re.compile(r".*/admin/publishing_mastodon/mastodonconnection/(\?.*)?$"))

    connection.refresh_from_db()
    assert (connection.visibility, connection.language) == ("unlisted", "de")
    page.goto(channel_page)
    said = "Mastodon (unlisted statuses), posting as @ada@127.0.0.1"
    assert said in " ".join(page.locator("main").inner_text().split())
