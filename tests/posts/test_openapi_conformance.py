"""What the channels and posts endpoints really return matches what /v1/openapi.json declares."""

import jsonschema
import pytest
from django.utils import timezone

from tests.factories import (
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
)

pytestmark = pytest.mark.django_db


def as_json_schema(node, components: dict):
    """OpenAPI 3.0 schema -> JSON Schema: inline $refs, turn `nullable` into a null alternative,
    and forbid keys the schema does not declare (so an undeclared field fails)."""
    if isinstance(node, list):
        return [as_json_schema(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return as_json_schema(components[node["$ref"].rsplit("/", 1)[1]], components)
    converted = {key: as_json_schema(value, components) for key, value in node.items() if key != "nullable"}
    if converted.get("type") == "object" and "properties" in converted:
        converted.setdefault("additionalProperties", False)
    if node.get("nullable"):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


@pytest.fixture
def check(client):
    schema = client.get("/v1/openapi.json").json()
    components = schema["components"]["schemas"]

    def validate(response, path: str, method: str = "get"):
        declared = schema["paths"][path][method]["responses"][str(response.status_code)]
        body_schema = as_json_schema(declared["content"]["application/json"]["schema"], components)
        jsonschema.validate(response.json(), body_schema)

    return validate


@pytest.fixture
def world(api_key):
    account = api_key.account
    api = ChannelFactory(account=account, platform="api")
    no_team = ChannelFactory(account=account, team=None)
    pending = ApiPublicationFactory(post__channel=api).post
    pending.tags.set([TagFactory(account=account)])
    MediaFactory(post=pending)
    MediaFactory(post=pending, width=None, height=None, kind="document")
    PostFactory(
        channel=no_team, teaser="", meta_title=None, publication_status="published", published_at=timezone.now()
    )
    return {"api": api, "no_team": no_team, "pending": pending}


def test_successful_responses_match_the_schema(authed, check, world):
    api, no_team, pending = world["api"], world["no_team"], world["pending"]
    check(authed.get("/v1/channels"), "/v1/channels")
    check(authed.get(f"/v1/channels/{no_team.id}"), "/v1/channels/{id}")
    check(authed.get(f"/v1/channels/{no_team.id}/posts"), "/v1/channels/{channel_id}/posts")
    check(authed.get(f"/v1/channels/{api.id}/posts/{pending.id}"), "/v1/channels/{channel_id}/posts/{id}")
    check(authed.get(f"/v1/posts/{pending.id}"), "/v1/posts/{id}")
    base = f"/v1/channels/{api.id}/posts/{pending.id}"
    published = authed.patch(f"{base}/publish", {"post": {"external_url": "https://x.example/1"}}, format="json")
    assert published.status_code == 200
    check(published, "/v1/channels/{channel_id}/posts/{id}/publish", "patch")
    unpublished = authed.patch(f"{base}/unpublish")
    assert unpublished.status_code == 200
    check(unpublished, "/v1/channels/{channel_id}/posts/{id}/unpublish", "patch")


def test_error_responses_match_the_schema(authed, client_for, check, world):
    api, pending = world["api"], world["pending"]
    posts = "/v1/channels/{channel_id}/posts"
    check(authed.get("/v1/channels/424242"), "/v1/channels/{id}")
    check(authed.get(f"/v1/channels/{api.id}/posts?publication_status=x"), posts)
    check(client_for(ApiKeyFactory(scopes=[])).get(f"/v1/channels/{api.id}/posts"), posts)
    publish = "/v1/channels/{channel_id}/posts/{id}/publish"
    url = f"/v1/channels/{api.id}/posts/{pending.id}/publish"
    check(authed.patch(url, {"post": {"external_id": 1}}, format="json"), publish, "patch")
    check(authed.patch(url.replace(str(pending.id), "424242")), publish, "patch")
    authed.patch(url)
    again = authed.patch(url)
    assert again.status_code == 422
    check(again, publish, "patch")
