import json

import pytest
from django.utils import timezone

from apps.posts.serializers import post_webhook_data
from tests.factories import ApiPublicationFactory, ChannelFactory, MediaFactory, PostFactory, TagFactory

pytestmark = pytest.mark.django_db

SPEC_FIELDS = {
    "id",
    "title",
    "body",
    "teaser",
    "slug",
    "publication_status",
    "created_at",
    "updated_at",
    "published_at",
    "meta_title",
    "meta_description",
    "tags",
    "media",
    "channel",
}
# The spec's "full post at the time of the event" also holds the external references.
# And the story it is its channel's post of (null for a post of its own).
FIELDS = SPEC_FIELDS | {"external_id", "external_url", "story"}


def test_webhook_post_has_exactly_the_specs_fields():
    channel = ChannelFactory(platform="api", title="Partner Feed")
    post = PostFactory(channel=channel, publication_status="published", published_at=timezone.now())
    tag = TagFactory(account=channel.account, name="news")
    post.tags.set([tag])
    media = MediaFactory(post=post)
    PostFactory(channel=channel)
    data = post_webhook_data(post)
    assert set(data) == FIELDS
    assert data["channel"] == {
        "id": channel.id,
        "title": "Partner Feed",
        "platform": "api",
        "team": {"id": channel.team.id, "name": channel.team.name},
        "posts_count": 2,
    }
    assert data["tags"] == [{"id": tag.id, "name": "news"}]
    assert [m["id"] for m in data["media"]] == [media.id]
    assert data["external_id"] is None and data["external_url"] is None


def test_webhook_post_matches_the_apis_single_post_form(client_for, api_key):
    record = ApiPublicationFactory(post__channel__account=api_key.account)
    post = record.post
    post.tags.set([TagFactory(account=api_key.account)])
    MediaFactory(post=post)
    api = client_for(api_key).get(f"/v1/posts/{post.id}").json()["data"]
    webhook = post_webhook_data(post)
    # The API's single form adds where readers find the post (none while pending), its publication on a
    # destination (none on an api channel) and its planned time (none unless scheduled); the webhook's
    # data.post is the spec's list of fields.
    assert api.pop("publication") is None
    assert api.pop("url") is None
    assert api.pop("scheduled_at") is None
    assert webhook == api


def test_webhook_post_reads_the_database_not_the_stale_instance():
    post = PostFactory(title="Old", teaser="", slug="old")
    type(post).objects.filter(pk=post.pk).update(title="New", slug="new")
    data = post_webhook_data(post)
    assert data["title"] == "New"
    assert data["teaser"] == ""
    assert data["slug"] == "new"
    assert data["published_at"] is None


def test_webhook_post_is_json_serialisable_with_iso_timestamps():
    post = PostFactory(publication_status="published", published_at=timezone.now())
    body = json.loads(json.dumps(post_webhook_data(post)))
    assert body["published_at"].endswith("Z")
    assert body["created_at"].endswith("Z")
