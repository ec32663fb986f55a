"""A newsletter's public pages as a reader, a bot and a mail client meet them: the archive with its
subscribe form, double opt-in through the confirmation e-mail's link, the unsubscribe link of every
edition (a page with a button, and RFC 8058's one-click POST), and what the pages never tell."""

import re
from datetime import timedelta
from email.utils import parseaddr
from urllib.parse import urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from apps.publishing.newsletter import services
from apps.publishing.newsletter.models import Subscriber, Suppression, SuppressionReason, email_hash
from apps.publishing.newsletter.tasks import send_confirmations
from tests.blog.test_html_validity import JAVA, VNU_JAR, validation_errors
from tests.blog.test_public_site import path_of, published, served_from_cache, titles_on
from tests.factories import ChannelFactory, NewsletterChannelFactory, PostFactory, SubscriberFactory

pytestmark = pytest.mark.django_db

SPAMMY_NAME = "Buy pills at spam.example"
ONE_CLICK = "List-Unsubscribe=One-Click"


@pytest.fixture(autouse=True)
def _confirmations_sent_at_once(monkeypatch, settings):
    """The confirmation e-mail's task runs where it is enqueued, into the test's mail outbox (called
    as a function: a worker's set-up around a task would recycle the test's database connection)."""
    monkeypatch.setattr(send_confirmations, "delay", send_confirmations)
    settings.SITE_URL = "https://cps.example.com"


@pytest.fixture
def letter():
    """A newsletter with one sent edition and a draft."""
    channel = NewsletterChannelFactory(team=None, title="The Weekly Letter", accent_color="#7c3aed")
    published(channel, title="Edition one", slug="edition-one")
    PostFactory(channel=channel, title="Not sent yet", slug="not-sent")
    return channel


@pytest.fixture
def subscribe(client, django_capture_on_commit_callbacks):
    """Post the channel's subscribe form as a browser on its page does; what it enqueues runs."""

    def post(channel, email: str, name: str = "", client=client, **extra):
        fields = {"email": email, "name": name, "website": "", **extra.pop("fields", {})}
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(path_of(channel.public_url()), fields, **extra)

    return post


def link_in(message) -> str:
    [link] = re.findall(r"https?://\S+", message.body)
    return link


def confirm_path(subscriber) -> str:
    """The link of a new confirmation e-mail to this person still to confirm."""
    token = services.confirm_tokens_issue(subscriber_ids=[subscriber.pk])[subscriber.pk]
    return f"/newsletter/confirm/{token}/"


def unsubscribe_path(subscriber) -> str:
    return f"/newsletter/unsubscribe/{subscriber.token}/"


def subscriber_of(channel, email: str) -> Subscriber:
    return Subscriber.objects.get(channel=channel, email=email)


def suppressed(channel, email: str) -> list[str]:
    return list(
        Suppression.objects.filter(account=channel.account, email_hash=email_hash(email)).values_list(
            "reason", flat=True
        )
    )


# --- 1. the archive and its form ---


def test_the_newsletter_page_shows_its_subscribe_form_and_the_archive_of_its_sent_editions_only(client, letter):
    response = client.get(path_of(letter.public_url()))

    assert response.status_code == 200
    page = response.content.decode()
    assert titles_on(page) == ["Edition one"]
    assert "Not sent yet" not in page
    [form] = re.findall(r'<form method="post">.*?</form>', page, re.S)
    assert 'name="email"' in form and 'type="email"' in form and "required" in form
    assert 'name="name"' in form
    # The honeypot: hidden from people, out of the tab order, never filled in by the browser.
    assert re.search(
        r'<p class="visually-hidden" aria-hidden="true">\s*<label for="subscribe-website">.*?</label>\s*'
        r'<input id="subscribe-website" type="text" name="website" tabindex="-1" autocomplete="off">',
        form,
        re.S,
    )
    # The form posts to the page itself, which the page's policy allows, and to nowhere else.
    assert "action=" not in form
    assert "form-action 'self'" in response["Content-Security-Policy"]
    assert client.get(path_of(letter.post_url("edition-one"))).status_code == 200
    assert client.get(path_of(letter.post_url("not-sent"))).status_code == 404
    assert f"Sitemap: {letter.public_url('blog:sitemap')}" in client.get("/robots.txt").content.decode().splitlines()


