"""Two publish calls on one post at the same time: the row lock serialises them, so exactly one
succeeds and the other sees the post already published."""

import time

import pytest

from apps.posts.models import Post
from tests.conftest import requires_postgres, run_together
from tests.factories import ApiKeyFactory, ApiPublicationFactory, ChannelFactory

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def slow_transition(monkeypatch):
    """Widen the window between reading the post and writing it, so both calls are inside it
    at once; without the lock both would read `publishing_pending` and both would succeed."""
    original = Post.mark_published

    def slow(self, **kwargs):
        time.sleep(0.3)
        original(self, **kwargs)

    monkeypatch.setattr(Post, "mark_published", slow)


def test_two_simultaneous_publishes_give_one_200_and_one_invalid_status(slow_transition, client_for):
    key = ApiKeyFactory()
    post = ApiPublicationFactory(post__channel=ChannelFactory(account=key.account, platform="api")).post
    url = f"/v1/channels/{post.channel_id}/posts/{post.id}/publish"

    def publish(external_id):
        return lambda: client_for(key).patch(url, {"post": {"external_id": external_id}}, format="json")

    responses = run_together([publish("first"), publish("second")])

    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200, 422]
    loser = next(response for response in responses if response.status_code == 422)
    assert loser.json()["error"]["code"] == "invalid_status"
    winner = next(response for response in responses if response.status_code == 200)
    post.refresh_from_db()
    assert post.publication_status == "published"
    # The stored reference is the winner's, not overwritten by the loser.
    assert post.external_id == winner.json()["data"]["external_id"]


def test_three_simultaneous_publishes_give_exactly_one_200(slow_transition, client_for):
    key = ApiKeyFactory()
    post = ApiPublicationFactory(post__channel=ChannelFactory(account=key.account, platform="api")).post
    base = f"/v1/channels/{post.channel_id}/posts/{post.id}"
    responses = run_together([lambda: client_for(key).patch(f"{base}/publish")] * 3)
    assert sorted(response.status_code for response in responses) == [200, 422, 422]
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert post.published_at is not None
