from datetime import timedelta

import pytest
from dateutil.parser import isoparse
from django.utils import timezone

from apps.posts.models import ApiPublication, Post
from tests.factories import (
    AccountFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
)

pytestmark = pytest.mark.django_db

WORKFLOW_FIELDS = {
    "id",
    "title",
    "teaser",
    "slug",
    "publication_status",
    "created_at",
    "updated_at",
    "channel",
    "body",
    "published_at",
    "tags",
    "media",
    "meta_title",
    "meta_description",
    "external_id",
    "external_url",
}


def publish_url(post: Post, channel_id: int | None = None) -> str:
    return f"/v1/channels/{channel_id or post.channel_id}/posts/{post.id}/publish"


def unpublish_url(post: Post, channel_id: int | None = None) -> str:
    return f"/v1/channels/{channel_id or post.channel_id}/posts/{post.id}/unpublish"


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content
    return response.json()["error"]


@pytest.fixture
def api_channel(api_key):
    return ChannelFactory(account=api_key.account, platform="api", title="Partner Feed")


@pytest.fixture
def pending(api_channel):
    """A publishing_pending post with its publication record."""
    return ApiPublicationFactory(post__channel=api_channel).post


@pytest.fixture
def published(api_channel):
    record = ApiPublicationFactory(
        post__channel=api_channel,
        post__publication_status="published",
        post__published_at=timezone.now() - timedelta(days=1),
        post__external_id="ext-1",
        post__external_url="https://partner.example.com/1",
        confirmed_at=timezone.now() - timedelta(days=1),
        external_id="ext-1",
        external_url="https://partner.example.com/1",
    )
    return record.post


# --- publish: success ---


def test_publish_confirms_a_pending_post_with_external_references(authed, pending):
    before = timezone.now()
    response = authed.patch(
        publish_url(pending),
        {"post": {"external_id": "partner-42", "external_url": "https://partner.example.com/42"}},
        format="json",
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == WORKFLOW_FIELDS
    assert data["publication_status"] == "published"
    assert before <= isoparse(data["published_at"]) <= timezone.now()
    assert data["external_id"] == "partner-42"
    assert data["external_url"] == "https://partner.example.com/42"
    assert data["channel"] == {"id": pending.channel_id, "title": "Partner Feed", "platform": "api"}
    pending.refresh_from_db()
    assert pending.publication_status == "published"
    assert pending.published_at == isoparse(data["published_at"])
    assert (pending.external_id, pending.external_url) == ("partner-42", "https://partner.example.com/42")
    record = ApiPublication.objects.get(post=pending)
    assert record.confirmed_at == pending.published_at
    assert (record.external_id, record.external_url) == ("partner-42", "https://partner.example.com/42")


def test_publish_response_carries_the_posts_tags_and_media(authed, pending):
    tag = TagFactory(account=pending.channel.account, name="news")
    pending.tags.set([tag])
    media = MediaFactory(post=pending)
    data = authed.patch(publish_url(pending)).json()["data"]
    assert data["tags"] == [{"id": tag.id, "name": "news"}]
    assert [m["id"] for m in data["media"]] == [media.id]
    assert data["title"] == pending.title
    assert data["body"] == pending.body


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"data": {}, "format": "json"},
        {"data": {"post": {}}, "format": "json"},
        {"data": {"post": None}, "format": "json"},
        {"data": "", "content_type": "application/json"},
        {"data": {"post": {"external_id": None, "external_url": None}}, "format": "json"},
    ],
    ids=["no-body", "empty-object", "empty-post", "null-post", "empty-string-body", "null-fields"],
)
def test_publish_without_external_fields_stores_nulls(authed, pending, kwargs):
    response = authed.patch(publish_url(pending), **kwargs)
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["publication_status"] == "published"
    assert data["published_at"] is not None
    assert data["external_id"] is None
    assert data["external_url"] is None


def test_publish_with_only_external_id(authed, pending):
    data = authed.patch(publish_url(pending), {"post": {"external_id": "only-id"}}, format="json").json()["data"]
    assert (data["external_id"], data["external_url"]) == ("only-id", None)


# --- publish: rules in the spec's order ---


def test_publish_without_write_posts_is_403_even_for_an_unknown_post(client_for):
    key = ApiKeyFactory(scopes=["read:channels", "read:posts"])
    error = error_of(client_for(key).patch("/v1/channels/424242/posts/1/publish"), 403)
    assert error["code"] == "insufficient_scope"
    assert "write:posts" in error["message"]


def test_publish_needs_a_key(api_client, pending):
    assert api_client.patch(publish_url(pending)).status_code == 401
    pending.refresh_from_db()
    assert pending.publication_status == "publishing_pending"


def test_publish_of_an_unknown_channel_is_404_resource_not_found(authed, pending):
    error = error_of(authed.patch(publish_url(pending, channel_id=424242)), 404)
    assert error == {"code": "not_found", "message": "Resource not found."}


