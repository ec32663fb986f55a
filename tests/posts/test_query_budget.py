"""Every list and detail endpoint runs a fixed number of queries, whatever the page size: no
query per team, channel, tag, media item or count. The cached ones (a channel, its posts) read
their channel's version first, and a repeated read is that one query after the key's."""

import pytest
from django.utils import timezone

from tests.factories import ApiPublicationFactory, ChannelFactory, MediaFactory, PostFactory, TagFactory, TeamFactory

pytestmark = pytest.mark.django_db

# One query authenticates the key (its last use is already recorded by the warm-up request).
AUTH = 1
# A cached representation starts with its channel's version; served from the cache, nothing more.
VERSION = 1


@pytest.fixture
def client(authed):
    authed.get("/v1/me")  # records the key's last use, which is then not written again for a minute
    return authed


def make_channels(account, n: int) -> list:
    channels = []
    for index in range(n):
        team = TeamFactory(account=account) if index % 2 else None
        channel = ChannelFactory(account=account, team=team)
        PostFactory.create_batch(2, channel=channel)
        channels.append(channel)
    return channels


def make_posts(channel, n: int) -> list:
    tags = TagFactory.create_batch(3, account=channel.account)
    posts = PostFactory.create_batch(n, channel=channel, tags=tags)
    for post in posts:
        MediaFactory.create_batch(2, post=post)
    return posts


@pytest.mark.parametrize("n", [1, 100])
def test_channels_list_is_three_queries_at_any_size(client, api_key, django_assert_num_queries, n):
    make_channels(api_key.account, n)
    with django_assert_num_queries(AUTH + 2):  # count, page (team joined, posts_count stored)
        body = client.get("/v1/channels?per_page=100").json()
    assert len(body["data"]) == n
    assert all(item["posts_count"] == 2 for item in body["data"])


def test_channel_detail_is_two_queries(client, api_key, django_assert_num_queries):
    channel = make_channels(api_key.account, 2)[1]
    with django_assert_num_queries(AUTH + VERSION + 1):
        assert client.get(f"/v1/channels/{channel.id}").json()["data"]["team"] is not None
    with django_assert_num_queries(AUTH + VERSION):
        assert client.get(f"/v1/channels/{channel.id}").json()["data"]["team"] is not None


@pytest.mark.parametrize("n", [1, 100])
def test_posts_list_is_three_queries_at_any_size(client, api_key, django_assert_num_queries, n):
    channel = ChannelFactory(account=api_key.account)
    make_posts(channel, n)
    with django_assert_num_queries(AUTH + VERSION + 2):  # channel with its stored count (also the list's), page
        body = client.get(f"/v1/channels/{channel.id}/posts?limit=100").json()
    assert len(body["data"]) == n
    with django_assert_num_queries(AUTH + VERSION):
        assert client.get(f"/v1/channels/{channel.id}/posts?limit=100").json() == body
    assert body["data"][-1]["channel"]["posts_count"] == n == body["meta"]["count"]


@pytest.mark.parametrize("n", [1, 100])
def test_filtered_posts_list_is_four_queries_at_any_size(client, api_key, django_assert_num_queries, n):
    channel = ChannelFactory(account=api_key.account)
    posts = make_posts(channel, n)
    tag = posts[0].tags.first().name
    since = (timezone.now().replace(year=2000)).isoformat()
    query = {"limit": 100, "publication_status": "draft,published", "tag": tag, "updated_since": since}
    with django_assert_num_queries(AUTH + VERSION + 3):  # channel with its stored count, count of the matches, page
        body = client.get(f"/v1/channels/{channel.id}/posts", query).json()
    assert len(body["data"]) == n
    with django_assert_num_queries(AUTH + VERSION):
        assert client.get(f"/v1/channels/{channel.id}/posts", query).json() == body


@pytest.mark.parametrize("n_tags", [1, 30])
def test_post_detail_is_five_queries_whatever_its_tags_and_media(client, api_key, django_assert_num_queries, n_tags):
    channel = ChannelFactory(account=api_key.account)
    post = PostFactory(channel=channel, tags=TagFactory.create_batch(n_tags, account=channel.account))
    MediaFactory.create_batch(n_tags, post=post)
    with django_assert_num_queries(AUTH + VERSION + 4):  # channel, post, tags, media
        data = client.get(f"/v1/channels/{channel.id}/posts/{post.id}").json()["data"]
    assert (len(data["tags"]), len(data["media"])) == (n_tags, n_tags)
    with django_assert_num_queries(AUTH + VERSION + 4):  # post, tags, media, channel
        data = client.get(f"/v1/posts/{post.id}").json()["data"]
    assert (len(data["tags"]), len(data["media"])) == (n_tags, n_tags)
    for url in (f"/v1/channels/{channel.id}/posts/{post.id}", f"/v1/posts/{post.id}"):
        with django_assert_num_queries(AUTH + VERSION):
            assert client.get(url).json()["data"] == data


@pytest.mark.parametrize("n_tags", [1, 30])
def test_publish_and_unpublish_run_a_fixed_number_of_queries(client, api_key, django_assert_num_queries, n_tags):
    record = ApiPublicationFactory(post__channel__account=api_key.account, post__channel__platform="api")
    post = record.post
    post.tags.set(TagFactory.create_batch(n_tags, account=api_key.account))
    MediaFactory.create_batch(n_tags, post=post)
    url = f"/v1/channels/{post.channel_id}/posts/{post.id}"
    # channel, post (locked), record, post update, record update, tags, media; the webhook event:
    # its post with tags, media and channel, the event row, the endpoints; and the service's
    # transaction, a savepoint and its release inside the test's own transaction; the look-up of
    # the story the post belongs to (apps/posts/outcomes.py: none here).
    with django_assert_num_queries(AUTH + 7 + 6 + 2 + 1):
        assert client.patch(f"{url}/publish").status_code == 200
    with django_assert_num_queries(AUTH + 7 + 6 + 2 + 1):
        assert client.patch(f"{url}/unpublish").status_code == 200
