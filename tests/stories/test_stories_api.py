"""Stories over the API: written once with POST /v1/stories and sent to channels, listed newest
first, read with each destination's state, changed with PATCH (fields not sent stay, `channels`
replaces the set), retried where they failed, deleted with their posts."""

from datetime import timedelta

import pytest
from dateutil.parser import isoparse
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.posts.models import Post
from apps.posts.pipeline_subject import post_publication_failed
from apps.publishing.models import JobState, PublicationJob
from apps.stories.models import Story
from tests.factories import ChannelFactory, GitDestinationFactory, MediumFactory, PostFactory

pytestmark = pytest.mark.django_db

STORY_FIELDS = {
    "id",
    "title",
    "body",
    "teaser",
    "meta_title",
    "meta_description",
    "tags",
    "media",
    "publication_status",
    "scheduled_at",
    "planned_for",
    "state",
    "created_at",
    "updated_at",
    "posts",
}
DESTINATION_FIELDS = {
    "id",
    "title",
    "channel",
    "publication_status",
    "state",
    "scheduled_at",
    "published_at",
    "publication",
    "url",
    "overrides",
}


@pytest.fixture
def api_key(admin_key):
    """A key whose owner may do everything (role admin); tests/stories/test_stories_api_rules.py
    has the permissions."""
    return admin_key


@pytest.fixture
def blog(api_key):
    return ChannelFactory(account=api_key.account, platform="blog", title="Blog")


@pytest.fixture
def api(api_key):
    return ChannelFactory(account=api_key.account, platform="api", title="Partner feed")


@pytest.fixture
def git(api_key):
    return GitDestinationFactory(channel__account=api_key.account, channel__title="Docs").channel


def create(authed, **fields):
    return authed.post("/v1/stories", {"story": fields}, format="json")


def created(authed, **fields) -> dict:
    response = create(authed, **fields)
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def by_channel(data: dict) -> dict[int, dict]:
    return {post["channel"]["id"]: post for post in data["posts"]}


def test_a_created_story_answers_201_with_its_location_the_etag_get_sends_and_a_post_per_channel(authed, blog, api):
    response = create(
        authed,
        title="Launch",
        body="# We launched\n\nText.",
        teaser="Short",
        tags=["news", "launch"],
        meta_title="Launch | Acme",
        planned_for="2030-01-31T09:00:00Z",
        channels=[{"id": blog.pk}, {"id": api.pk, "overrides": {"title": "Launch (partners)", "teaser": ""}}],
    )
    assert response.status_code == 201, response.json()
    data = response.json()["data"]
    assert set(data) == STORY_FIELDS
    story = Story.objects.get(pk=data["id"])
    assert response["Location"] == f"http://testserver/v1/stories/{story.pk}"
    read = authed.get(f"/v1/stories/{story.pk}")
    assert (read.status_code, read.content, read["ETag"]) == (200, response.content, response["ETag"])
    assert (data["title"], data["state"], data["publication_status"]) == ("Launch", "draft", "draft")
    assert [tag["name"] for tag in data["tags"]] == ["launch", "news"]
    assert data["meta_title"] == "Launch | Acme" and data["meta_description"] is None
    assert isoparse(data["planned_for"]) == isoparse("2030-01-31T09:00:00Z") and data["scheduled_at"] is None
    on_blog, on_api = by_channel(data)[blog.pk], by_channel(data)[api.pk]
    assert set(on_blog) == DESTINATION_FIELDS
    assert on_blog["channel"] == {"id": blog.pk, "title": "Blog", "platform": "blog"}
    assert (on_blog["title"], on_blog["overrides"], on_blog["state"]) == ("Launch", {}, "draft")
    # An empty override is no override: the story's teaser.
    assert (on_api["title"], on_api["overrides"]) == ("Launch (partners)", {"title": "Launch (partners)"})
    assert Post.objects.get(pk=on_api["id"]).teaser == "Short"
    assert (on_blog["publication"], on_blog["url"], on_blog["publication_status"]) == (None, None, "draft")


def test_each_post_single_form_names_its_story_and_a_post_of_its_own_names_none(authed, blog):
    data = created(authed, title="Launch", channels=[{"id": blog.pk}])
    [post] = data["posts"]
    assert authed.get(f"/v1/channels/{blog.pk}/posts/{post['id']}").json()["data"]["story"] == {"id": data["id"]}
    assert authed.get(f"/v1/posts/{post['id']}").json()["data"]["story"] == {"id": data["id"]}
    alone = PostFactory(channel=blog)
    assert authed.get(f"/v1/channels/{blog.pk}/posts/{alone.pk}").json()["data"]["story"] is None