def test_publish_of_an_unknown_post_is_404_post_not_found(authed, api_channel):
    error = error_of(authed.patch(f"/v1/channels/{api_channel.id}/posts/424242/publish"), 404)
    assert error == {"code": "not_found", "message": "Post not found."}


def test_publish_of_a_post_of_another_channel_is_404(authed, pending, api_key):
    other_channel = ChannelFactory(account=api_key.account, platform="api")
    error = error_of(authed.patch(publish_url(pending, channel_id=other_channel.id)), 404)
    assert error["message"] == "Post not found."
    pending.refresh_from_db()
    assert pending.publication_status == "publishing_pending"


def test_publish_of_another_accounts_post_is_404_not_403(authed):
    foreign = ApiPublicationFactory(post__channel__account=AccountFactory()).post
    error = error_of(authed.patch(publish_url(foreign)), 404)
    assert error["code"] == "not_found"
    foreign.refresh_from_db()
    assert foreign.publication_status == "publishing_pending"


@pytest.mark.parametrize("platform", ["blog", "git", "linkedin"])
def test_publish_on_a_direct_channel_is_only_api_platform(authed, api_key, platform):
    post = PostFactory(channel=ChannelFactory(account=api_key.account, platform=platform))
    error = error_of(authed.patch(publish_url(post)), 422)
    assert error["code"] == "only_api_platform"


def test_platform_rule_comes_before_status_rule(authed, api_key):
    # A draft post on a blog: both the platform and the status are wrong; the platform wins.
    post = PostFactory(channel=ChannelFactory(account=api_key.account, platform="blog"), publication_status="draft")
    assert error_of(authed.patch(publish_url(post)), 422)["code"] == "only_api_platform"
    assert error_of(authed.patch(unpublish_url(post)), 422)["code"] == "only_api_platform"


def test_platform_rule_comes_before_the_record_rule(authed, api_key):
    # Pending on a blog, with a record (left over from when the channel was api): still the platform.
    record = ApiPublicationFactory(post__channel=ChannelFactory(account=api_key.account, platform="blog"))
    assert error_of(authed.patch(publish_url(record.post)), 422)["code"] == "only_api_platform"


def test_not_found_comes_before_platform(authed, api_key):
    blog = ChannelFactory(account=api_key.account, platform="blog")
    error = error_of(authed.patch(f"/v1/channels/{blog.id}/posts/424242/publish"), 404)
    assert error["message"] == "Post not found."


@pytest.mark.parametrize("status", ["draft", "scheduled", "published"])
def test_publish_of_a_post_not_pending_is_invalid_status(authed, api_channel, status):
    record = ApiPublicationFactory(post__channel=api_channel, post__publication_status=status)
    error = error_of(authed.patch(publish_url(record.post)), 422)
    assert error["code"] == "invalid_status"
    assert "publishing_pending" in error["message"]


def test_status_rule_comes_before_the_record_rule(authed, api_channel):
    draft_without_record = PostFactory(channel=api_channel, publication_status="draft")
    assert error_of(authed.patch(publish_url(draft_without_record)), 422)["code"] == "invalid_status"


def test_publish_of_a_pending_post_without_record_is_no_publication(authed, api_channel):
    post = PostFactory(channel=api_channel, publication_status="publishing_pending")
    error = error_of(authed.patch(publish_url(post)), 422)
    assert error["code"] == "no_publication"
    post.refresh_from_db()
    assert post.publication_status == "publishing_pending"
    assert post.published_at is None


def test_rejected_publish_changes_nothing(authed, published):
    before = Post.objects.filter(pk=published.pk).values().get()
    authed.patch(publish_url(published), {"post": {"external_id": "other"}}, format="json")
    assert Post.objects.filter(pk=published.pk).values().get() == before


# --- publish: body validation ---


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"post": "ext-1"}, "post", "invalid"),
        ({"post": ["ext-1"]}, "post", "invalid"),
        ({"post": {"external_id": 42}}, "post.external_id", "invalid"),
        ({"post": {"external_id": True}}, "post.external_id", "invalid"),
        ({"post": {"external_url": ["https://x.example"]}}, "post.external_url", "invalid"),
        ({"post": {"external_url": "ftp://files.example.com/a"}}, "post.external_url", "invalid"),
        ({"post": {"external_url": "javascript:alert(1)"}}, "post.external_url", "invalid"),
        ({"post": {"external_url": "not a url"}}, "post.external_url", "invalid"),
        ({"post": {"external_id": ""}}, "post.external_id", "blank"),
        ({"post": {"external_id": "x" * 256}}, "post.external_id", "max_length"),
        ({"post": {"external_url": "https://x.example/" + "a" * 2000}}, "post.external_url", "max_length"),
        ({"external_id": "ext-1"}, "external_id", "unknown_field"),
        ({"post": {"externalUrl": "https://x.example"}}, "post.externalUrl", "unknown_field"),
        ([], None, "invalid"),
    ],
)
def test_publish_rejects_a_malformed_body_with_validation_error(authed, pending, body, field, rule):
    error = error_of(authed.patch(publish_url(pending), body, format="json"), 400)
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == field
    assert error["details"]["rule"] == rule
    pending.refresh_from_db()
    assert pending.publication_status == "publishing_pending"


