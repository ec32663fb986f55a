"""A channel's representations (the channel, its posts list pages, each post) are served from the
cache while the channel's version stands, and the cache changes nothing else a client sees."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.api import representations
from apps.posts.services import post_update_content
from tests.factories import ApiKeyFactory, ApiPublicationFactory, ChannelFactory, MediaFactory, PostFactory, TagFactory

pytestmark = pytest.mark.django_db

# Headers that differ between any two responses, cached or not.
PER_RESPONSE = {"X-Request-ID", "X-RateLimit-Remaining"}


@pytest.fixture
def post(api_key):
    channel = ChannelFactory(account=api_key.account)
    post = PostFactory(channel=channel, tags=TagFactory.create_batch(2, account=channel.account))
    MediaFactory(post=post)
    return post


def urls_of(post) -> list[str]:
    return [
        f"/v1/channels/{post.channel_id}",
        f"/v1/channels/{post.channel_id}/posts",
        f"/v1/channels/{post.channel_id}/posts?per_page=1&page=1",
        f"/v1/channels/{post.channel_id}/posts?publication_status=draft&tag={post.tags.first().name}",
        f"/v1/channels/{post.channel_id}/posts/{post.pk}",
        f"/v1/posts/{post.pk}",
    ]


def queries_of(request) -> tuple:
    with CaptureQueriesContext(connection) as queries:
        response = request()
    return response, [query["sql"] for query in queries.captured_queries]


# The lookups that find what to serve: a channel's version, and the channel of a post.
LOOKUPS = ("channels_channel", 'SELECT "posts_post"."id", "posts_post"."channel_id" FROM "posts_post" WHERE')


def reads_posts(sql: list[str]) -> bool:
    return any('FROM "posts_' in statement for statement in sql if not any(lookup in statement for lookup in LOOKUPS))


def test_a_repeated_read_is_served_from_the_cache_with_the_same_bytes_and_headers(authed, post):
    for url in urls_of(post):
        first = authed.get(url)
        second, sql = queries_of(lambda url=url: authed.get(url))
        assert first.status_code == second.status_code == 200, url
        assert second.content == first.content, url
        assert not reads_posts(sql), url
        assert {k: v for k, v in second.headers.items() if k not in PER_RESPONSE} == {
            k: v for k, v in first.headers.items() if k not in PER_RESPONSE
        }, url


def test_if_none_match_gets_its_304_from_the_cache(authed, post):
    for url in urls_of(post):
        etag = authed.get(url)["ETag"]
        response, sql = queries_of(lambda url=url, etag=etag: authed.get(url, HTTP_IF_NONE_MATCH=etag))
        assert response.status_code == 304, url
        assert response.content == b""
        assert not reads_posts(sql)


def test_a_change_is_seen_by_the_next_read(authed, post, settings):
    etags = {url: authed.get(url)["ETag"] for url in urls_of(post)}
    post_update_content(post=post, title="A new title")
    for url in urls_of(post)[1:]:  # all but the channel's own page show the post's title
        response = authed.get(url, HTTP_IF_NONE_MATCH=etags[url])
        assert response.status_code == 200, url
        assert "A new title" in response.content.decode()
        assert authed.get(url).content == response.content
    settings.API_CACHE_SECONDS = 0
    assert authed.get(urls_of(post)[0])["ETag"] == etags[urls_of(post)[0]]  # unchanged, so still a 304


def test_the_publish_call_s_change_is_seen_at_once(authed, api_key):
    post = ApiPublicationFactory(post__channel__account=api_key.account, post__channel__platform="api").post
    url = f"/v1/channels/{post.channel_id}/posts/{post.pk}"
    assert authed.get(url).json()["data"]["publication_status"] == "publishing_pending"
    authed.patch(f"{url}/publish", {"post": {"external_id": "x-1"}}, format="json")
    data = authed.get(url).json()["data"]
    assert (data["publication_status"], data["external_id"]) == ("published", "x-1")


def test_another_account_s_key_still_gets_404_for_what_is_cached(authed, client_for, post):
    for url in urls_of(post):
        assert authed.get(url).status_code == 200
    stranger = client_for(ApiKeyFactory())
    for url in urls_of(post):
        response = stranger.get(url)
        assert response.status_code == 404, url
        assert response.json()["error"]["code"] == "not_found"


def test_scopes_and_rate_limits_apply_to_cached_reads(authed, api_client, client_for, api_key, post):
    url = f"/v1/channels/{post.channel_id}/posts"
    first = authed.get(url)
    second = authed.get(url)
    assert int(second["X-RateLimit-Remaining"]) == int(first["X-RateLimit-Remaining"]) - 1
    no_scope = client_for(ApiKeyFactory(user=api_key.user, account=api_key.account, scopes=["read:channels"]))
    response = no_scope.get(url)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"
    assert api_client.get(url, HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert api_client.get(url).status_code == 401


def test_a_bad_query_is_still_a_400_and_is_never_cached(authed, post):
    url = f"/v1/channels/{post.channel_id}/posts?per_page=0"
    for _ in range(2):
        response = authed.get(url)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "VALIDATION_ERROR"


def test_each_query_string_and_media_type_has_its_own_entry(authed, post):
    url = f"/v1/channels/{post.channel_id}/posts"
    plain = authed.get(url).content
    indented = authed.get(url, HTTP_ACCEPT="application/json; indent=2").content
    assert indented != plain and b"\n  " in indented
    assert authed.get(url).content == plain
    assert authed.get(f"{url}?per_page=1").json()["meta"]["per_page"] == 1


def test_without_a_cache_lifetime_nothing_is_cached(authed, post, settings):
    settings.API_CACHE_SECONDS = 0
    url = f"/v1/channels/{post.channel_id}/posts/{post.pk}"
    authed.get(url)
    _, sql = queries_of(lambda: authed.get(url))
    assert reads_posts(sql)


def test_an_unreachable_cache_serves_computed_responses(authed, post, monkeypatch, caplog):
    def unreachable(*args):
        raise ConnectionError("cache down")

    monkeypatch.setattr(representations.RepresentationStore, "_read", staticmethod(unreachable))
    monkeypatch.setattr(representations.RepresentationStore, "_write", staticmethod(unreachable))
    url = f"/v1/channels/{post.channel_id}/posts"
    assert authed.get(url).status_code == 200
    assert authed.get(url).status_code == 200
    assert "Representation cache unreachable" in caplog.text


def test_the_key_changes_with_the_code_and_settings_that_shape_the_bytes(settings):
    before = representations.code_digest()
    representations.code_digest.cache_clear()
    settings.PAGE_SIZE_MAX = 50
    try:
        assert representations.code_digest() != before
    finally:
        representations.code_digest.cache_clear()
