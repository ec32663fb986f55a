"""Subscribing to a newsletter as a reader does it: in headless Chromium, on a live server, from the
form of the newsletter's page to the "Confirm" button of the e-mail's link."""

import re

import pytest

from apps.publishing.newsletter.models import Subscriber
from apps.publishing.newsletter.tasks import send_confirmations
from tests.blog.test_browser import Watched, overflow, screenshot
from tests.blog.test_public_site import published
from tests.conftest import needs_chromium
from tests.factories import NewsletterChannelFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    needs_chromium,
]


def test_a_reader_subscribes_through_the_form_and_confirms_from_the_emails_link(
    browser, live_server, settings, mailoutbox, monkeypatch
):
    settings.SITE_URL = live_server.url
    # The confirmation e-mail's task runs in the live server's request, into the test's outbox.
    monkeypatch.setattr(send_confirmations, "delay", send_confirmations)
    channel = NewsletterChannelFactory(team=None, title="The Weekly Letter", accent_color="#7c3aed")
    published(channel, title="Edition one", slug="edition-one")
    page = browser.new_page(viewport={"width": 375, "height": 800})
    watched = Watched(page)

    page.goto(channel.public_url())
    assert page.locator("article.summary h2").all_inner_texts() == ["Edition one"]
    # The honeypot is there for bots only: a person neither sees it nor tabs into it.
    hidden = page.locator("p:has(> #subscribe-website)").bounding_box()
    assert hidden["width"] <= 1 and hidden["height"] <= 1
    page.fill("#subscribe-email", "reader@example.com")
    page.fill("#subscribe-name", "Reader")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Subscribe"
    assert overflow(page) <= 0
    screenshot(page, "newsletter-index-375")
    page.click("button:text('Subscribe')")
    page.wait_for_selector("h1:text('Check your inbox')")
    assert Subscriber.objects.get(email="reader@example.com").status == "unconfirmed"

    [message] = mailoutbox
    [link] = re.findall(r"https?://\S+", message.body)
    page.goto(link)
    assert Subscriber.objects.get(email="reader@example.com").status == "unconfirmed"
    screenshot(page, "newsletter-confirm-375")
    page.click("button:text('Confirm')")
    page.wait_for_selector("h1:text('You are subscribed')")

    assert Subscriber.objects.get(email="reader@example.com").status == "confirmed"
    assert watched.problems == [], "\n".join(watched.problems)
