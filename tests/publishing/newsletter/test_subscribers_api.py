"""/v1/channels/{id}/subscribers: a newsletter's list through the API, with scopes of its own
(an address is personal data), the house's pagination and errors, and a suppression list that the
API never overrides."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import ALL_SCOPES, Scope
from apps.publishing.newsletter import tasks
from apps.publishing.newsletter.models import Subscriber, SuppressionReason
from apps.publishing.newsletter.services import subscriber_unsubscribe, suppress
from apps.users.models import Role
from tests.factories import (
    AdminUserFactory,
    ApiKeyFactory,
    ChannelFactory,
    NewsletterChannelFactory,
    SubscriberFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

FIELDS = {"id", "email", "name", "status", "created_at", "confirmed_at", "unsubscribed_at"}
UTC_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture
def newsletter(db):
    return NewsletterChannelFactory(title="Weekly Letter")


@pytest.fixture
def key(newsletter):
    """A key of an admin of the newsletter's account with every scope."""
    return ApiKeyFactory(user=AdminUserFactory(account=newsletter.account))


@pytest.fixture
def api(key, client_for):
    return client_for(key)


def record_confirmations(monkeypatch) -> list[list[int]]:
    """The subscriber ids each confirmation e-mail task is handed, recorded instead of enqueued."""
    handed = []
    monkeypatch.setattr(tasks.send_confirmations, "delay", lambda ids: handed.append(list(ids)))
    return handed


@pytest.fixture
def confirmations(monkeypatch):
    return record_confirmations(monkeypatch)


def url(channel, subscriber=None) -> str:
    base = f"/v1/channels{'' if channel is None else f'/{channel.pk}'}/subscribers"
    return base if subscriber is None else f"{base}/{subscriber.pk}"


def error(response) -> dict:
    return response.json()["error"]


# --- reading ------------------------------------------------------------------------------------


def test_the_list_shows_a_newsletters_subscribers_oldest_first_with_their_fields(api, newsletter):
    first = SubscriberFactory(channel=newsletter, email="ada@example.com", name="Ada")
    second = SubscriberFactory(channel=newsletter, status="unconfirmed")
    SubscriberFactory()  # another newsletter's

    response = api.get(url(newsletter))

    assert response.status_code == 200
    body = response.json()
    assert [item["id"] for item in body["data"]] == [first.pk, second.pk]
    assert body["meta"] == {"page": 1, "pages": 1, "count": 2, "per_page": 20, "next_cursor": None}
    item = body["data"][0]
    assert set(item) == FIELDS
    assert (item["email"], item["name"], item["status"]) == ("ada@example.com", "Ada", "confirmed")
    assert UTC_TIME.match(item["created_at"]) and UTC_TIME.match(item["confirmed_at"])
    assert item["unsubscribed_at"] is None
    assert body["data"][1]["confirmed_at"] is None


def test_one_subscriber_reads_as_in_the_list(api, newsletter):
    subscriber = SubscriberFactory(channel=newsletter)

    response = api.get(url(newsletter, subscriber))

    assert response.status_code == 200
    assert response.json() == {"data": api.get(url(newsletter)).json()["data"][0]}


def test_the_list_filters_by_status_and_by_one_exact_address_in_any_case(api, newsletter):
    confirmed = SubscriberFactory(channel=newsletter, email="grace@example.com")
    unconfirmed = SubscriberFactory(channel=newsletter, status="unconfirmed")
    SubscriberFactory(channel=newsletter, email="grace.other@example.com")

    def ids(query: str) -> list[int]:
        response = api.get(f"{url(newsletter)}?{query}")
        assert response.status_code == 200
        return [item["id"] for item in response.json()["data"]]

    assert ids("status=unconfirmed") == [unconfirmed.pk]
    assert ids("email=%20Grace@Example.COM%20") == [confirmed.pk]
    assert ids("email=grace@example.com&status=unconfirmed") == []
    assert ids("email=nobody@example.com") == []
    assert len(ids("status=&email=")) == 3  # an empty value is no filter


def test_a_status_that_does_not_exist_is_a_validation_error_naming_the_field(api, newsletter):
    response = api.get(f"{url(newsletter)}?status=bounced")

    assert response.status_code == 400
    assert (error(response)["code"], error(response)["details"]["field"]) == ("VALIDATION_ERROR", "status")


def test_the_list_pages_as_posts_do_and_a_cursor_walks_it_whole_once(api, newsletter):
    subscribers = SubscriberFactory.create_batch(7, channel=newsletter)

    page = api.get(f"{url(newsletter)}?per_page=3&page=3").json()
    assert [item["id"] for item in page["data"]] == [subscribers[6].pk]
    assert (page["meta"]["pages"], page["meta"]["count"]) == (3, 7)

    seen, query = [], "limit=3"
    while query:
        body = api.get(f"{url(newsletter)}?{query}").json()
        seen += [item["id"] for item in body["data"]]
        cursor = body["meta"]["next_cursor"]
        query = f"limit=3&cursor={cursor}" if cursor else ""
    assert seen == [subscriber.pk for subscriber in subscribers]


