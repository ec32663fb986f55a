import pytest

from tests.api.v1_routes import v1_routes
from tests.factories import ChannelFactory, PostFactory, TagFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_a_get_carries_a_strong_etag(authed):
    etag = authed.get("/v1/me")["ETag"]
    assert etag.startswith('"')
    assert etag.endswith('"')


def test_the_current_etag_gets_304_without_a_body(authed):
    etag = authed.get("/v1/me")["ETag"]
    response = authed.get("/v1/me", HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag


def test_a_304_carries_the_same_http_layer_headers_and_is_counted(authed):
    first = authed.get("/v1/me")
    response = authed.get("/v1/me", HTTP_IF_NONE_MATCH=first["ETag"])
    assert response.status_code == 304
    assert int(response["X-RateLimit-Remaining"]) == int(first["X-RateLimit-Remaining"]) - 1
    assert response["X-RateLimit-Limit"] == first["X-RateLimit-Limit"]
    assert response["X-API-Version"] == "1"
    assert "Authorization" in response["Vary"]
    assert "private" in response["Cache-Control"]


def test_the_etag_changes_when_the_representation_changes(authed, api_key):
    before = authed.get("/v1/me")
    api_key.account.name = "Renamed"
    api_key.account.save()
    after = authed.get("/v1/me", HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert after.json()["data"]["account"]["name"] == "Renamed"
    assert after["ETag"] != before["ETag"]
    assert authed.get("/v1/me", HTTP_IF_NONE_MATCH=after["ETag"]).status_code == 304


@pytest.mark.urls("tests.api.urls")
def test_a_list_etag_changes_when_an_item_is_added(authed):
    before = authed.get("/v1/_test/paged")["ETag"]
    assert authed.get("/v1/_test/paged", HTTP_IF_NONE_MATCH=before).status_code == 304
    UserFactory()
    response = authed.get("/v1/_test/paged", HTTP_IF_NONE_MATCH=before)
    assert response.status_code == 200
    assert response["ETag"] != before


@pytest.mark.urls("tests.api.urls")
def test_pages_of_one_list_have_their_own_etags(authed):
    UserFactory.create_batch(2)
    first, second = authed.get("/v1/_test/paged?per_page=1"), authed.get("/v1/_test/paged?per_page=1&page=2")
    assert first["ETag"] != second["ETag"]
    assert authed.get("/v1/_test/paged?per_page=1&page=2", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 200


def test_any_of_several_etags_matches(authed):
    etag = authed.get("/v1/me")["ETag"]
    assert authed.get("/v1/me", HTTP_IF_NONE_MATCH=f'"other", {etag}').status_code == 304


def test_errors_are_never_answered_with_304(authed):
    response = authed.get("/v1/nothing-here", HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_every_v1_get_that_succeeds_answers_its_etag_with_304(authed):
    succeeded = []
    for route in v1_routes():
        if route.method != "get":
            continue
        response = authed.get(route.path)
        if response.status_code != 200:
            continue
        succeeded.append(route.path)
        again = authed.get(route.path, HTTP_IF_NONE_MATCH=response["ETag"])
        assert again.status_code == 304, route
        assert again.content == b"", route
    assert "/v1/me" in succeeded


def test_a_channel_etag_changes_with_its_posts_count(authed, api_key):
    channel = ChannelFactory(account=api_key.account)
    before = authed.get(f"/v1/channels/{channel.id}")
    assert before.status_code == 200
    PostFactory(channel=channel)
    after = authed.get(f"/v1/channels/{channel.id}", HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert after.json()["data"]["posts_count"] == before.json()["data"]["posts_count"] + 1


def test_a_post_etag_changes_with_its_tags(authed, api_key):
    post = PostFactory(channel=ChannelFactory(account=api_key.account))
    url = f"/v1/channels/{post.channel_id}/posts/{post.id}"
    before = authed.get(url)
    assert authed.get(url, HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 304
    post.tags.add(TagFactory(account=api_key.account))
    after = authed.get(url, HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert len(after.json()["data"]["tags"]) == 1
