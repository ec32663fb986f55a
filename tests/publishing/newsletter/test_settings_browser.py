"""An edition's page in a real browser (headless Chromium, Playwright): the e-mail as sent is shown
in a sandboxed frame under the Settings area's own Content-Security-Policy, with its inlined styles
applied and no script of its own running, and "Send test" mails the signed-in admin only."""

import pytest
from django.core import mail

from apps.publishing.newsletter.models import Edition
from tests.conftest import needs_chromium
from tests.factories import AdminUserFactory, NewsletterChannelFactory, PostFactory, SubscriberFactory
from tests.publishing.newsletter.test_settings_area import edition_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), needs_chromium]

PASSWORD = "A long and right password 42"


def test_an_admin_sees_the_edition_as_mailed_in_a_sandboxed_frame_and_sends_themselves_a_test(
    browser, live_server, settings
):
    settings.SITE_URL = live_server.url
    admin = AdminUserFactory(email="ada@example.com")
    admin.set_password(PASSWORD)
    admin.save()
    channel = NewsletterChannelFactory(account=admin.account, title="Weekly Letter", accent_color="#aa3300")
    SubscriberFactory.create_batch(2, channel=channel)
    edition = edition_of(PostFactory(channel=channel, title="Spring issue", body="Hello **readers**."))
    # What a post could not put there (the blog's allow-list removes scripts): the frame must still not run one.
    Edition.objects.filter(pk=edition.pk).update(
        html=edition.html.replace("</body>", "<script>document.title='ran'</script></body>")
    )
    edition_page = f"{live_server.url}/admin/publishing_newsletter/edition/{edition.pk}/change/"
    page = browser.new_page()
    refused = []
    page.on("console", lambda entry: refused.append(entry.text) if "Content Security Policy" in entry.text else None)

    page.goto(f"{live_server.url}/admin/login/?next=/admin/publishing_newsletter/edition/{edition.pk}/change/")
    page.fill("#id_username", admin.email)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(edition_page)

    frame = page.frame_locator("iframe.newsletter-preview")
    assert frame.locator("strong:text('readers')").is_visible()
    frame_title = page.frames[1].evaluate("document.title")
    assert frame_title != "ran"
    # The header's line in the channel's colour: an inlined style, which the page's policy lets through.
    border = frame.locator(".header").evaluate("element => getComputedStyle(element).borderBottomColor")
    assert border == "rgb(170, 51, 0)"
    assert not [text for text in refused if "style" in text]

    page.click("button:text('Send test to ada@example.com')")
    page.wait_for_url(edition_page)

    assert "A test was sent to ada@example.com (only)." in page.locator(".messagelist").inner_text()
    assert [(m.to, m.subject) for m in mail.outbox] == [(["ada@example.com"], "[Test] Spring issue")]
