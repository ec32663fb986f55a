"""The API's `publication` object on a post's single form (git and LinkedIn posts: their latest
job; null elsewhere), always as fresh as the job table, and the schema and event list that
document it."""

import json
from datetime import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create, post_update_content
from apps.publishing.git.models import GitDestination
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from apps.webhooks.models import SUBSCRIBABLE_EVENTS, Delivery, Event
from tests.conftest import admin_session
from tests.factories import (
    AdminUserFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    GitDestinationFactory,
    PostFactory,
    PublicationJobFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.publishing.conftest import head

pytestmark = pytest.mark.django_db

PUBLICATION_FIELDS = {"id", "action", "state", "attempts", "last_error", "reference", "url", "updated_at", "recipients"}


@pytest.fixture
def api(git_channel, client_for):
    """An API client of the git channel's account."""
    return client_for(ApiKeyFactory(user=UserFactory(account=git_channel.account)))


def single_forms(client, post) -> list[dict]:
    """The post's single form from both of its addresses (they must agree)."""
    forms = []
    for url in (f"/v1/posts/{post.pk}", f"/v1/channels/{post.channel_id}/posts/{post.pk}"):
        response = client.get(url)
        assert response.status_code == 200, url
        forms.append(response.json()["data"])
    assert forms[0] == forms[1]
    return forms


def publication_of(client, post) -> dict | None:
    return single_forms(client, post)[0]["publication"]


def parsed(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_a_published_git_post_shows_its_publication_with_the_commit_and_the_page(api, git_channel, bare_repo):
    GitDestination.objects.filter(channel=git_channel).update(post_url_template="https://docs.example.com/{slug}/")
    post = post_create(channel=git_channel, title="Shipped", body="x")
    post_publish_now(post_id=post.pk)
    channel_run(git_channel.pk)
    job = PublicationJob.objects.get(post_id=post.pk)

    publication = publication_of(api, post)

    assert set(publication) == PUBLICATION_FIELDS
    assert {name: publication[name] for name in PUBLICATION_FIELDS - {"updated_at"}} == {
        "id": job.pk,
        "action": "publish",
        "state": "succeeded",
        "attempts": 1,
        "last_error": None,
        "reference": head(bare_repo).decode(),
        "url": "https://docs.example.com/shipped/",
        "recipients": None,
    }
    assert publication["updated_at"].endswith("Z") and parsed(publication["updated_at"]) == job.updated_at


def test_a_git_post_waiting_for_its_job_shows_it_queued_with_nulls_for_what_is_not_known_yet(api, git_channel):
    post = post_create(channel=git_channel, title="Soon", body="x")
    post_publish_now(post_id=post.pk)

    publication = publication_of(api, post)

    assert (publication["action"], publication["state"], publication["attempts"]) == ("publish", "queued", 0)
    assert publication["last_error"] is publication["reference"] is publication["url"] is None


def test_the_publication_is_the_posts_latest_job(api, git_channel):
    post = post_create(channel=git_channel, title="Edited", body="one")
    post_publish_now(post_id=post.pk)
    channel_run(git_channel.pk)
    post.refresh_from_db()
    post_update_content(post=post, body="two")
    update = PublicationJob.objects.get(post_id=post.pk, action="update")

    publication = publication_of(api, post)

    assert (publication["id"], publication["action"], publication["state"]) == (update.pk, "update", "queued")


def test_a_failed_job_shows_its_error_sentence(api, git_channel, tmp_path):
    GitDestination.objects.filter(channel=git_channel).update(repository_url=str(tmp_path / "moved-away.git"))
    post = post_create(channel=git_channel, title="Lost", body="x")
    post_publish_now(post_id=post.pk)
    channel_run(git_channel.pk)

    publication = publication_of(api, post)

    assert publication["state"] == "failed" and publication["attempts"] == 1
    assert publication["last_error"].startswith(f"No git repository at {tmp_path / 'moved-away.git'}")
    assert single_forms(api, post)[0]["publication_status"] == "draft"


def test_the_publication_is_null_for_a_git_post_without_a_job_and_for_blog_and_api_posts(git_channel, client_for):
    account = git_channel.account
    api = client_for(ApiKeyFactory(user=UserFactory(account=account)))
    git_draft = post_create(channel=git_channel, title="Draft", body="x")
    blog_post = PostFactory(channel=ChannelFactory(account=account, platform="blog"), publication_status="published")
    api_post = ApiPublicationFactory(post__channel=ChannelFactory(account=account, platform="api")).post
    # Even a stray job (a channel whose platform was changed) is not a blog post's publication.
    PublicationJobFactory(channel=blog_post.channel, post_id=blog_post.pk, state="succeeded")

    for post in (git_draft, blog_post, api_post):
        form = single_forms(api, post)[0]
        assert "publication" in form and form["publication"] is None, post.channel.platform


def test_a_jobs_change_is_seen_at_the_very_next_request_though_the_post_is_cached(api, git_channel):
    post = post_create(channel=git_channel, title="Watched", body="x")
    post_publish_now(post_id=post.pk)
    job = PublicationJob.objects.get(post_id=post.pk)
    url = f"/v1/posts/{post.pk}"
    first = api.get(url)
    assert first.json()["data"]["publication"]["state"] == "queued"
    with CaptureQueriesContext(connection) as queries:
        again = api.get(url)
    # The representation cache is in play: the second read does not read the job table.
    assert again.content == first.content
    assert not any("publishing_publicationjob" in query["sql"] for query in queries.captured_queries)

    # A change written straight to the table (as a worker's conditional UPDATE does).
    PublicationJob.objects.filter(pk=job.pk).update(state="running", attempts=1)

    response = api.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert response.status_code == 200
    assert (response.json()["data"]["publication"]["state"], response.json()["data"]["publication"]["attempts"]) == (
        "running",
        1,
    )

    PublicationJob.objects.filter(pk=job.pk).update(state="queued", locked_until=None)
    channel_run(git_channel.pk)

    form = api.get(f"/v1/channels/{git_channel.pk}/posts/{post.pk}").json()["data"]
    assert form["publication"]["state"] == "succeeded" and form["publication"]["reference"]
    assert form["publication_status"] == "published"


def test_a_new_job_and_a_deleted_job_are_seen_at_the_next_request(api, git_channel):
    post = post_create(channel=git_channel, title="Comes and goes", body="x")
    url = f"/v1/posts/{post.pk}"
    assert api.get(url).json()["data"]["publication"] is None

    post_publish_now(post_id=post.pk)
    assert api.get(url).json()["data"]["publication"]["state"] == "queued"

    PublicationJob.objects.filter(post_id=post.pk).delete()
    assert api.get(url).json()["data"]["publication"] is None


def test_another_channels_job_does_not_touch_the_posts_publication(api, git_channel):
    post = post_create(channel=git_channel, title="Mine", body="x")
    other = GitDestinationFactory(channel__account=git_channel.account).channel
    PublicationJobFactory(channel=other, title="Theirs")

    assert publication_of(api, post) is None


# --- What documents it --------------------------------------------------------------------------


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def test_the_openapi_schema_documents_the_publication_object_as_nullable_with_its_fields(client):
    schema = client.get("/v1/openapi.json").json()
    post_detail = schema["components"]["schemas"]["PostDetail"]

    publication = post_detail["properties"]["publication"]

    # OpenAPI 3.1: null is one of the alternatives (3.0's `nullable`).
    ref, null = publication["oneOf"]
    assert null == {"type": "null"} and "publication" in post_detail["required"]
    assert "null where there is none" in publication["description"]
    shape = resolve(schema, ref)
    assert set(shape["properties"]) == PUBLICATION_FIELDS == set(shape["required"])
    fields = shape["properties"]
    nullable = {name for name, field in fields.items() if "null" in field.get("type", [])}
    assert nullable == {"last_error", "reference", "url"}
    assert resolve(schema, fields["state"])["enum"] == ["queued", "running", "succeeded", "failed"]
    assert resolve(schema, fields["action"])["enum"] == ["publish", "update", "unpublish"]
    assert fields["updated_at"] == {"type": "string", "format": "date-time"}
    assert fields["attempts"]["type"] == fields["id"]["type"] == "integer"
    # Both single-post reads return the form with it.
    for path in ("/v1/posts/{id}", "/v1/channels/{channel_id}/posts/{id}"):
        body = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert resolve(schema, resolve(schema, body)["properties"]["data"])["properties"]["publication"] == publication


def test_post_failed_is_listed_and_subscribable_like_the_other_events(account_admin_client, private_targets):
    client, account = account_admin_client
    assert "post.failed" in SUBSCRIBABLE_EVENTS

    page = client.get("/admin/webhooks/webhookendpoint/add/")
    offered = [value for value, _ in page.context["adminform"].form.fields["events"].choices]
    assert offered == SUBSCRIBABLE_EVENTS
    response = client.post(
        "/admin/webhooks/webhookendpoint/add/",
        {"url": "http://127.0.0.1:9/hook", "events": ["post.failed"], "enabled": "on"},
    )
    assert response.status_code == 302
    assert account.webhook_endpoints.get().events == ["post.failed"]


def test_a_job_that_fails_for_good_sends_post_failed_to_its_subscribers_only(git_channel, tmp_path, settings):
    settings.PUBLISH_RETRY_DELAYS = []  # the first failure is the last
    account = git_channel.account
    listening = WebhookEndpointFactory(account=account, events=["post.failed"])
    WebhookEndpointFactory(account=account, events=["post.published"])
    GitDestination.objects.filter(channel=git_channel).update(repository_url=str(tmp_path / "missing.git"))
    post = post_create(channel=git_channel, title="Doomed", body="x")
    post_publish_now(post_id=post.pk)

    channel_run(git_channel.pk)

    event = Event.objects.get(kind="post.failed")
    assert [delivery.endpoint_id for delivery in Delivery.objects.filter(event=event)] == [listening.pk]
    job = PublicationJob.objects.get(post_id=post.pk)
    data = json.loads(event.body)["data"]
    assert data["post_id"] == post.pk and data["post"]["id"] == post.pk
    assert data["publication"]["id"] == job.pk and data["publication"]["state"] == "failed"
    assert data["publication"]["last_error"] == job.last_error
    assert not Event.objects.filter(kind="post.published").exists()


@pytest.fixture
def account_admin_client(git_channel):
    account = git_channel.account
    return admin_session(AdminUserFactory(account=account)), account