@pytest.mark.parametrize("raw", ["{not json", "null", '"text"', "42"])
def test_publish_rejects_a_body_that_is_not_a_json_object(authed, pending, raw):
    error = error_of(authed.patch(publish_url(pending), raw, content_type="application/json"), 400)
    assert error["code"] == "VALIDATION_ERROR"


def test_publish_accepts_the_longest_allowed_values(authed, pending):
    url = "https://x.example/" + "a" * (2000 - len("https://x.example/"))
    response = authed.patch(
        publish_url(pending), {"post": {"external_id": "x" * 255, "external_url": url}}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["data"]["external_url"] == url


def test_publish_with_a_non_json_content_type_is_415(authed, pending):
    response = authed.patch(publish_url(pending), "external_id=1", content_type="application/x-www-form-urlencoded")
    assert error_of(response, 415)["code"] == "unsupported_media_type"


# --- unpublish ---


def test_unpublish_reverts_a_published_post_to_draft(authed, published):
    response = authed.patch(unpublish_url(published))
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == WORKFLOW_FIELDS
    assert data["publication_status"] == "draft"
    assert data["published_at"] is None
    assert data["external_id"] is None
    assert data["external_url"] is None
    assert data["channel"] == {"id": published.channel_id, "title": "Partner Feed", "platform": "api"}
    published.refresh_from_db()
    assert (published.publication_status, published.published_at) == ("draft", None)
    assert (published.external_id, published.external_url) == (None, None)
    record = ApiPublication.objects.get(post=published)
    assert (record.confirmed_at, record.external_id, record.external_url) == (None, None, None)


def test_unpublish_ignores_any_body(authed, published):
    response = authed.patch(unpublish_url(published), "{not json", content_type="application/json")
    assert response.status_code == 200
    assert response.json()["data"]["publication_status"] == "draft"


def test_unpublish_without_write_posts_is_403(client_for, published):
    key = ApiKeyFactory(user__account=published.channel.account, scopes=["read:posts", "read:channels"])
    assert error_of(client_for(key).patch(unpublish_url(published)), 403)["code"] == "insufficient_scope"


def test_unpublish_of_unknown_channel_or_post_is_404(authed, published):
    assert error_of(authed.patch(unpublish_url(published, channel_id=424242)), 404)["message"] == "Resource not found."
    missing = f"/v1/channels/{published.channel_id}/posts/424242/unpublish"
    assert error_of(authed.patch(missing), 404)["message"] == "Post not found."


def test_unpublish_of_another_accounts_post_is_404(authed):
    foreign = ApiPublicationFactory(post__channel__account=AccountFactory(), post__publication_status="published").post
    assert error_of(authed.patch(unpublish_url(foreign)), 404)["code"] == "not_found"


def test_unpublish_on_a_direct_channel_is_only_api_platform(authed, api_key):
    post = PostFactory(
        channel=ChannelFactory(account=api_key.account, platform="git"),
        publication_status="published",
        published_at=timezone.now(),
    )
    assert error_of(authed.patch(unpublish_url(post)), 422)["code"] == "only_api_platform"


@pytest.mark.parametrize("status", ["draft", "scheduled", "publishing_pending"])
def test_unpublish_of_a_post_not_published_is_invalid_status(authed, api_channel, status):
    record = ApiPublicationFactory(post__channel=api_channel, post__publication_status=status)
    error = error_of(authed.patch(unpublish_url(record.post)), 422)
    assert error["code"] == "invalid_status"
    assert "published" in error["message"]


def test_unpublish_of_a_published_post_without_record_is_no_publication(authed, api_channel):
    post = PostFactory(channel=api_channel, publication_status="published", published_at=timezone.now())
    assert error_of(authed.patch(unpublish_url(post)), 422)["code"] == "no_publication"
    post.refresh_from_db()
    assert post.publication_status == "published"


def test_full_cycle_publish_unpublish_and_publish_again(authed, pending):
    assert authed.patch(publish_url(pending), {"post": {"external_id": "a"}}, format="json").status_code == 200
    assert error_of(authed.patch(publish_url(pending)), 422)["code"] == "invalid_status"
    assert authed.patch(unpublish_url(pending)).status_code == 200
    assert error_of(authed.patch(unpublish_url(pending)), 422)["code"] == "invalid_status"


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
def test_other_methods_on_publish_are_405(authed, pending, method):
    assert error_of(getattr(authed, method)(publish_url(pending)), 405)["code"] == "method_not_allowed"
