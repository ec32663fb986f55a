"""Who may do what to a story over the API, and the writes' guards: the posts' scopes and role
permissions, If-Match / If-Unmodified-Since (412), Idempotency-Key replays, another account's story
unknown; every answer as /v1/openapi.json declares it, the story.* events among its webhooks."""

from datetime import timedelta

import jsonschema
import pytest
from django.utils import timezone
from django.utils.http import http_date

from apps.accounts.models import Scope
from apps.posts.models import Post
from apps.stories.models import Story
from apps.users.models import Permission
from tests.factories import ApiKeyFactory, ChannelFactory, UserFactory
from tests.posts.test_openapi_conformance import as_json_schema

pytestmark = pytest.mark.django_db

WRITE, PUBLISH, DELETE = Permission.ARTICLES_WRITE, Permission.ARTICLES_PUBLISH, Permission.ARTICLES_DELETE


@pytest.fixture
def api_key(admin_key):
    return admin_key


@pytest.fixture
def blog(api_key):
    return ChannelFactory(account=api_key.account, platform="blog")


@pytest.fixture
def story(authed, blog) -> dict:
    response = authed.post("/v1/stories", {"story": {"title": "Launch", "channels": [{"id": blog.pk}]}}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["data"]


@pytest.fixture
def as_owner_with(api_key, client_for):
    """A client whose key's owner, of the same account, holds only these permissions."""

    def make(*permissions: str, scopes=None):
        user = UserFactory(account=api_key.account, permissions=list(permissions))
        return client_for(ApiKeyFactory(user=user, **({} if scopes is None else {"scopes": scopes})))

    return make


def url(story: dict, tail: str = "") -> str:
    return f"/v1/stories/{story['id']}{tail}"


def refusal(response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


# --- scopes and permissions ------------------------------------------------------------------


def test_reads_need_read_posts_and_writes_write_posts(as_owner_with, story):
    reader = as_owner_with(WRITE, PUBLISH, DELETE, scopes=[Scope.READ_POSTS])
    assert reader.get("/v1/stories").status_code == 200
    assert reader.get(url(story)).status_code == 200
    for response in (
        reader.post("/v1/stories", {"story": {"title": "T"}}, format="json"),
        reader.patch(url(story), {"story": {"title": "T"}}, format="json"),
        reader.delete(url(story)),
        reader.post(url(story, "/retry")),
    ):
        assert refusal(response) == (403, "insufficient_scope")
    writer_only = as_owner_with(WRITE, scopes=[Scope.WRITE_POSTS])
    assert refusal(writer_only.get("/v1/stories")) == (403, "insufficient_scope")
    assert refusal(writer_only.get(url(story))) == (403, "insufficient_scope")


def test_writing_needs_articles_write_and_publishing_or_scheduling_articles_publish(as_owner_with, story, blog):
    viewer = as_owner_with(Permission.ARTICLES_READ)
    assert refusal(viewer.post("/v1/stories", {"story": {"title": "T"}}, format="json")) == (403, "permission_denied")
    assert refusal(viewer.patch(url(story), {"story": {"title": "T"}}, format="json")) == (403, "permission_denied")
    writer = as_owner_with(WRITE)
    assert (
        writer.post(
            "/v1/stories", {"story": {"title": "Draft", "channels": [{"id": blog.pk}]}}, format="json"
        ).status_code
        == 201
    )
    later = (timezone.now() + timedelta(days=1)).isoformat()
    for fields in ({"publication_status": "published"}, {"publication_status": "scheduled", "scheduled_at": later}):
        assert refusal(writer.post("/v1/stories", {"story": {"title": "T", **fields}}, format="json")) == (
            403,
            "permission_denied",
        )
        assert refusal(writer.patch(url(story), {"story": fields}, format="json")) == (403, "permission_denied")
    assert writer.patch(url(story), {"story": {"title": "Renamed"}}, format="json").status_code == 200
    assert Story.objects.count() == 2 and Post.objects.filter(publication_status="draft").count() == 2


def test_taking_a_channel_off_or_deleting_needs_articles_delete_and_retry_articles_publish(
    as_owner_with, story, api_key
):
    editor = as_owner_with(WRITE, PUBLISH)
    assert refusal(editor.patch(url(story), {"story": {"channels": []}}, format="json")) == (403, "permission_denied")
    other = ChannelFactory(account=api_key.account)
    added = editor.patch(
        url(story),
        {"story": {"channels": [{"id": story["posts"][0]["channel"]["id"]}, {"id": other.pk}]}},
        format="json",
    )
    assert added.status_code == 200, added.json()
    assert refusal(editor.delete(url(story))) == (403, "permission_denied")
    assert refusal(as_owner_with(WRITE, DELETE).post(url(story, "/retry"))) == (403, "permission_denied")
    assert refusal(editor.post(url(story, "/retry"))) == (422, "nothing_to_retry")
    assert as_owner_with(DELETE).delete(url(story)).status_code == 204


def test_another_accounts_story_is_not_found(story, client_for):
    stranger = client_for(ApiKeyFactory(user=UserFactory(role="admin")))
    assert stranger.get("/v1/stories").json()["data"] == []
    for response in (
        stranger.get(url(story)),
        stranger.patch(url(story), {"story": {"title": "Mine"}}, format="json"),
        stranger.delete(url(story)),
        stranger.post(url(story, "/retry")),
    ):
        assert refusal(response) == (404, "not_found")
    assert Story.objects.get(pk=story["id"]).title == "Launch"


# --- preconditions and idempotency -------------------------------------------------------------


def test_if_match_with_a_stale_tag_is_a_412_with_the_current_tag_and_nothing_changes(authed, story):
    read = authed.get(url(story))
    first = authed.patch(url(story), {"story": {"title": "First"}}, format="json", HTTP_IF_MATCH=read["ETag"])
    assert first.status_code == 200
    stale = authed.patch(url(story), {"story": {"title": "Second"}}, format="json", HTTP_IF_MATCH=read["ETag"])
    assert refusal(stale) == (412, "precondition_failed")
    assert stale.json()["error"]["details"]["current_etag"] == first["ETag"]
    assert refusal(authed.delete(url(story), HTTP_IF_MATCH=read["ETag"])) == (412, "precondition_failed")
    assert Story.objects.get(pk=story["id"]).title == "First"
    assert authed.delete(url(story), HTTP_IF_MATCH=first["ETag"]).status_code == 204


def test_if_unmodified_since_before_the_last_change_is_a_412(authed, story):
    before = http_date((timezone.now() - timedelta(hours=1)).timestamp())
    stale = authed.patch(url(story), {"story": {"title": "Late"}}, format="json", HTTP_IF_UNMODIFIED_SINCE=before)
    assert refusal(stale) == (412, "precondition_failed")
    after = http_date((timezone.now() + timedelta(hours=1)).timestamp())
    fresh = authed.patch(url(story), {"story": {"title": "On time"}}, format="json", HTTP_IF_UNMODIFIED_SINCE=after)
    assert fresh.status_code == 200


def test_a_create_retried_with_its_idempotency_key_is_answered_again_and_creates_nothing_more(authed, blog):
    body = {"story": {"title": "Once", "channels": [{"id": blog.pk}]}}
    first = authed.post("/v1/stories", body, format="json", HTTP_IDEMPOTENCY_KEY="story-1")
    again = authed.post("/v1/stories", body, format="json", HTTP_IDEMPOTENCY_KEY="story-1")
    assert first.status_code == again.status_code == 201
    assert (again.content, again["Location"], again["ETag"]) == (first.content, first["Location"], first["ETag"])
    assert again["Idempotent-Replayed"] == "true"
    assert Story.objects.count() == 1 and Post.objects.count() == 1
    other = {"story": {"title": "Another"}}
    assert refusal(authed.post("/v1/stories", other, format="json", HTTP_IDEMPOTENCY_KEY="story-1")) == (
        422,
        "idempotency_key_reused",
    )


def test_a_retry_and_a_delete_retried_with_their_keys_are_answered_again(authed, story):
    first = authed.post(url(story, "/retry"), HTTP_IDEMPOTENCY_KEY="retry-1")
    again = authed.post(url(story, "/retry"), HTTP_IDEMPOTENCY_KEY="retry-1")
    assert refusal(first) == (422, "nothing_to_retry") and again["Idempotent-Replayed"] == "true"
    assert authed.delete(url(story), HTTP_IDEMPOTENCY_KEY="delete-1").status_code == 204
    replayed = authed.delete(url(story), HTTP_IDEMPOTENCY_KEY="delete-1")
    assert (replayed.status_code, replayed["Idempotent-Replayed"]) == (204, "true")


# --- the schema -------------------------------------------------------------------------------


@pytest.fixture
def schema(client):
    return client.get("/v1/openapi.json").json()


def test_every_stories_operation_is_in_the_schema_with_its_scope_errors_and_idempotency_key(schema):
    operations = {
        ("get", "/v1/stories"): ("stories_list", "read:posts", {"200", "400", "401", "403"}),
        ("post", "/v1/stories"): ("stories_create", "write:posts", {"201", "400", "401", "403", "422"}),
        ("get", "/v1/stories/{id}"): ("stories_retrieve", "read:posts", {"200", "401", "403", "404"}),
        ("patch", "/v1/stories/{id}"): ("stories_update", "write:posts", {"200", "400", "403", "404", "412", "422"}),
        ("delete", "/v1/stories/{id}"): ("stories_destroy", "write:posts", {"204", "403", "404", "412", "422"}),
        ("post", "/v1/stories/{id}/retry"): ("stories_retry", "write:posts", {"200", "403", "404", "422"}),
    }
    for (method, path), (operation_id, scope, statuses) in operations.items():
        operation = schema["paths"][path][method]
        assert operation["operationId"] == operation_id
        assert f"Scope `{scope}`" in operation["description"]
        assert statuses <= set(operation["responses"]), (path, method)
        if method != "get":
            assert "Idempotency-Key" in {parameter["name"] for parameter in operation["parameters"]}
    for method in ("patch", "delete"):
        headers = {parameter["name"] for parameter in schema["paths"]["/v1/stories/{id}"][method]["parameters"]}
        assert {"If-Match", "If-Unmodified-Since"} <= headers
    body = schema["components"]["schemas"]["StoryFieldsRequest"]
    assert body["additionalProperties"] is False and "slug" not in body["properties"]
    assert {"channels", "planned_for", "publication_status"} <= set(body["properties"])
    assert schema["components"]["schemas"]["StoryStatusEnum"]["enum"] == ["draft", "scheduled", "published"]


def test_the_story_events_are_among_the_schemas_webhooks_with_the_story_as_the_api_shows_it(schema):
    for kind in ("story.published", "story.partially_published"):
        assert kind in schema["webhooks"]
    assert "StoryEventData" in schema["components"]["schemas"]


def test_what_the_stories_endpoints_answer_matches_the_schema(authed, schema, story, api_key):
    components = schema["components"]["schemas"]

    def check(response, path: str, method: str = "get") -> None:
        declared = schema["paths"][path][method]["responses"][str(response.status_code)]
        validator = as_json_schema(declared["content"]["application/json"]["schema"], components)
        jsonschema.validate(response.json(), validator)

    api = ChannelFactory(account=api_key.account, platform="api")
    one, many = "/v1/stories/{id}", "/v1/stories"
    created = authed.post(
        many,
        {"story": {"title": "Full", "tags": ["x"], "channels": [{"id": api.pk, "overrides": {"title": "Own"}}]}},
        format="json",
    )
    check(created, many, "post")
    check(authed.get(many), many)
    check(authed.get(url(story)), one)
    check(authed.patch(url(story), {"story": {"publication_status": "published"}}, format="json"), one, "patch")
    check(authed.get(url(created.json()["data"])), one)
    check(authed.get("/v1/stories/424242"), one)
    check(authed.post(many, {"story": {"title": 1}}, format="json"), many, "post")
    check(authed.post(url(story, "/retry")), "/v1/stories/{id}/retry", "post")
    check(authed.patch(url(story), {"story": {}}, format="json", HTTP_IF_MATCH='"stale"'), one, "patch")