def test_a_newsletter_that_sent_nothing_yet_shows_its_form_and_says_so(client):
    channel = NewsletterChannelFactory(team=None)
    PostFactory(channel=channel, title="A draft edition")

    page = client.get(path_of(channel.public_url())).content.decode()

    assert '<form method="post">' in page
    assert "No edition has been sent yet." in page
    assert "A draft edition" not in page


def test_the_newsletter_page_is_one_cached_page_for_every_reader_without_a_csrf_cookie(
    client, letter, django_assert_num_queries
):
    page = served_from_cache(client, path_of(letter.public_url()), django_assert_num_queries)

    assert "csrfmiddlewaretoken" not in page
    assert "csrftoken" not in client.cookies
    assert "Cookie" not in client.get(path_of(letter.public_url())).get("Vary", "")


def test_a_blogs_pages_keep_their_policy_without_forms_and_refuse_a_post(client):
    blog = ChannelFactory(team=None)

    response = client.get(path_of(blog.public_url()))

    assert "<form" not in response.content.decode()
    assert "form-action 'none'" in response["Content-Security-Policy"]
    assert client.post(path_of(blog.public_url()), {"email": "someone@example.com"}).status_code == 405
    assert not Subscriber.objects.exists()


# --- 2. double opt-in ---


def test_double_opt_in_end_to_end_through_the_public_page(client, letter, subscribe, mailoutbox, emitted):
    answer = subscribe(letter, "Reader@Example.com", SPAMMY_NAME)

    assert answer.status_code == 200
    assert "Check your inbox" in answer.content.decode()
    subscriber = subscriber_of(letter, "reader@example.com")
    assert (subscriber.status, subscriber.name) == ("unconfirmed", SPAMMY_NAME)
    [message] = mailoutbox
    assert message.to == ["reader@example.com"]
    assert parseaddr(message.from_email)[0] == "The Weekly Letter"
    assert message.subject == "Confirm your subscription to The Weekly Letter"
    # One link, and nothing the visitor typed: the form cannot carry a bot's text to a stranger.
    link = link_in(message)
    # A token of its own, never the one every edition's unsubscribe link carries.
    assert re.fullmatch(r"https://cps\.example\.com/newsletter/confirm/[A-Za-z0-9_-]{32}/", link)
    assert subscriber.token not in link
    for typed in (SPAMMY_NAME, "spam.example", "pills"):
        assert typed not in message.subject and typed not in message.body

    shown = client.get(urlsplit(link).path)

    assert shown.status_code == 200
    assert re.search(
        r'<form method="post" class="action"><p><button type="submit">Confirm</button>', shown.content.decode()
    )
    subscriber.refresh_from_db()
    assert subscriber.status == "unconfirmed" and emitted("subscriber.confirmed") == []

    confirmed = client.post(urlsplit(link).path)

    assert confirmed.status_code == 200
    assert "You are subscribed" in confirmed.content.decode()
    subscriber.refresh_from_db()
    assert subscriber.status == "confirmed" and subscriber.confirmed_at is not None
    [event] = emitted("subscriber.confirmed")
    assert event["data"]["subscriber"]["email"] == "reader@example.com"
    # Pressing again, or opening the link again, changes nothing more.
    assert "You are subscribed" in client.post(urlsplit(link).path).content.decode()
    assert "already receives" in client.get(urlsplit(link).path).content.decode()
    assert len(emitted("subscriber.confirmed")) == 1
    assert len(mailoutbox) == 1