def test_a_cursor_of_another_filter_is_refused(api, newsletter):
    SubscriberFactory.create_batch(3, channel=newsletter)
    cursor = api.get(f"{url(newsletter)}?limit=1").json()["meta"]["next_cursor"]

    response = api.get(f"{url(newsletter)}?limit=1&status=confirmed&cursor={cursor}")

    assert response.status_code == 400
    assert error(response)["details"]["field"] == "cursor"


def test_a_page_costs_the_same_number_of_queries_whatever_the_size_of_the_list(api, newsletter):
    SubscriberFactory.create_batch(3, channel=newsletter)
    api.get(url(newsletter))  # the key's first use records it; count the queries of the next

    def queries() -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            assert api.get(url(newsletter)).status_code == 200
        return [query["sql"] for query in captured.captured_queries]

    small = queries()
    SubscriberFactory.create_batch(60, channel=newsletter)
    assert len(queries()) == len(small)


# --- who may --------------------------------------------------------------------------------------


def test_read_posts_reaches_no_subscriber_each_operation_needs_its_subscribers_scope(newsletter, client_for):
    subscriber = SubscriberFactory(channel=newsletter)
    user = UserFactory(account=newsletter.account)
    others = [scope for scope in ALL_SCOPES if scope not in (Scope.READ_SUBSCRIBERS, Scope.WRITE_SUBSCRIBERS)]
    without = client_for(ApiKeyFactory(user=user, scopes=others))
    reader = client_for(ApiKeyFactory(user=user, scopes=[Scope.READ_SUBSCRIBERS]))
    refused = [
        (without, without.get(url(newsletter)), "read:subscribers"),
        (without, without.get(url(newsletter, subscriber)), "read:subscribers"),
        *[
            (client, call, "write:subscribers")
            for client in (without, reader)
            for call in (
                client.post(url(newsletter), {"email": "new@example.com"}, format="json"),
                client.delete(url(newsletter, subscriber)),
            )
        ],
    ]

    for _, response, needed in refused:
        assert response.status_code == 403
        assert error(response)["code"] == "insufficient_scope"
        assert f"'{needed}'" in error(response)["message"]
    assert without.head(url(newsletter)).status_code == 403  # HEAD is GET without the body: GET's scope
    assert reader.get(url(newsletter)).status_code == 200
    assert reader.get(url(newsletter, subscriber)).status_code == 200
    assert Subscriber.objects.filter(pk=subscriber.pk).exists()
    assert not Subscriber.objects.filter(email="new@example.com").exists()


def test_another_accounts_newsletter_and_a_channel_that_is_not_a_newsletter_are_not_found(api, newsletter):
    foreign = SubscriberFactory()  # of another account's newsletter
    blog = ChannelFactory(account=newsletter.account, platform="blog")

    for channel, subscriber in ((foreign.channel, foreign), (blog, foreign)):
        for response in (
            api.get(url(channel)),
            api.get(url(channel, subscriber)),
            api.post(url(channel), {"email": "new@example.com"}, format="json"),
            api.delete(url(channel, subscriber)),
        ):
            assert response.status_code == 404
            assert error(response) == {"code": "not_found", "message": error(response)["message"]}
    assert Subscriber.objects.filter(pk=foreign.pk).exists()
    assert not Subscriber.objects.filter(email="new@example.com").exists()


def test_a_subscriber_of_another_channel_of_the_account_is_not_found(api, newsletter):
    sibling = SubscriberFactory(channel=NewsletterChannelFactory(account=newsletter.account))

    for response in (api.get(url(newsletter, sibling)), api.delete(url(newsletter, sibling))):
        assert response.status_code == 404
        assert error(response) == {"code": "not_found", "message": "Subscriber not found."}
    assert Subscriber.objects.filter(pk=sibling.pk).exists()


# --- adding -------------------------------------------------------------------------------------


def test_a_person_added_unconfirmed_is_sent_the_confirmation_email_and_nothing_else(
    api, newsletter, confirmations, emitted, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url(newsletter), {"email": " Lin@Example.com ", "name": "Lin"}, format="json")

    assert response.status_code == 201
    data = response.json()["data"]
    subscriber = Subscriber.objects.get(channel=newsletter)
    assert data == {**data, "id": subscriber.pk, "email": "lin@example.com", "name": "Lin", "status": "unconfirmed"}
    assert (data["confirmed_at"], data["unsubscribed_at"]) == (None, None)
    assert confirmations == [[subscriber.pk]]
    assert emitted("subscriber.confirmed") == []


