from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.posts.models import Post
from tests.factories import ChannelFactory, PostFactory, TagFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def channel(api_key):
    return ChannelFactory(account=api_key.account, platform="api")


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["data"]]


def set_updated_at(post: Post, when) -> None:
    Post.objects.filter(pk=post.pk).update(updated_at=when)


@pytest.fixture
def one_per_status(channel):
    return {
        status: PostFactory(channel=channel, publication_status=status)
        for status in ("draft", "scheduled", "publishing_pending", "published")
    }


def test_filter_by_one_status(authed, channel, one_per_status):
    response = authed.get(f"/v1/channels/{channel.id}/posts?publication_status=published")
    assert ids(response) == [one_per_status["published"].id]


def test_filter_by_several_statuses_comma_separated(authed, channel, one_per_status):
    response = authed.get(f"/v1/channels/{channel.id}/posts?publication_status=draft, scheduled")
    assert ids(response) == [one_per_status["draft"].id, one_per_status["scheduled"].id]


def test_meta_count_counts_the_filtered_posts_and_posts_count_stays_the_channel_total(authed, channel, one_per_status):
    body = authed.get(f"/v1/channels/{channel.id}/posts?publication_status=draft,published").json()
    assert body["meta"] == {"page": 1, "pages": 1, "count": 2, "per_page": 20, "next_cursor": None}
    assert {item["channel"]["posts_count"] for item in body["data"]} == {4}


@pytest.mark.parametrize(
    "value", ["unknown", "draft,unknown", "Draft", "draft,", ",", "pending"], ids=lambda v: v or "comma"
)
def test_unknown_status_is_a_validation_error(authed, channel, value):
    response = authed.get(f"/v1/channels/{channel.id}/posts", {"publication_status": value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == "publication_status"
    assert error["details"]["rule"] == "invalid_choice"


def test_empty_filter_values_are_no_filter(authed, channel, one_per_status):
    response = authed.get(f"/v1/channels/{channel.id}/posts?publication_status=&tag=&updated_since=")
    assert len(ids(response)) == 4


def test_filter_by_tag_name(authed, channel):
    news = TagFactory(account=channel.account, name="news")
    other = TagFactory(account=channel.account, name="other")
    tagged = PostFactory(channel=channel, tags=[news, other])
    PostFactory(channel=channel, tags=[other])
    PostFactory(channel=channel)
    assert ids(authed.get(f"/v1/channels/{channel.id}/posts?tag=news")) == [tagged.id]
    assert authed.get(f"/v1/channels/{channel.id}/posts?tag=news").json()["meta"]["count"] == 1


def test_tag_filter_is_exact_and_unknown_tag_matches_nothing(authed, channel):
    PostFactory(channel=channel, tags=[TagFactory(account=channel.account, name="news")])
    assert ids(authed.get(f"/v1/channels/{channel.id}/posts?tag=News")) == []
    assert ids(authed.get(f"/v1/channels/{channel.id}/posts?tag=nothing")) == []


def test_overlong_tag_is_a_validation_error(authed, channel):
    response = authed.get(f"/v1/channels/{channel.id}/posts", {"tag": "x" * 101})
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {
        "field": "tag",
        "rule": "max_length",
        "errors": [
            {"field": "tag", "rule": "max_length", "message": "Ensure this field has no more than 100 characters."}
        ],
    }


def test_filter_by_updated_since_is_inclusive(authed, channel):
    now = timezone.now().replace(microsecond=0)
    old, edge, new = PostFactory.create_batch(3, channel=channel)
    set_updated_at(old, now - timedelta(days=2))
    set_updated_at(edge, now - timedelta(days=1))
    set_updated_at(new, now)
    since = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(authed.get(f"/v1/channels/{channel.id}/posts", {"updated_since": since})) == [edge.id, new.id]


@pytest.mark.parametrize(
    "value",
    ["2025-03-01T10:00:00+02:00", "2025-03-01T08:00:00Z", "2025-03-01T08:00:00", "2025-03-01T08:00:00.000000+00:00"],
)
def test_updated_since_accepts_offsets_z_and_utc_without_offset(authed, channel, value):
    before, after = PostFactory.create_batch(2, channel=channel)
    moment = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
    set_updated_at(before, moment - timedelta(seconds=1))
    set_updated_at(after, moment)
    assert ids(authed.get(f"/v1/channels/{channel.id}/posts", {"updated_since": value})) == [after.id]


@pytest.mark.parametrize("value", ["yesterday", "2025-13-01T00:00:00Z", "2025-03-01T25:00", "1700000000"])
def test_bad_updated_since_is_a_validation_error(authed, channel, value):
    response = authed.get(f"/v1/channels/{channel.id}/posts", {"updated_since": value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == "updated_since"


def test_filters_combine(authed, channel):
    news = TagFactory(account=channel.account, name="news")
    match = PostFactory(channel=channel, publication_status="published", tags=[news])
    PostFactory(channel=channel, publication_status="draft", tags=[news])
    PostFactory(channel=channel, publication_status="published")
    set_updated_at(
        PostFactory(channel=channel, publication_status="published", tags=[news]), timezone.now() - timedelta(days=9)
    )
    since = (timezone.now() - timedelta(days=1)).isoformat()
    response = authed.get(
        f"/v1/channels/{channel.id}/posts", {"publication_status": "published", "tag": "news", "updated_since": since}
    )
    assert ids(response) == [match.id]


def test_filters_are_validated_before_the_channel_is_looked_up(authed):
    response = authed.get("/v1/channels/424242/posts?publication_status=nope")
    assert response.status_code == 400


def test_filters_paginate_the_filtered_set(authed, channel):
    drafts = PostFactory.create_batch(5, channel=channel, publication_status="draft")
    PostFactory.create_batch(5, channel=channel, publication_status="published")
    body = authed.get(f"/v1/channels/{channel.id}/posts?publication_status=draft&limit=2&page=3").json()
    assert [item["id"] for item in body["data"]] == [drafts[4].id]
    assert body["meta"] == {"page": 3, "pages": 3, "count": 5, "per_page": 2, "next_cursor": None}
