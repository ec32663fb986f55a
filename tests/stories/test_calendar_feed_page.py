"""The Settings area's calendar feed page: a signed-in member sees whether they have a feed, creates
one and sees its address on that answer only (never again, never cached), replaces it (the old address
dead), revokes it; each a POST with the CSRF token; a member who may not read articles is told why."""

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from apps.stories.feed_services import calendar_feed_create
from apps.stories.models import CalendarFeed
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, UserFactory

pytestmark = pytest.mark.django_db

PAGE = "admin:calendar_feed"
FEED_ADDRESS = settings.SITE_URL + "/calendar/"


@pytest.fixture
def member():
    return UserFactory(role="editor")


def page_url() -> str:
    return reverse(PAGE)


def address_on(response) -> str:
    """The feed's address the page shows (in its read-only field)."""
    text = response.content.decode()
    start = text.index(FEED_ADDRESS)
    return text[start : text.index('"', start)]


def test_a_member_without_a_feed_is_offered_to_create_one(member):
    response = admin_session(member).get(page_url())

    assert response.status_code == 200
    assert b"You have no calendar feed." in response.content
    assert b'value="create"' in response.content
    assert FEED_ADDRESS.encode() not in response.content


def test_creating_shows_the_address_once_and_it_serves_the_feed(member):
    session = admin_session(member)

    created = session.post(page_url(), {"action": "create"})

    assert created.status_code == 200
    assert "no-store" in created["Cache-Control"]
    address = address_on(created)
    assert b"shown only on this page, only this once" in created.content
    assert Client().get(address.removeprefix(settings.SITE_URL)).status_code == 200
    later = session.get(page_url())
    assert FEED_ADDRESS.encode() not in later.content
    assert b"Last read by a calendar app" in later.content
    assert b'value="replace"' in later.content and b'value="revoke"' in later.content


def test_replacing_shows_a_new_address_and_ends_the_old_one(member):
    session = admin_session(member)
    old = address_on(session.post(page_url(), {"action": "create"}))

    new = address_on(session.post(page_url(), {"action": "replace"}))

    assert new != old
    assert Client().get(old.removeprefix(settings.SITE_URL)).status_code == 404
    assert Client().get(new.removeprefix(settings.SITE_URL)).status_code == 200


def test_revoking_ends_the_feed_and_says_so(member):
    session = admin_session(member)
    address = address_on(session.post(page_url(), {"action": "create"}))

    revoked = session.post(page_url(), {"action": "revoke"}, follow=True)

    assert b"Your calendar feed is revoked" in revoked.content
    assert b"You have no calendar feed." in revoked.content
    assert not CalendarFeed.objects.filter(user=member).exists()
    assert Client().get(address.removeprefix(settings.SITE_URL)).status_code == 404


def test_creating_a_second_feed_is_refused_with_a_message_and_keeps_the_first(member):
    session = admin_session(member)
    first = address_on(session.post(page_url(), {"action": "create"}))

    refused = session.post(page_url(), {"action": "create"}, follow=True)

    assert b"Nothing was changed: You already have a calendar feed" in refused.content
    assert Client().get(first.removeprefix(settings.SITE_URL)).status_code == 200


def test_an_unknown_action_changes_nothing(member):
    response = admin_session(member).post(page_url(), {"action": "delete-everything"}, follow=True)

    assert b"Choose one of the page&#x27;s buttons." in response.content
    assert not CalendarFeed.objects.filter(user=member).exists()


def test_a_post_without_the_csrf_token_is_refused(member):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member, backend="apps.settings_area.access.AccessBackend")

    response = browser.post(page_url(), {"action": "create"})

    assert response.status_code == 403
    assert not CalendarFeed.objects.filter(user=member).exists()


def test_a_member_without_articles_read_is_told_why_and_offered_only_to_revoke():
    admin = AdminUserFactory()
    calendar_feed_create(user=admin)
    admin.permissions = [p for p in admin.permissions if p != "articles.read"]
    admin.save()
    session = admin_session(admin)

    response = session.get(page_url())

    assert b"needs the permission\narticles.read" in response.content
    assert b'value="replace"' not in response.content and b'value="revoke"' in response.content
    refused = session.post(page_url(), {"action": "replace"}, follow=True)
    assert b"Nothing was changed: A calendar feed shows the account&#x27;s stories" in refused.content


def test_someone_signed_out_is_sent_to_the_sign_in_page():
    response = Client().get(page_url())

    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]
