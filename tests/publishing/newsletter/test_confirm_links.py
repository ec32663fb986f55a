"""Newsletter links that do one thing: the confirmation e-mail's link confirms a waiting subscription
once and expires; an edition's link only unsubscribes; after an unsubscribe, no link the person
already has subscribes them again (only a new subscription on the form, with its own e-mail).
Mailed through a real SMTP server and followed as a reader's browser and mail client do."""

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.newsletter import services
from apps.publishing.newsletter.models import Subscriber, Suppression, email_hash
from apps.publishing.newsletter.tasks import send_confirmations
from apps.publishing.services import channel_run
from tests.blog.test_public_site import path_of
from tests.conftest import settings_loaded
from tests.factories import NewsletterChannelFactory, SubscriberFactory

pytestmark = pytest.mark.django_db

ONE_CLICK = "List-Unsubscribe=One-Click"


@pytest.fixture
def letter(monkeypatch, settings):
    """A newsletter whose confirmation e-mails go out where they are enqueued (as a function: a
    worker's set-up around a task would recycle the test's database connection)."""
    monkeypatch.setattr(send_confirmations, "delay", send_confirmations)
    settings.SITE_URL = "https://cps.example.com"
    return NewsletterChannelFactory(team=None, title="The Weekly Letter")


@pytest.fixture
def form(client, django_capture_on_commit_callbacks):
    """Post the newsletter's subscribe form as a browser on its page does; what it enqueues runs."""

    def post(channel, email: str):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(path_of(channel.public_url()), {"email": email, "name": "", "website": ""})
        assert response.status_code == 200
        return response

    return post


def one_click(path: str):
    """A mail client's one-click unsubscribe (RFC 8058): no cookie, no CSRF token."""
    return Client(enforce_csrf_checks=True).post(path, ONE_CLICK, content_type="application/x-www-form-urlencoded")


def confirm_link(received) -> str:
    [link] = re.findall(r"https://cps\.example\.com(/newsletter/confirm/\S+/)", received.message.get_content())
    return link


def unsubscribe_link(received) -> str:
    return urlsplit(received.message["List-Unsubscribe"].split(",")[0].strip("<> ")).path


def status_of(channel, email: str) -> str:
    return Subscriber.objects.get(channel=channel, email=email).status


def publish(channel, title: str):
    post = post_create(channel=channel, title=title, body="Hello, readers.")
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)


def test_after_an_unsubscribe_the_old_confirm_link_and_the_editions_link_subscribe_nobody_again(
    smtp_server, letter, form, client, emitted
):
    form(letter, "reader@example.com")
    [confirmation] = smtp_server.received
    old_confirm = confirm_link(confirmation)
    assert "You are subscribed" in client.post(old_confirm).content.decode()
    publish(letter, "Edition one")
    [_, edition] = smtp_server.received
    edition_link = unsubscribe_link(edition)

    assert one_click(edition_link).status_code == 200
    assert status_of(letter, "reader@example.com") == "unsubscribed"

    for path in (old_confirm, edition_link.replace("/unsubscribe/", "/confirm/")):
        refused = client.post(path)
        assert refused.status_code == 404, path
        assert "This link is not valid" in refused.content.decode()
        assert "ended by an unsubscribe" in refused.content.decode()
    assert status_of(letter, "reader@example.com") == "unsubscribed"
    assert Suppression.objects.filter(email_hash=email_hash("reader@example.com")).count() == 1
    assert len(emitted("subscriber.confirmed")) == 1
    publish(letter, "Edition two")
    assert len(smtp_server.messages_to("reader@example.com")) == 2  # the confirmation and edition one

    # Only a new subscription, with its own e-mail, subscribes them again (the form's interval past).
    Subscriber.objects.update(confirmation_sent_at=timezone.now() - timedelta(hours=1))
    form(letter, "reader@example.com")
    new_confirm = confirm_link(smtp_server.received[-1])
    assert new_confirm != old_confirm
    assert client.post(old_confirm).status_code == 404
    assert "You are subscribed" in client.post(new_confirm).content.decode()
    assert status_of(letter, "reader@example.com") == "confirmed"
    assert not Suppression.objects.exists()
    # The editions' unsubscribe link of before still unsubscribes: it never changes.
    assert one_click(edition_link).status_code == 200
    assert status_of(letter, "reader@example.com") == "unsubscribed"


def test_a_forwarded_editions_link_cannot_confirm_a_subscription_waiting_for_its_own_link(
    smtp_server, letter, form, client
):
    reader = SubscriberFactory(channel=letter, email="reader@example.com")
    publish(letter, "Edition one")
    [edition] = smtp_server.received
    assert one_click(unsubscribe_link(edition)).status_code == 200
    form(letter, "reader@example.com")  # the person subscribes again: their new e-mail's link waits

    forwarded = client.post(f"/newsletter/confirm/{reader.token}/")

    assert forwarded.status_code == 404
    assert status_of(letter, "reader@example.com") == "unsubscribed"
    assert "You are subscribed" in client.post(confirm_link(smtp_server.received[-1])).content.decode()