def test_media_are_taken_as_the_posts_write_api_takes_them(authed, blog, api_key):
    medium = MediumFactory(account=api_key.account)
    media = [{"medium": medium.pk, "alt_text": "The team"}, {"url": "https://cdn.example.com/a.png", "width": 10}]
    data = created(authed, title="Photos", media=media, channels=[{"id": blog.pk}])
    assert data["media"] == media
    post = Post.objects.get(pk=data["posts"][0]["id"])
    assert [(item.medium_id, item.url) for item in post.media.order_by("position")][1] == (
        None,
        "https://cdn.example.com/a.png",
    )
    refused = create(authed, title="Photos", media=[{"medium": medium.pk + 1000}])
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["field"] == "media[0].medium"


@pytest.mark.parametrize(
    ("story", "field", "rule"),
    [
        ({"title": "T", "slug": "t"}, "slug", "unknown_field"),
        ({"title": "T", "state": "published"}, "state", "read_only"),
        ({"title": "T", "posts": []}, "posts", "read_only"),
        ({"body": "No title"}, "title", "required"),
        ({"title": 5}, "title", "invalid"),
        ({"title": "T", "publication_status": "publishing_pending"}, "publication_status", "invalid_choice"),
        ({"title": "T", "publication_status": "scheduled"}, "scheduled_at", "required"),
        ({"title": "T", "scheduled_at": "2030-01-31T09:00:00Z"}, "scheduled_at", "only_when_scheduled"),
        ({"title": "T", "channels": [{"id": 1, "colour": "red"}]}, "channels", "unknown_field"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_created(authed, story, field, rule):
    response = authed.post("/v1/stories", {"story": story}, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["details"]["field"].split("[")[0].split(".")[0], error["details"]["rule"]) == (field, rule)
    assert not Story.objects.exists()


def test_a_past_schedule_and_channels_not_of_the_account_or_twice_are_refused(authed, blog):
    past = (timezone.now() - timedelta(minutes=5)).isoformat()
    refusals = [
        ({"publication_status": "scheduled", "scheduled_at": past}, "scheduled_at", "future"),
        ({"channels": [{"id": ChannelFactory().pk}]}, "channels[0].id", "not_found"),
        ({"channels": [{"id": blog.pk}, {"id": blog.pk}]}, "channels[1].id", "duplicate"),
    ]
    for fields, field, rule in refusals:
        response = create(authed, title="T", **fields)
        assert response.status_code == 400, fields
        assert (response.json()["error"]["details"]["field"], response.json()["error"]["details"]["rule"]) == (
            field,
            rule,
        )
    assert not Story.objects.exists() and not Post.objects.exists()


def test_the_list_is_newest_first_and_paginated_as_every_list(authed, api_key, blog):
    ids = [created(authed, title=f"Story {n}", channels=[{"id": blog.pk}])["id"] for n in range(5)]
    created_elsewhere = ChannelFactory()
    Story.objects.create(account=created_elsewhere.account, title="Not ours")
    body = authed.get("/v1/stories?per_page=2&page=2").json()
    assert [item["id"] for item in body["data"]] == ids[::-1][2:4]
    assert body["meta"] == {"page": 2, "pages": 3, "count": 5, "per_page": 2}
    assert body["data"][0]["posts"][0]["channel"]["id"] == blog.pk
    assert authed.get("/v1/stories?per_page=1000").json()["meta"]["per_page"] == 100
    assert authed.get("/v1/stories?page=9").json()["data"] == []
    assert authed.get("/v1/stories?page=0").status_code == 400


def test_a_page_of_stories_costs_the_same_queries_whatever_its_size(authed, blog, api):
    def queries_of_the_list(expected: int) -> int:
        with CaptureQueriesContext(connection) as read:
            assert len(authed.get("/v1/stories").json()["data"]) == expected
        return len(read.captured_queries)

    for n in range(2):
        created(authed, title=f"Story {n}", tags=["a", "b"], channels=[{"id": blog.pk}, {"id": api.pk}])
    few = queries_of_the_list(2)
    for n in range(13):
        created(authed, title=f"More {n}", tags=["a"], channels=[{"id": blog.pk}, {"id": api.pk}])
    assert queries_of_the_list(15) == few


def test_patch_changes_what_is_sent_and_keeps_the_rest(authed, blog, api):
    data = created(
        authed,
        title="Launch",
        body="Body",
        tags=["news"],
        channels=[{"id": blog.pk}, {"id": api.pk, "overrides": {"title": "Own title"}}],
    )
    response = authed.patch(f"/v1/stories/{data['id']}", {"story": {"title": "Launch day"}}, format="json")
    assert response.status_code == 200, response.json()
    changed = response.json()["data"]
    assert (changed["title"], changed["body"], [tag["name"] for tag in changed["tags"]]) == (
        "Launch day",
        "Body",
        ["news"],
    )
    assert by_channel(changed)[blog.pk]["title"] == "Launch day"
    assert by_channel(changed)[api.pk]["title"] == "Own title"
    assert response["ETag"] == authed.get(f"/v1/stories/{data['id']}")["ETag"]
    assert authed.patch(f"/v1/stories/{data['id']}", {}, format="json").status_code == 200


def test_channels_sent_replace_the_set_an_entry_without_overrides_keeps_them_and_one_left_out_loses_its_post(
    authed, api_key, blog, api
):
    data = created(
        authed, title="Launch", channels=[{"id": blog.pk}, {"id": api.pk, "overrides": {"title": "Own title"}}]
    )
    newsletter = ChannelFactory(account=api_key.account, platform="blog", title="Second blog")
    gone = by_channel(data)[blog.pk]["id"]
    response = authed.patch(
        f"/v1/stories/{data['id']}", {"story": {"channels": [{"id": api.pk}, {"id": newsletter.pk}]}}, format="json"
    )
    assert response.status_code == 200, response.json()
    changed = by_channel(response.json()["data"])
    assert set(changed) == {api.pk, newsletter.pk}
    assert changed[api.pk]["overrides"] == {"title": "Own title"}
    assert changed[newsletter.pk]["title"] == "Launch"
    assert not Post.objects.filter(pk=gone).exists()
    cleared = authed.patch(
        f"/v1/stories/{data['id']}", {"story": {"channels": [{"id": api.pk, "overrides": {}}]}}, format="json"
    )
    assert by_channel(cleared.json()["data"])[api.pk]["title"] == "Launch"


def test_a_published_story_reads_back_each_destination_state_and_retry_runs_only_what_failed(
    authed, blog, git, emitted
):
    data = created(authed, title="Both", publication_status="published", channels=[{"id": blog.pk}, {"id": git.pk}])
    assert data["state"] == "publishing"
    on_git = by_channel(data)[git.pk]
    assert (on_git["state"], on_git["publication"]["state"]) == ("publishing", "queued")
    assert (by_channel(data)[blog.pk]["state"], by_channel(data)[blog.pk]["publication_status"]) == (
        "published",
        "published",
    )
    assert by_channel(data)[blog.pk]["url"].startswith("http")
    job = PublicationJob.objects.get(post_id=on_git["id"])
    PublicationJob.objects.filter(pk=job.pk).update(state=JobState.FAILED, last_error="The host refused.")
    job.refresh_from_db()
    post_publication_failed(job=job)

    read = authed.get(f"/v1/stories/{data['id']}").json()["data"]
    assert read["state"] == "partially_published"
    assert {post["channel"]["platform"]: post["state"] for post in read["posts"]} == {
        "blog": "published",
        "git": "failed",
    }
    assert by_channel(read)[git.pk]["publication"]["last_error"] == "The host refused."
    assert len(emitted("story.partially_published")) == 1

    retried = authed.post(f"/v1/stories/{data['id']}/retry")
    assert retried.status_code == 200, retried.json()
    assert retried.json()["data"]["state"] == "publishing"
    assert by_channel(retried.json()["data"])[git.pk]["state"] == "publishing"
    assert PublicationJob.objects.filter(post_id=by_channel(data)[blog.pk]["id"]).count() == 0
    again = authed.post(f"/v1/stories/{data['id']}/retry")
    assert (again.status_code, again.json()["error"]["code"]) == (422, "nothing_to_retry")


def test_publishing_schedules_the_api_channel_post_for_the_content_plan(authed, api):
    data = created(authed, title="Now", channels=[{"id": api.pk}])
    response = authed.patch(f"/v1/stories/{data['id']}", {"story": {"publication_status": "published"}}, format="json")
    assert response.status_code == 200, response.json()
    [post] = response.json()["data"]["posts"]
    assert (post["publication_status"], post["state"]) == ("scheduled", "publishing")
    assert response.json()["data"]["publication_status"] == "published"


def test_a_channel_that_is_not_set_up_cannot_publish_and_nothing_is_kept(authed, api_key):
    bare_git = ChannelFactory(account=api_key.account, platform="git")
    response = create(authed, title="Now", publication_status="published", channels=[{"id": bare_git.pk}])
    assert (response.status_code, response.json()["error"]["code"]) == (422, "not_set_up")
    assert not Story.objects.exists() and not Post.objects.exists()


def test_deleting_a_story_deletes_its_posts_but_not_a_published_api_post(authed, blog, api):
    data = created(authed, title="Gone", channels=[{"id": blog.pk}])
    assert authed.delete(f"/v1/stories/{data['id']}").status_code == 204
    assert not Story.objects.exists() and not Post.objects.exists()
    assert authed.get(f"/v1/stories/{data['id']}").status_code == 404

    kept = created(authed, title="Kept", channels=[{"id": blog.pk}, {"id": api.pk}])
    Post.objects.filter(pk=by_channel(kept)[api.pk]["id"]).update(
        publication_status="published", published_at=timezone.now()
    )
    refused = authed.delete(f"/v1/stories/{kept['id']}")
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_status")
    assert Story.objects.filter(pk=kept["id"]).exists() and Post.objects.count() == 2
