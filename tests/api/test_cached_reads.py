"""Cached reads ask the database nothing, and every change is seen at the next request.

These tests commit (transaction=True): the shared cache's entries are invalidated by the database's
notifications, which PostgreSQL sends only when a transaction commits (apps/core/coherence.py).
"""

import threading
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core import coherence
from apps.users.credentials import api_key_revoke
from apps.users.models import ApiKey
from tests.factories import ApiKeyFactory, ChannelFactory, PostFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not coherence.configured(), reason="needs PostgreSQL and Redis; set DATABASE_URL and REDIS_URL"),
]


@pytest.fixture
def world(client_for):
    key = ApiKeyFactory()
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)
    return SimpleNamespace(key=key, channel=channel, post=post, client=client_for(key))


def queries_of(client, path) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    return len(captured), response


@pytest.mark.parametrize(
    "path",
    [
        "/v1/channels/{channel}/posts",
        "/v1/channels/{channel}/posts?per_page=100",
        "/v1/channels/{channel}/posts/{post}",
        "/v1/posts/{post}",
        "/v1/channels/{channel}",
        "/v1/me",
    ],
)
def test_a_repeated_read_asks_the_database_nothing(world, path):
    path = path.format(channel=world.channel.pk, post=world.post.pk)
    first = world.client.get(path)
    assert first.status_code == 200
    # The first request recorded the key's use, which renewed its entry: the second fills it.
    world.client.get(path)
    count, again = queries_of(world.client, path)
    assert again.status_code == 200
    assert again.content == first.content
    assert count == 0


def test_a_revoked_key_is_refused_at_its_very_next_request(world):
    assert world.client.get("/v1/me").status_code == 200
    api_key_revoke(api_key=ApiKey.objects.get(pk=world.key.pk))
    response = world.client.get(f"/v1/channels/{world.channel.pk}/posts")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This API key has been revoked."


def test_a_key_without_the_scope_any_more_is_refused_at_its_next_request(world):
    assert world.client.get(f"/v1/channels/{world.channel.pk}/posts").status_code == 200
    ApiKey.objects.filter(pk=world.key.pk).update(scopes=["read:channels"])
    assert world.client.get(f"/v1/channels/{world.channel.pk}/posts").status_code == 403


def test_a_key_made_to_expire_is_refused_at_its_next_request(world):
    assert world.client.get("/v1/me").status_code == 200
    ApiKey.objects.filter(pk=world.key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert world.client.get("/v1/me").status_code == 401


def test_an_edited_post_shows_at_the_next_read(world):
    assert (
        world.client.get(f"/v1/channels/{world.channel.pk}/posts/{world.post.pk}").json()["data"]["title"]
        == world.post.title
    )
    type(world.post).objects.filter(pk=world.post.pk).update(title="Changed")
    assert (
        world.client.get(f"/v1/channels/{world.channel.pk}/posts/{world.post.pk}").json()["data"]["title"] == "Changed"
    )
    assert world.client.get(f"/v1/posts/{world.post.pk}").json()["data"]["title"] == "Changed"


def test_concurrent_misses_of_one_page_compute_it_once(world, monkeypatch):
    from apps.posts import api

    computed = []
    original = api.channel_posts_page

    def counted(**kwargs):
        computed.append(1)
        return original(**kwargs)

    monkeypatch.setattr(api, "channel_posts_page", counted)
    barrier = threading.Barrier(6)
    answers = []

    def read():
        barrier.wait()
        answers.append(world.client.get(f"/v1/channels/{world.channel.pk}/posts").status_code)
        connection.close()

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200] * 6
    assert len(computed) == 1


def test_a_blog_page_served_again_asks_the_database_nothing(world, client):
    channel = type(world.channel).objects.get(pk=world.channel.pk)
    path = f"/blog/{channel.handle}/"
    first = client.get(path)
    assert first.status_code == 200
    count, again = queries_of(client, path)
    assert again.content == first.content
    assert count == 0


def test_a_renamed_blog_shows_its_new_title_at_the_next_request(world, client):
    channel = type(world.channel).objects.get(pk=world.channel.pk)
    assert client.get(f"/blog/{channel.handle}/").status_code == 200
    type(channel).objects.filter(pk=channel.pk).update(title="A new name")
    assert "A new name" in client.get(f"/blog/{channel.handle}/").content.decode()
