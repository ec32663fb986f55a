"""Simultaneous requests that race for one state change, over real HTTP to a live server (one thread
and one database connection per request): row locks and conditional updates let exactly one win."""

import time

import pytest
import requests
from django.contrib.sessions.models import Session
from django.utils import timezone

from apps.posts import api_workflow
from apps.users import credentials as account_services
from apps.webhooks.models import Event
from tests.conftest import requires_postgres, run_together
from tests.factories import ApiKeyFactory, ApiPublicationFactory, ChannelFactory, SsoTokenFactory, UserFactory

pytestmark = [pytest.mark.reliability, requires_postgres, pytest.mark.django_db(transaction=True)]

CALLS = 20


@pytest.fixture
def slow_transition(monkeypatch):
    """Widen the window between reading the post and writing it, so the calls are inside it at once;
    without the lock several would read `publishing_pending` and succeed."""
    original = api_workflow.put_state

    def slow(post, status, **kwargs):
        time.sleep(0.3)
        original(post, status, **kwargs)

    monkeypatch.setattr(api_workflow, "put_state", slow)


@pytest.fixture
def pending_post():
    key = ApiKeyFactory()
    post = ApiPublicationFactory(post__channel=ChannelFactory(account=key.account, platform="api")).post
    return key, post


def test_twenty_simultaneous_publishes_give_exactly_one_200(slow_transition, pending_post, live_server):
    key, post = pending_post
    url = f"{live_server.url}/v1/channels/{post.channel_id}/posts/{post.id}/publish"
    headers = {"Authorization": f"Bearer {key.raw}"}

    def publish(external_id):
        return lambda: requests.patch(url, json={"post": {"external_id": external_id}}, headers=headers, timeout=30)

    responses = run_together([publish(f"ext-{n}") for n in range(CALLS)])

    assert sorted(response.status_code for response in responses) == [200] + [422] * (CALLS - 1)
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 422} == {"invalid_status"}
    [winner] = [response for response in responses if response.status_code == 200]
    post.refresh_from_db()
    assert post.publication_status == "published"
    # The stored reference is the winner's, not overwritten by a loser; one event was written.
    assert post.external_id == winner.json()["data"]["external_id"]
    assert Event.objects.filter(kind="post.published", post_id=post.id).count() == 1


class SlowClock:
    """Stands in for django.utils.timezone in the SSO services: every redemption reads the token,
    then waits here, so all of them have seen it unused before any claims it."""

    def now(self):
        time.sleep(0.3)
        return timezone.now()


def test_twenty_simultaneous_redemptions_of_one_sso_token_sign_in_at_most_once(emitted, monkeypatch, live_server):
    user = UserFactory()
    token = SsoTokenFactory(user=user)
    monkeypatch.setattr(account_services, "timezone", SlowClock())
    url = f"{live_server.url}/sso/login?token={token.raw}"

    def redeem():
        return requests.get(url, allow_redirects=False, timeout=30)

    responses = run_together([redeem] * CALLS)

    assert sorted(response.status_code for response in responses) == [302] + [410] * (CALLS - 1)
    assert [r for r in responses if "sessionid" in r.cookies] == [r for r in responses if r.status_code == 302]
    signed_in = [s for s in Session.objects.all() if s.get_decoded().get("_auth_user_id") == str(user.pk)]
    assert len(signed_in) == 1
    assert len(emitted("user.login")) == 1
