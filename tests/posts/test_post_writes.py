"""Posts written over the API: create, edit, schedule and delete, with If-Match against lost updates."""

from datetime import timedelta

import pytest
from dateutil.parser import isoparse
from django.utils import timezone
from django.utils.http import http_date

from apps.posts.models import Post, Tag
from apps.users.models import Permission, Role
from tests.factories import (
    AccountFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    PostFactory,
    TagFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

READ, WRITE, PUBLISH, DELETE = (
    Permission.ARTICLES_READ,
    Permission.ARTICLES_WRITE,
    Permission.ARTICLES_PUBLISH,
    Permission.ARTICLES_DELETE,
)


@pytest.fixture
def api_key(admin_key):
    """A key whose owner may do everything (role admin); the permissions have tests of their own."""
    return admin_key


@pytest.fixture
def channel(api_key):
    return ChannelFactory(account=api_key.account, title="Company Blog")


@pytest.fixture
def api_channel(api_key):
    return ChannelFactory(account=api_key.account, platform="api")


def future(hours: int = 2) -> str:
    return (timezone.now() + timedelta(hours=hours)).isoformat()


def posts_url(channel) -> str:
    return f"/v1/channels/{channel.id}/posts"


def post_url(post) -> str:
    return f"/v1/channels/{post.channel_id}/posts/{post.id}"


def key_with(*permissions: str) -> object:
    return ApiKeyFactory(user=UserFactory(permissions=list(permissions)))


# --- create ----------------------------------------------------------------------------------


def test_a_created_post_answers_201_with_its_single_form_location_and_the_etag_get_sends(authed, channel):
    response = authed.post(
        posts_url(channel),
        {"post": {"title": "Hello world", "body": "# Hi\n\nText.", "teaser": "Short", "tags": ["news", "launch"]}},
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    post = Post.objects.get(pk=data["id"])
    assert post.channel == channel and post.publication_status == "draft"
    assert data["title"] == "Hello world" and data["body"] == "# Hi\n\nText." and data["slug"] == "hello-world"
    assert [tag["name"] for tag in data["tags"]] == ["launch", "news"]
    assert data["scheduled_at"] is None
    assert response["Location"] == f"http://testserver/v1/channels/{channel.id}/posts/{post.id}"
    read = authed.get(post_url(post))
    assert response["ETag"] == read["ETag"]
    assert response.content == read.content


def test_tags_are_the_accounts_own_and_new_names_make_tags(authed, channel):
    existing = TagFactory(account=channel.account, name="news")
    TagFactory(name="launch")  # another account's tag of the same name
    response = authed.post(posts_url(channel), {"post": {"title": "T", "tags": ["news", "launch"]}}, format="json")
    assert response.status_code == 201
    ids = {tag["name"]: tag["id"] for tag in response.json()["data"]["tags"]}
    assert ids["news"] == existing.id
    assert Tag.objects.get(pk=ids["launch"]).account == channel.account


def test_a_post_created_scheduled_keeps_its_time(authed, channel):
    when = future(5)
    response = authed.post(
        posts_url(channel),
        {"post": {"title": "Later", "publication_status": "scheduled", "scheduled_at": when}},
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert data["publication_status"] == "scheduled"
    assert isoparse(data["scheduled_at"]) == isoparse(when)


def test_a_post_created_published_on_a_blog_is_published_at_once_and_says_so(authed, channel, emitted):
    response = authed.post(
        posts_url(channel), {"post": {"title": "Now", "publication_status": "published"}}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["data"]["publication_status"] == "published"
    assert response.json()["data"]["published_at"] is not None
    assert [body["data"]["post"]["id"] for body in emitted("post.published")] == [response.json()["data"]["id"]]


@pytest.mark.parametrize("status", ["published", "publishing_pending"])
def test_an_api_channel_post_cannot_be_created_past_scheduled(authed, api_channel, status):
    response = authed.post(
        posts_url(api_channel), {"post": {"title": "T", "publication_status": status}}, format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_status"
    assert not Post.objects.filter(channel=api_channel).exists()


def test_an_api_channel_post_can_be_scheduled_for_the_content_plan(authed, api_channel):
    body = {"post": {"title": "T", "publication_status": "scheduled", "scheduled_at": future()}}
    response = authed.post(posts_url(api_channel), body, format="json")
    assert response.status_code == 201
    assert response.json()["data"]["publication_status"] == "scheduled"


def test_a_blog_post_cannot_await_an_external_system(authed, channel):
    body = {"post": {"title": "T", "publication_status": "publishing_pending"}}
    response = authed.post(posts_url(channel), body, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_status"


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"post": {"body": "no title"}}, "title", "required"),
        ({"post": {"title": "   "}}, "title", "blank"),
        ({"post": {"title": 12}}, "title", "invalid"),
        ({"post": {"title": "T", "colour": "red"}}, "colour", "unknown_field"),
        ({"post": {"title": "T", "id": 5}}, "id", "read_only"),
        ({"post": {"title": "T", "published_at": "2026-01-01T00:00:00Z"}}, "published_at", "read_only"),
        ({"post": {"title": "T", "external_id": "x"}}, "external_id", "read_only"),
        ({"post": {"title": "T", "channel": 1}}, "channel", "read_only"),
        ({"post": {"title": "T", "slug": "not a slug"}}, "slug", "invalid"),
        ({"post": {"title": "T", "tags": "news"}}, "tags", "not_a_list"),
        ({"post": {"title": "T", "publication_status": "live"}}, "publication_status", "invalid_choice"),
        ({"post": {"title": "T", "publication_status": "scheduled"}}, "scheduled_at", "required"),
        ({"post": {"title": "T", "scheduled_at": "2030-01-01T00:00:00Z"}}, "scheduled_at", "only_when_scheduled"),
        (
            {"post": {"title": "T", "publication_status": "scheduled", "scheduled_at": "2001-01-01T00:00:00Z"}},
            "scheduled_at",
            "future",
        ),
        ({"title": "T"}, "post", "required"),
        ({"post": "T"}, "post", "invalid"),
    ],
)
def test_bad_input_is_a_validation_error_naming_the_field_and_rule(authed, channel, body, field, rule):
    response = authed.post(posts_url(channel), body, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["details"]["field"], error["details"]["rule"]) in {(field, rule)} | {
        (item["field"], item["rule"]) for item in error["details"]["errors"]
    }
    assert not Post.objects.exists()


def test_a_slug_another_post_of_the_channel_has_is_refused(authed, channel):
    PostFactory(channel=channel, slug="taken")
    response = authed.post(posts_url(channel), {"post": {"title": "T", "slug": "taken"}}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "slug"
    assert response.json()["error"]["details"]["rule"] == "unique"


def test_another_accounts_channel_is_not_found(authed):
    other = ChannelFactory(account=AccountFactory())
    response = authed.post(posts_url(other), {"post": {"title": "T"}}, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert not Post.objects.exists()


# --- who may -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("permissions", "request_", "allowed"),
    [
        ([READ], ("post", {"title": "T"}), False),
        ([WRITE], ("post", {"title": "T"}), True),
        ([WRITE], ("post", {"title": "T", "publication_status": "published"}), False),
        ([WRITE, PUBLISH], ("post", {"title": "T", "publication_status": "published"}), True),
        ([WRITE], ("patch", {"title": "New"}), True),
        ([READ, DELETE], ("patch", {"title": "New"}), False),
        ([WRITE], ("patch", {"publication_status": "scheduled", "scheduled_at": "2030-01-01T00:00:00Z"}), False),
        ([WRITE, PUBLISH], ("patch", {"publication_status": "published"}), True),
        ([WRITE, PUBLISH], ("delete", None), False),
        ([DELETE], ("delete", None), True),
    ],
)
def test_a_key_acts_with_its_owners_permissions_whatever_its_scopes(client_for, permissions, request_, allowed):
    key = key_with(*permissions)
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel, title="Old")
    client = client_for(key)
    method, fields = request_
    url = posts_url(channel) if method == "post" else post_url(post)
    response = getattr(client, method)(url, None if fields is None else {"post": fields}, format="json")
    if allowed:
        assert response.status_code in (200, 201, 204), response.content
    else:
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"
        post.refresh_from_db()
        assert (post.title, post.publication_status) == ("Old", "draft")
        assert Post.objects.count() == 1


def test_a_viewer_key_is_refused_even_with_the_write_scope(client_for):
    key = ApiKeyFactory(user=UserFactory(role=Role.VIEWER))
    response = client_for(key).post(
        posts_url(ChannelFactory(account=key.account)), {"post": {"title": "T"}}, format="json"
    )
    assert response.status_code == 403
    assert "articles.write" in response.json()["error"]["message"]


def test_a_key_without_the_write_scope_gets_403_insufficient_scope(client_for):
    key = ApiKeyFactory(scopes=["read:posts"])
    response = client_for(key).post(
        posts_url(ChannelFactory(account=key.account)), {"post": {"title": "T"}}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient_scope"


# --- edit ----------------------------------------------------------------------------------------


def test_an_edit_changes_only_what_is_sent_and_answers_the_new_form_and_etag(authed, channel):
    post = PostFactory(channel=channel, title="Old", body="Body", teaser="Teaser")
    before = authed.get(post_url(post))
    response = authed.patch(post_url(post), {"post": {"title": "New"}}, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()["data"]
    assert (data["title"], data["body"], data["teaser"]) == ("New", "Body", "Teaser")
    after = authed.get(post_url(post))
    assert after.json()["data"]["title"] == "New"
    assert response["ETag"] == after["ETag"] != before["ETag"]


def test_an_edit_with_the_etag_read_succeeds(authed, channel):
    post = PostFactory(channel=channel, title="Old")
    etag = authed.get(post_url(post))["ETag"]
    response = authed.patch(post_url(post), {"post": {"title": "New"}}, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 200


def test_an_edit_with_a_stale_etag_is_412_and_changes_nothing(authed, channel):
    post = PostFactory(channel=channel, title="Old")
    stale = authed.get(post_url(post))["ETag"]
    authed.patch(post_url(post), {"post": {"body": "Someone else's edit"}}, format="json")
    current = authed.get(post_url(post))
    response = authed.patch(post_url(post), {"post": {"title": "Mine"}}, format="json", HTTP_IF_MATCH=stale)
    assert response.status_code == 412
    error = response.json()["error"]
    assert error["code"] == "precondition_failed"
    assert "read it again" in error["message"]
    assert error["details"]["current_etag"] == current["ETag"]
    assert error["details"]["updated_at"] == current.json()["data"]["updated_at"]
    post.refresh_from_db()
    assert post.title == "Old"


def test_a_weak_tag_never_matches_and_a_star_matches_any(authed, channel):
    post = PostFactory(channel=channel)
    etag = authed.get(post_url(post))["ETag"]
    weak = authed.patch(post_url(post), {"post": {"title": "A"}}, format="json", HTTP_IF_MATCH=f"W/{etag}")
    assert weak.status_code == 412
    star = authed.patch(post_url(post), {"post": {"title": "B"}}, format="json", HTTP_IF_MATCH="*")
    assert star.status_code == 200


def test_a_tag_sent_without_its_quotes_is_read_as_that_tag(authed, channel):
    post = PostFactory(channel=channel)
    etag = authed.get(post_url(post))["ETag"]
    response = authed.patch(post_url(post), {"post": {"title": "A"}}, format="json", HTTP_IF_MATCH=etag.strip('"'))
    assert response.status_code == 200


def test_if_unmodified_since_refuses_a_post_changed_after_the_date(authed, channel):
    post = PostFactory(channel=channel, title="Old")
    before = post.updated_at - timedelta(seconds=5)
    refused = authed.patch(
        post_url(post), {"post": {"title": "A"}}, format="json", HTTP_IF_UNMODIFIED_SINCE=http_date(before.timestamp())
    )
    assert refused.status_code == 412
    assert refused.json()["error"]["details"]["current_etag"] == authed.get(post_url(post))["ETag"]
    since = http_date(post.updated_at.timestamp() + 1)
    accepted = authed.patch(post_url(post), {"post": {"title": "B"}}, format="json", HTTP_IF_UNMODIFIED_SINCE=since)
    assert accepted.status_code == 200


def test_an_edit_of_a_published_post_sends_post_updated(authed, channel, emitted):
    post = PostFactory(channel=channel, publication_status="published", published_at=timezone.now())
    response = authed.patch(post_url(post), {"post": {"body": "Corrected."}}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["publication_status"] == "published"
    assert [body["data"]["post"]["body"] for body in emitted("post.updated")] == ["Corrected."]


def test_an_edit_of_a_published_api_post_sends_post_updated_and_keeps_it_published(authed, api_channel, emitted):
    publication = ApiPublicationFactory(post__channel=api_channel, post__publication_status="published")
    response = authed.patch(post_url(publication.post), {"post": {"title": "Changed"}}, format="json")
    assert response.status_code == 200
    assert response.json()["data"]["publication_status"] == "published"
    assert len(emitted("post.updated")) == 1


def test_a_published_api_post_leaves_published_only_through_unpublish(authed, api_channel):
    publication = ApiPublicationFactory(post__channel=api_channel, post__publication_status="published")
    response = authed.patch(post_url(publication.post), {"post": {"publication_status": "draft"}}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_status"
    assert "unpublish" in response.json()["error"]["message"]


def test_publishing_a_draft_blog_post_publishes_it(authed, channel, emitted):
    post = PostFactory(channel=channel)
    response = authed.patch(post_url(post), {"post": {"publication_status": "published"}}, format="json")
    assert response.json()["data"]["publication_status"] == "published"
    assert len(emitted("post.published")) == 1


def test_back_to_draft_takes_a_published_post_down_without_post_updated(authed, channel, emitted):
    post = PostFactory(channel=channel, publication_status="published", published_at=timezone.now())
    response = authed.patch(
        post_url(post), {"post": {"publication_status": "draft", "title": "Reworked"}}, format="json"
    )
    data = response.json()["data"]
    assert (data["publication_status"], data["title"], data["published_at"]) == ("draft", "Reworked", None)
    assert len(emitted("post.unpublished")) == 1
    assert emitted("post.updated") == []


def test_rescheduling_moves_the_time_and_a_draft_has_none(authed, channel):
    post = PostFactory(channel=channel)
    scheduled = authed.patch(
        post_url(post), {"post": {"publication_status": "scheduled", "scheduled_at": future(3)}}, format="json"
    )
    assert scheduled.json()["data"]["publication_status"] == "scheduled"
    later = future(30)
    moved = authed.patch(post_url(post), {"post": {"scheduled_at": later}}, format="json")
    assert isoparse(moved.json()["data"]["scheduled_at"]) == isoparse(later)
    draft = authed.patch(post_url(post), {"post": {"publication_status": "draft"}}, format="json")
    assert draft.json()["data"]["scheduled_at"] is None
    post.refresh_from_db()
    assert post.scheduled_at is None


def test_a_failed_status_change_leaves_the_content_as_it_was(authed, channel):
    post = PostFactory(channel=channel, title="Old")
    response = authed.patch(
        post_url(post), {"post": {"title": "New", "publication_status": "publishing_pending"}}, format="json"
    )
    assert response.status_code == 422
    post.refresh_from_db()
    assert post.title == "Old"


def test_a_post_of_another_channel_or_account_is_not_found(authed, channel):
    other_channel = ChannelFactory(account=channel.account)
    post = PostFactory(channel=other_channel)
    assert authed.patch(f"{posts_url(channel)}/{post.id}", {"post": {"title": "X"}}, format="json").status_code == 404
    foreign = PostFactory(channel=ChannelFactory(account=AccountFactory()))
    assert authed.patch(post_url(foreign), {"post": {"title": "X"}}, format="json").status_code == 404
    assert authed.delete(post_url(foreign)).status_code == 404
    foreign.refresh_from_db()


def test_an_empty_patch_changes_nothing(authed, channel):
    post = PostFactory(channel=channel, title="Same")
    before = authed.get(post_url(post))
    response = authed.patch(post_url(post), {"post": {}}, format="json")
    assert response.status_code == 200
    assert response["ETag"] == before["ETag"]


# --- delete --------------------------------------------------------------------------------------


def test_a_deleted_post_is_gone(authed, channel):
    post = PostFactory(channel=channel)
    response = authed.delete(post_url(post))
    assert response.status_code == 204
    assert response.content == b""
    assert authed.get(post_url(post)).status_code == 404


def test_a_delete_with_a_stale_etag_is_412_and_the_post_stays(authed, channel):
    post = PostFactory(channel=channel)
    stale = authed.get(post_url(post))["ETag"]
    authed.patch(post_url(post), {"post": {"title": "Changed"}}, format="json")
    response = authed.delete(post_url(post), HTTP_IF_MATCH=stale)
    assert response.status_code == 412
    assert Post.objects.filter(pk=post.pk).exists()


def test_deleting_a_published_blog_post_takes_it_off_the_blog(authed, channel, client):
    post = PostFactory(channel=channel, publication_status="published", published_at=timezone.now())
    assert authed.delete(post_url(post)).status_code == 204
    assert not Post.objects.filter(pk=post.pk).exists()


def test_a_published_api_post_is_unpublished_before_it_is_deleted(authed, api_channel):
    publication = ApiPublicationFactory(post__channel=api_channel, post__publication_status="published")
    response = authed.delete(post_url(publication.post))
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_status"
    assert Post.objects.filter(pk=publication.post_id).exists()