def test_a_confirm_link_pressed_twice_confirms_once_and_then_says_so(smtp_server, letter, form, client, emitted):
    form(letter, "reader@example.com")
    link = confirm_link(smtp_server.received[-1])

    first, second = client.post(link), client.post(link)

    assert (first.status_code, second.status_code) == (200, 200)
    assert "You are subscribed" in first.content.decode() and "You are subscribed" in second.content.decode()
    assert "already receives" in client.get(link).content.decode()
    assert status_of(letter, "reader@example.com") == "confirmed"
    assert len(emitted("subscriber.confirmed")) == 1


def test_an_expired_confirm_link_is_refused_with_a_page_saying_to_subscribe_again(
    smtp_server, letter, form, client, emitted
):
    form(letter, "reader@example.com")
    link = confirm_link(smtp_server.received[-1])
    # The e-mail was sent NEWSLETTER_CONFIRM_TTL ago.
    Subscriber.objects.update(confirm_expires_at=timezone.now() - timedelta(seconds=1))

    for response in (client.get(link), client.post(link)):
        assert response.status_code == 410
        page = response.content.decode()
        assert "This link has expired" in page
        assert "subscribe again with the form" in page
        assert f'href="{letter.public_url()}"' in page
    assert status_of(letter, "reader@example.com") == "unconfirmed"
    assert emitted("subscriber.confirmed") == []

    # Subscribing again on the form (its interval past) sends a new e-mail, whose new link confirms.
    Subscriber.objects.update(confirmation_sent_at=timezone.now() - timedelta(days=7))
    form(letter, "reader@example.com")
    new_link = confirm_link(smtp_server.received[-1])
    assert client.post(link).status_code == 404
    assert "You are subscribed" in client.post(new_link).content.decode()


def test_each_confirmation_link_lasts_the_configured_time(letter, settings, mailoutbox):
    settings.NEWSLETTER_CONFIRM_TTL = timedelta(days=2)
    waiting = SubscriberFactory(channel=letter, status="unconfirmed")

    before = timezone.now()
    services.confirmations_send(subscriber_ids=[waiting.pk])

    waiting.refresh_from_db()
    assert before + timedelta(days=2) <= waiting.confirm_expires_at <= timezone.now() + timedelta(days=2)
    # Only a hash of the link's token is kept.
    [token] = re.findall(r"/newsletter/confirm/([^/]+)/", mailoutbox[0].body)
    assert token not in (waiting.confirm_token_hash, waiting.token)


@pytest.mark.parametrize("value", ["", "0", "-P1D", "soon"])
def test_a_bad_confirm_ttl_stops_the_start_up(value):
    result = settings_loaded("import config.settings", {"NEWSLETTER_CONFIRM_TTL": value})

    assert result.returncode != 0
    assert "NEWSLETTER_CONFIRM_TTL must be a positive duration" in result.stderr


def test_the_confirm_ttl_is_seven_days_unless_set():
    show = "import config.settings as s; print(s.NEWSLETTER_CONFIRM_TTL.total_seconds())"

    assert settings_loaded(show, {}, unset=("NEWSLETTER_CONFIRM_TTL",)).stdout == f"{7 * 86400.0}\n"
    assert settings_loaded(show, {"NEWSLETTER_CONFIRM_TTL": "PT36H"}).stdout == f"{36 * 3600.0}\n"


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_unsubscribe_link_and_the_confirm_links_of_people_never_mailed_an_edition(
    client, settings
):
    settings.SITE_URL = "https://cps.example.com"
    executor = MigrationExecutor(connection)
    before = [("publishing_newsletter", "0002_delivery_indexes")]
    executor.migrate(before)
    Subscriber_ = executor.loader.project_state(before).apps.get_model("publishing_newsletter", "Subscriber")
    channel = NewsletterChannelFactory(team=None, title="The Weekly Letter")
    now = timezone.now()
    people = {
        status: Subscriber_.objects.create(
            channel_id=channel.pk,
            email=f"{status}@example.com",
            status=status,
            created_at=now,
            confirmation_sent_at=now,
            confirmed_at=now if status != "unconfirmed" else None,
            unsubscribed_at=now if status == "unsubscribed" else None,
        )
        for status in ("unconfirmed", "confirmed", "unsubscribed")
    }
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    # The waiting person's e-mail (its link carries the old token) still confirms them.
    waiting = people["unconfirmed"]
    assert "You are subscribed" in client.post(f"/newsletter/confirm/{waiting.token}/").content.decode()
    assert status_of(channel, "unconfirmed@example.com") == "confirmed"
    # The others' old token was in editions: it no longer confirms, and still unsubscribes.
    assert client.post(f"/newsletter/confirm/{people['unsubscribed'].token}/").status_code == 404
    for person in people.values():
        assert one_click(f"/newsletter/unsubscribe/{person.token}/").status_code == 200
        assert status_of(channel, person.email) == "unsubscribed"