def test_opening_the_confirm_and_unsubscribe_links_changes_nothing(client, letter, emitted):
    waiting = SubscriberFactory(channel=letter, status="unconfirmed")
    reader = SubscriberFactory(channel=letter)

    for method in (client.get, client.head):
        assert method(confirm_path(waiting)).status_code == 200
        assert method(unsubscribe_path(reader)).status_code == 200

    waiting.refresh_from_db()
    reader.refresh_from_db()
    assert (waiting.status, reader.status) == ("unconfirmed", "confirmed")
    assert suppressed(letter, reader.email) == []
    assert emitted("subscriber.confirmed") == emitted("subscriber.unsubscribed") == []
    page = client.get(unsubscribe_path(reader)).content.decode()
    assert f"{reader.email} will receive no more editions of The Weekly Letter" in page
    assert '<button type="submit">Unsubscribe</button>' in page


def test_an_unknown_confirm_link_is_a_page_saying_so_never_a_500(client, letter):
    for token in ("nobody-has-this-token", "x" * 65, "test"):
        for method in (client.get, client.post):
            response = method(f"/newsletter/confirm/{token}/")
            assert response.status_code == 404, token
            assert "This link is not valid" in response.content.decode()
    assert client.get("/newsletter/confirm/not a token/").status_code == 404


# --- 3. unsubscribing ---