def test_a_person_who_opted_in_elsewhere_is_confirmed_at_once_without_an_email(
    api, newsletter, confirmations, emitted, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(url(newsletter), {"email": "mo@example.com", "confirmed": True}, format="json")

    assert response.status_code == 201
    data = response.json()["data"]
    assert (data["status"], data["name"]) == ("confirmed", "")
    assert UTC_TIME.match(data["confirmed_at"])
    assert confirmations == []
    [event] = emitted("subscriber.confirmed")
    assert event["data"] == {
        "subscriber": data,
        "channel": {"id": newsletter.pk, "title": "Weekly Letter", "platform": "newsletter"},
    }


@pytest.mark.parametrize("role", [Role.VIEWER, Role.EDITOR])
def test_only_an_admins_key_adds_a_person_as_confirmed_others_add_them_to_confirm_by_email(
    newsletter, client_for, confirmations, emitted, role, django_capture_on_commit_callbacks
):
    member = UserFactory(account=newsletter.account, role=role)
    theirs = client_for(ApiKeyFactory(user=member, scopes=[Scope.WRITE_SUBSCRIBERS]))
    admin = AdminUserFactory(account=newsletter.account)
    admins = client_for(ApiKeyFactory(user=admin, scopes=[Scope.WRITE_SUBSCRIBERS]))

    with django_capture_on_commit_callbacks(execute=True):
        refused = theirs.post(url(newsletter), {"email": "never-asked@example.com", "confirmed": True}, format="json")
        pending = theirs.post(url(newsletter), {"email": "asks@example.com"}, format="json")
        confirmed = admins.post(url(newsletter), {"email": "opted-in@example.com", "confirmed": True}, format="json")

    assert refused.status_code == 403
    assert error(refused)["code"] == "admin_required" and "admin" in error(refused)["message"]
    assert not Subscriber.objects.filter(email="never-asked@example.com").exists()
    assert (pending.status_code, pending.json()["data"]["status"]) == (201, "unconfirmed")
    assert (confirmed.status_code, confirmed.json()["data"]["status"]) == (201, "confirmed")
    assert confirmations == [[pending.json()["data"]["id"]]]
    assert [event["data"]["subscriber"]["email"] for event in emitted("subscriber.confirmed")] == [
        "opted-in@example.com"
    ]


def test_an_address_already_on_the_list_is_a_conflict_in_any_case(api, newsletter):
    SubscriberFactory(channel=newsletter, email="ada@example.com", status="unconfirmed")

    response = api.post(url(newsletter), {"email": "ADA@example.com", "confirmed": True}, format="json")

    assert response.status_code == 409
    assert error(response)["code"] == "conflict"
    assert error(response)["details"] == {"reason": "exists"}
    assert Subscriber.objects.get(channel=newsletter).status == "unconfirmed"


@pytest.mark.parametrize("reason", SuppressionReason.values)
def test_an_address_that_unsubscribed_bounced_or_complained_is_never_turned_back_on(api, newsletter, reason):
    suppress(account_id=newsletter.account_id, channel=newsletter, email="gone@example.com", reason=reason)

    for confirmed in (False, True):
        response = api.post(url(newsletter), {"email": "Gone@example.com", "confirmed": confirmed}, format="json")
        assert response.status_code == 409
        assert (error(response)["code"], error(response)["details"]) == ("conflict", {"reason": reason})
    assert not Subscriber.objects.filter(channel=newsletter).exists()


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({}, "email", "required"),
        ({"email": "not an address"}, "email", "invalid"),
        ({"email": 42}, "email", "invalid"),
        ({"email": "a@example.com", "confirmed": "yes"}, "confirmed", "invalid"),
        ({"email": "a@example.com", "name": "n" * 201}, "name", "max_length"),
        ({"email": "a@example.com", "status": "confirmed"}, "status", "unknown_field"),
    ],
)
def test_a_bad_body_is_a_validation_error_naming_the_field_and_adds_nobody(api, newsletter, body, field, rule):
    response = api.post(url(newsletter), body, format="json")

    assert response.status_code == 400
    assert (error(response)["details"]["field"], error(response)["details"]["rule"]) == (field, rule)
    assert not Subscriber.objects.exists()


# --- erasing ------------------------------------------------------------------------------------


def test_erasing_a_person_keeps_their_unsubscribe_so_they_cannot_be_added_back(api, newsletter):
    subscriber = SubscriberFactory(channel=newsletter, email="left@example.com")
    subscriber_unsubscribe(token=subscriber.token)

    response = api.delete(url(newsletter, subscriber))

    assert (response.status_code, response.content) == (204, b"")
    assert not Subscriber.objects.filter(pk=subscriber.pk).exists()
    assert api.get(url(newsletter, subscriber)).status_code == 404
    assert api.delete(url(newsletter, subscriber)).status_code == 404
    again = api.post(url(newsletter), {"email": "left@example.com", "confirmed": True}, format="json")
    assert (again.status_code, error(again)["details"]) == (409, {"reason": "unsubscribed"})
    # Their unsubscribe link keeps working, and does nothing more.
    assert subscriber_unsubscribe(token=subscriber.token) is None


def test_erasing_a_person_who_never_left_lets_them_be_added_again(api, newsletter):
    subscriber = SubscriberFactory(channel=newsletter, email="back@example.com")

    assert api.delete(url(newsletter, subscriber)).status_code == 204
    assert api.post(url(newsletter), {"email": "back@example.com", "confirmed": True}, format="json").status_code == 201