def test_a_mail_clients_one_click_post_unsubscribes_at_once_without_cookie_csrf_token_or_sign_in(letter, emitted):
    reader = SubscriberFactory(channel=letter)
    mail_client = Client(enforce_csrf_checks=True)

    response = mail_client.post(unsubscribe_path(reader), ONE_CLICK, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 200
    reader.refresh_from_db()
    assert reader.status == "unsubscribed" and reader.unsubscribed_at is not None
    assert suppressed(letter, reader.email) == [SuppressionReason.UNSUBSCRIBED]
    [event] = emitted("subscriber.unsubscribed")
    assert event["data"]["subscriber"]["id"] == reader.pk
    # RFC 8058 allows the body as multipart/form-data too; a second click changes nothing more.
    again = mail_client.post(unsubscribe_path(reader), {"List-Unsubscribe": "One-Click"})
    assert again.status_code == 200
    assert len(emitted("subscriber.unsubscribed")) == 1


def test_the_unsubscribe_pages_button_unsubscribes_and_offers_to_subscribe_again(client, letter):
    reader = SubscriberFactory(channel=letter)
    page = client.get(unsubscribe_path(reader)).content.decode()
    [form] = re.findall(r'<form method="post" class="action">.*?</form>', page, re.S)
    assert '<input type="hidden" name="List-Unsubscribe" value="One-Click">' in form

    response = client.post(unsubscribe_path(reader), {"List-Unsubscribe": "One-Click"})

    assert response.status_code == 200
    page = response.content.decode()
    assert "You are unsubscribed" in page
    assert f'subscribe again on <a href="{letter.public_url()}">' in page
    reader.refresh_from_db()
    assert reader.status == "unsubscribed"
    # Opened again later, the link says so, with no button.
    later = client.get(unsubscribe_path(reader)).content.decode()
    assert "You are unsubscribed" in later and "<button" not in later


def test_a_deleted_subscribers_unsubscribe_link_answers_200_and_changes_nothing(client, letter, emitted):
    reader = SubscriberFactory(channel=letter)
    path = unsubscribe_path(reader)
    services.subscriber_delete(subscriber=reader)

    shown = client.get(path)
    posted = Client(enforce_csrf_checks=True).post(path, ONE_CLICK, content_type="application/x-www-form-urlencoded")

    assert (shown.status_code, posted.status_code) == (200, 200)
    for response in (shown, posted):
        assert "is not on the newsletter" in response.content.decode()
        assert "<button" not in response.content.decode()
    assert not Suppression.objects.exists()
    assert emitted("subscriber.unsubscribed") == []


def test_the_unsubscribe_link_of_a_test_message_says_nothing_was_changed(client, letter):
    reader = SubscriberFactory(channel=letter)

    for response in (client.get("/newsletter/unsubscribe/test/"), client.post("/newsletter/unsubscribe/test/")):
        assert response.status_code == 200
        assert "Nobody was unsubscribed: nothing has changed." in response.content.decode()
    reader.refresh_from_db()
    assert reader.status == "confirmed"
    assert not Suppression.objects.exists()


def test_the_link_pages_are_private_unindexed_script_free_and_leak_no_token(client, letter):
    reader = SubscriberFactory(channel=letter)
    waiting = SubscriberFactory(channel=letter, status="unconfirmed")

    confirm = confirm_path(waiting)

    for path in (confirm, unsubscribe_path(reader), "/newsletter/unsubscribe/gone-token/"):
        for response in (client.get(path), client.post(path)):
            page = response.content.decode()
            assert response["Cache-Control"] == "private, no-store"
            assert response["X-Robots-Tag"] == "noindex"
            assert '<meta name="robots" content="noindex">' in page
            # The token is in the path: no link of the page carries it elsewhere in a Referer.
            assert response["Referrer-Policy"] == "no-referrer"
            policy = response["Content-Security-Policy"]
            assert "default-src 'none'" in policy and "script-src" not in policy and "'unsafe-inline'" not in policy
            assert "form-action 'self'" in policy
            assert "<script" not in page
    # The channel's look: its accent colour in the page's one inline style.
    assert "--accent:#7c3aed" in client.get(confirm).content.decode()
    assert "Disallow: /newsletter/" in client.get("/robots.txt").content.decode().splitlines()


# --- 4. what the form never tells ---


def test_the_form_answers_the_same_page_whatever_the_addresss_state(client, letter, subscribe, mailoutbox):
    long_ago = timezone.now() - timedelta(days=1)
    SubscriberFactory(channel=letter, email="confirmed@example.com")
    SubscriberFactory(channel=letter, email="waiting@example.com", status="unconfirmed", confirmation_sent_at=long_ago)
    left = SubscriberFactory(channel=letter, email="left@example.com")
    services.subscriber_unsubscribe(token=left.token)
    for email, reason in (("bounced@example.com", "bounce"), ("complained@example.com", "complaint")):
        SubscriberFactory(channel=letter, email=email)
        services.suppress(account_id=letter.account_id, email=email, reason=reason)
    states = ["new", "confirmed", "waiting", "left", "bounced", "complained"]

    answers = {state: subscribe(letter, f"{state}@example.com") for state in states}

    assert {state: answer.status_code for state, answer in answers.items()} == dict.fromkeys(states, 200)
    assert len({answer.content for answer in answers.values()}) == 1
    for name in ("Content-Type", "Cache-Control", "Content-Security-Policy", "Set-Cookie", "Vary"):
        assert len({answer.get(name) for answer in answers.values()}) == 1, name
    assert not any(answer.cookies for answer in answers.values())
    # What was mailed is the service's choice: a link to whoever may confirm, nothing to the others.
    assert sorted(message.to[0] for message in mailoutbox) == [
        "left@example.com",
        "new@example.com",
        "waiting@example.com",
    ]
    assert subscriber_of(letter, "confirmed@example.com").status == "confirmed"


def test_a_bad_address_shows_the_form_again_with_a_clear_error_and_nothing_else(client, letter, subscribe, mailoutbox):
    cases = {
        "not-an-address": "Enter a valid e-mail address.",
        "": "This field is required.",
        f"{'a' * 250}@example.com": "Ensure this value has at most 254 characters",
    }
    for email, error in cases.items():
        response = subscribe(letter, email, "A <b>name</b>")

        assert response.status_code == 400, email
        page = response.content.decode()
        assert error in page
        assert 'aria-invalid="true"' in page
        assert "A &lt;b&gt;name&lt;/b&gt;" in page  # kept in the form, escaped
        assert titles_on(page) == ["Edition one"]
        assert response["Cache-Control"] == "private, no-store"
    assert subscribe(letter, "ok@example.com", "nul\x00name").status_code == 400
    assert not Subscriber.objects.exists()
    assert mailoutbox == []
    # The errors were the answers' own: the cached page every reader gets still shows none.
    assert "aria-invalid" not in client.get(path_of(letter.public_url())).content.decode()


def test_a_bot_that_fills_in_the_honeypot_gets_the_same_answer_and_nothing_is_done(letter, subscribe, mailoutbox):
    person = subscribe(letter, "person@example.com")
    bot = subscribe(letter, "victim@example.com", SPAMMY_NAME, fields={"website": "https://spam.example"})

    assert (bot.status_code, bot.content) == (person.status_code, person.content)
    assert list(Subscriber.objects.values_list("email", flat=True)) == ["person@example.com"]
    assert [message.to for message in mailoutbox] == [["person@example.com"]]


def test_past_its_budget_an_address_gets_429_and_nothing_is_sent(client, letter, subscribe, mailoutbox, settings):
    settings.NEWSLETTER_SUBSCRIBE_RATE = (3, 3600)

    answers = [subscribe(letter, f"reader{n}@example.com") for n in range(4)]

    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert "Please try again later" in refused.content.decode()
    assert 0 < int(refused["Retry-After"]) <= 3600
    assert refused["Cache-Control"] == "private, no-store"
    assert "/static/blog/theme.css" in refused.content.decode()
    assert not Subscriber.objects.filter(email="reader3@example.com").exists()
    assert len(mailoutbox) == 3
    # Bots spend the budget too; another address has a budget of its own; reading is never limited.
    assert subscribe(letter, "bot@example.com", fields={"website": "x"}).status_code == 429
    assert subscribe(letter, "reader3@example.com", REMOTE_ADDR="192.0.2.7").status_code == 200
    assert client.get(path_of(letter.public_url())).status_code == 200


def test_a_post_from_another_sites_page_is_refused(letter, subscribe, mailoutbox):
    foreign = [
        {"HTTP_ORIGIN": "https://attacker.example"},
        {"HTTP_ORIGIN": "null"},
        {"HTTP_SEC_FETCH_SITE": "cross-site"},
    ]
    for headers in foreign:
        response = subscribe(letter, "victim@example.com", **headers)
        assert response.status_code == 403, headers
        assert "cannot be sent from another site" in response.content.decode()
    assert not Subscriber.objects.exists()

    own = subscribe(letter, "reader@example.com", HTTP_ORIGIN="http://testserver", HTTP_SEC_FETCH_SITE="same-origin")

    assert own.status_code == 200
    assert len(mailoutbox) == 1


# --- 5. the suppression list and subscribing again ---


def test_unsubscribing_then_subscribing_again_and_confirming_lifts_the_unsubscribe(
    client, letter, subscribe, mailoutbox, emitted
):
    reader = SubscriberFactory(channel=letter, email="back@example.com")
    client.post(unsubscribe_path(reader), {"List-Unsubscribe": "One-Click"})
    assert suppressed(letter, "back@example.com") == ["unsubscribed"]

    subscribe(letter, "back@example.com")
    [message] = mailoutbox
    client.get(urlsplit(link_in(message)).path)
    reader.refresh_from_db()
    assert reader.status == "unsubscribed"  # opening the link is not confirming
    response = client.post(urlsplit(link_in(message)).path)

    assert "You are subscribed" in response.content.decode()
    reader.refresh_from_db()
    assert reader.status == "confirmed" and reader.unsubscribed_at is None
    assert suppressed(letter, "back@example.com") == []
    assert len(emitted("subscriber.confirmed")) == 1


@pytest.mark.parametrize("reason", ["complaint", "bounce"])
def test_a_complaint_or_a_bounce_is_never_lifted_by_subscribing_again_and_confirming(
    client, letter, subscribe, mailoutbox, reason, emitted
):
    reader = SubscriberFactory(channel=letter, email="gone@example.com", status="unconfirmed")
    services.suppress(account_id=letter.account_id, email="gone@example.com", reason=reason)

    subscribe(letter, "gone@example.com")
    assert mailoutbox == []
    response = client.post(confirm_path(reader))

    assert response.status_code == 200
    assert "This address cannot be subscribed" in response.content.decode()
    assert "You are subscribed" not in response.content.decode()
    reader.refresh_from_db()
    assert reader.status == "unconfirmed"
    assert suppressed(letter, "gone@example.com") == [reason]
    assert emitted("subscriber.confirmed") == []


# --- 6. a newsletter on its own domain ---


def test_a_newsletter_on_its_own_domain_takes_subscriptions_there_and_its_links_open_on_the_service(
    client, subscribe, mailoutbox
):
    channel = NewsletterChannelFactory(team=None, title="Own Letter", domain="letter.example.com")
    published(channel, title="Edition on the domain", slug="first")
    on_domain = {"HTTP_HOST": "letter.example.com"}

    index = client.get("/", **on_domain)
    answer = subscribe(channel, "reader@example.com", HTTP_ORIGIN="https://letter.example.com", **on_domain)

    assert index.status_code == 200 and titles_on(index.content.decode()) == ["Edition on the domain"]
    assert '<form method="post">' in index.content.decode()
    assert answer.status_code == 200 and "Check your inbox" in answer.content.decode()
    [message] = mailoutbox
    assert link_in(message).startswith("https://cps.example.com/newsletter/confirm/")
    # The service's own pages are not the newsletter's domain's.
    assert client.get(urlsplit(link_in(message)).path, **on_domain).status_code == 404
    assert client.get("/blog-domains/check", {"domain": "letter.example.com"}).status_code == 200


# --- 7. valid HTML ---


@pytest.mark.skipif(JAVA is None or VNU_JAR is None or not VNU_JAR.is_file(), reason="needs Java and vnu.jar")
def test_the_newsletters_pages_are_valid_html(client, letter, subscribe, settings, tmp_path):
    settings.NEWSLETTER_SUBSCRIBE_RATE = (2, 3600)
    waiting = SubscriberFactory(channel=letter, status="unconfirmed")
    late = SubscriberFactory(channel=letter, status="unconfirmed")
    late_path = confirm_path(late)
    Subscriber.objects.filter(pk=late.pk).update(confirm_expires_at=timezone.now())
    reader = SubscriberFactory(channel=letter)
    pages = {
        "index": client.get(path_of(letter.public_url())),
        "form-error": subscribe(letter, "not-an-address", "A name"),
        "subscribed": subscribe(letter, "new@example.com"),
        "too-many": subscribe(letter, "more@example.com"),
        "confirm": client.get(confirm_path(waiting)),
        "confirmed": client.post(confirm_path(waiting)),
        "confirm-invalid": client.get("/newsletter/confirm/nobody-has-this-token/"),
        "confirm-expired": client.get(late_path),
        "unsubscribe": client.get(unsubscribe_path(reader)),
        "unsubscribed": client.post(unsubscribe_path(reader)),
        "unsubscribe-gone": client.get("/newsletter/unsubscribe/nobody-has-this-token/"),
        "unsubscribe-test": client.get("/newsletter/unsubscribe/test/"),
    }
    statuses = {name: response.status_code for name, response in pages.items()}
    assert statuses == {
        **dict.fromkeys(pages, 200),
        "form-error": 400,
        "too-many": 429,
        "confirm-invalid": 404,
        "confirm-expired": 410,
    }

    errors = validation_errors({name: response.content for name, response in pages.items()}, tmp_path)

    assert errors == [], "\n".join(errors)
