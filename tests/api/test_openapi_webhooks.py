"""The webhooks of /v1/openapi.json (OpenAPI 3.1): one per event kind, and real deliveries of every
kind, in each signature format, carry what their webhook declares, headers and body."""

import copy
import json

import pytest
from django.db import transaction
from django.utils import timezone
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from apps.posts.api_workflow import post_mark_publishing_pending, post_publish, post_unpublish
from apps.posts.models import Post
from apps.posts.pipeline_subject import post_publication_failed
from apps.posts.services import post_update_content
from apps.posts.writing import Writer
from apps.publishing.models import PublicationJob
from apps.publishing.newsletter.services import subscriber_create, subscriber_unsubscribe
from apps.stories.services import ChannelChoice, story_create
from apps.users.models import LoginMethod, Role
from apps.users.services import user_create, user_delete, user_record_login, user_update
from apps.webhooks.models import Delivery, Event, EventKind, SignatureFormat
from apps.webhooks.services import delivery_attempt, endpoint_save, endpoint_send_test
from tests.conftest import needs_chromium
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ChannelFactory,
    GitDestinationFactory,
    MediaFactory,
    NewsletterChannelFactory,
    PostFactory,
    PublicationJobFactory,
    TagFactory,
)

pytestmark = pytest.mark.django_db

SCHEMA_URI = "urn:cps:openapi"
BODY = "requestBody/content/application~1json/schema"


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def closed(node):
    """The schema with every object that lists its properties closed to others, so that a field a
    delivery carries but the schema does not declare fails too."""
    if isinstance(node, list):
        return [closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: closed(value) for key, value in node.items()}
    if node.get("type") == "object" and "properties" in node:
        node.setdefault("additionalProperties", False)
    return node


def test_the_schema_has_a_webhook_for_every_event_kind_with_its_body_headers_and_answers(schema):
    assert schema["openapi"].startswith("3.1.")
    assert sorted(schema["webhooks"]) == sorted(EventKind.values)
    for kind, item in schema["webhooks"].items():
        operation = item["post"]
        assert operation["requestBody"]["required"] is True
        body = resolve(schema, operation["requestBody"]["content"]["application/json"]["schema"])
        assert body["properties"]["event"]["const"] == kind
        assert set(body["required"]) == {"event", "timestamp", "account", "data"}
        headers = {parameter["name"]: parameter for parameter in operation["parameters"]}
        assert headers["X-Service-Event"]["required"] is True
        assert headers["X-Service-Event"]["schema"]["const"] == kind
        # The headers of one signature format are not required: the endpoint's format decides.
        by_format = {parameter.get("x-signature-format") for parameter in headers.values()}
        assert by_format == {None, *SignatureFormat.values}
        assert all(not p["required"] for p in headers.values() if p.get("x-signature-format"))
        assert {"2XX", "410"} <= set(operation["responses"])


def test_the_bodies_are_typed_by_the_representations_the_apps_write_into_data(schema):
    schemas = schema["components"]["schemas"]

    def data_of(kind: str) -> dict:
        body = resolve(schema, schema["webhooks"][kind]["post"]["requestBody"]["content"]["application/json"]["schema"])
        return resolve(schema, body["properties"]["data"])

    for kind in ("post.updated", "post.publishing_pending", "post.published", "post.unpublished"):
        assert data_of(kind)["properties"]["post"]["allOf"] == [{"$ref": "#/components/schemas/PostContent"}]
    failed = data_of("post.failed")["properties"]
    assert failed["post"]["oneOf"] == [{"$ref": "#/components/schemas/PostContent"}, {"type": "null"}]
    assert failed["publication"]["allOf"] == [{"$ref": "#/components/schemas/Publication"}]
    # The post as the single-post form shows it, less its planned time, where readers find it and its publication.
    assert set(schemas["PostDetail"]["properties"]) - set(schemas["PostContent"]["properties"]) == {
        "scheduled_at",
        "url",
        "publication",
    }
    for kind in EventKind.values:
        if kind.startswith("user."):
            assert data_of(kind)["properties"]["user"]["allOf"] == [{"$ref": "#/components/schemas/User"}]
    assert set(data_of("user.role_changed")["required"]) == {"user", "old_role", "new_role"}
    assert set(data_of("user.login")["required"]) == {"user", "via"}
    assert set(data_of("user.updated")["required"]) == {"user", "changed"}
    assert set(data_of("user.created")["properties"]) == {"user"}
    for kind in ("subscriber.confirmed", "subscriber.unsubscribed"):
        assert data_of(kind)["properties"]["subscriber"]["allOf"] == [{"$ref": "#/components/schemas/Subscriber"}]
        assert data_of(kind)["properties"]["channel"]["allOf"] == [{"$ref": "#/components/schemas/ChannelRef"}]


def emit_every_event(account, endpoint) -> None:
    """Make each kind of event happen through the services that send it."""
    AdminUserFactory(account=account)  # so that the user below is not the last admin
    api = ChannelFactory(account=account, platform="api")
    post = PostFactory(
        channel=api, publication_status="scheduled", scheduled_at=timezone.now(), tags=[TagFactory(account=account)]
    )
    MediaFactory(post=post)
    MediaFactory(post=post, kind="document", width=None, height=None, alt_text="")
    post_mark_publishing_pending(post_id=post.pk)
    post_publish(
        post_id=post.pk,
        channel_id=api.pk,
        account=account,
        external_id="ext-1",
        external_url="https://partner.example.com/1",
    )
    post_update_content(post=post, title="A new title", meta_title="Meta")
    post_unpublish(post_id=post.pk, channel_id=api.pk, account=account)
    git = ChannelFactory(account=account, platform="git")
    now = timezone.now()
    failed = PublicationJobFactory(channel=git, state="failed", attempts=5, last_error="It broke.", finished_at=now)
    # A deleted post's unpublish that failed for good: `data.post` is null.
    gone = PublicationJobFactory(
        channel=git,
        post_id=987654321,
        action="unpublish",
        state="failed",
        attempts=1,
        last_error="Gone.",
        finished_at=now,
    )
    with transaction.atomic():
        post_publication_failed(job=failed)
        post_publication_failed(job=gone)
    emit_story_events(account)
    newsletter = NewsletterChannelFactory(account=account)
    subscriber = subscriber_create(channel=newsletter, email="reader@example.com", name="Rea Der", confirmed=True)
    subscriber_unsubscribe(token=subscriber.token)
    user = user_create(account=account, email="webhooks@example.com", name="Wes Hook", send_invitation=False)
    user_update(user=user, role=Role.EDITOR, name="Wes Hooks")
    user_record_login(user=user, via=LoginMethod.SSO)
    user_delete(user=user)
    endpoint_send_test(endpoint=endpoint)


def emit_story_events(account) -> None:
    """story.published (a story on a blog), story.partially_published (on a blog and a repository whose
    job failed for good)."""
    editor = Writer(may_publish=True)
    blog = ChannelFactory(account=account, platform="blog")
    story_create(
        account_id=account.pk,
        writer=editor,
        title="Everywhere",
        publication_status="published",
        channels=[ChannelChoice(blog.pk)],
    )
    repository = GitDestinationFactory(channel__account=account).channel
    partly = story_create(
        account_id=account.pk,
        writer=editor,
        title="Partly",
        publication_status="published",
        channels=[ChannelChoice(blog.pk), ChannelChoice(repository.pk, overrides={"title": "In the docs"})],
    )
    job = PublicationJob.objects.get(post_id=Post.objects.get(story_link__story=partly, channel=repository).pk)
    PublicationJob.objects.filter(pk=job.pk).update(
        state="failed", last_error="The host refused.", finished_at=timezone.now()
    )
    job.refresh_from_db()
    with transaction.atomic():
        post_publication_failed(job=job)


@pytest.mark.parametrize("signature_format", SignatureFormat.values)
def test_real_deliveries_of_every_event_kind_match_their_webhook_in_the_schema(
    schema, receiver, private_targets, signature_format
):
    account = AccountFactory(name="Typed Events Ltd")
    endpoint = endpoint_save(account=account, url=receiver.url, signature_format=signature_format)
    emit_every_event(account, endpoint)
    # Derived from the enum: a new kind of event without a way to make it happen here fails.
    assert set(Event.objects.values_list("kind", flat=True)) == set(EventKind.values)

    deliveries = list(Delivery.objects.filter(endpoint=endpoint).order_by("created_at", "event_id"))
    for delivery in deliveries:
        delivery_attempt(delivery_id=str(delivery.id))
    received = receiver.wait_for(len(deliveries))
    assert len(received) == len(deliveries)

    registry = Registry().with_resource(SCHEMA_URI, DRAFT202012.create_resource(closed(copy.deepcopy(schema))))
    problems = []
    for request in received:
        body = json.loads(request.body)
        kind = body["event"]
        declared = Draft202012Validator(
            {"$ref": f"{SCHEMA_URI}#/webhooks/{kind}/post/{BODY}"},
            registry=registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        problems += [f"{kind} body {list(e.absolute_path)}: {e.message}" for e in declared.iter_errors(body)]
        headers = {name.lower(): value for name, value in request.headers.items()}
        for parameter in schema["webhooks"][kind]["post"]["parameters"]:
            name, value = parameter["name"], headers.get(parameter["name"].lower())
            # Sent exactly when it is sent to every endpoint or to those of this endpoint's format.
            expected = parameter["required"] or parameter.get("x-signature-format") == signature_format
            if (value is not None) != expected:
                problems.append(f"{kind} header {name}: {'missing' if expected else 'sent'}")
            elif value is not None:
                header_schema = Draft202012Validator(
                    parameter["schema"], format_checker=Draft202012Validator.FORMAT_CHECKER
                )
                problems += [f"{kind} header {name}: {e.message}" for e in header_schema.iter_errors(value)]
    assert problems == []
    assert sorted({json.loads(r.body)["event"] for r in received}) == sorted(EventKind.values)
    # The null post of a deleted post's failure was among them, and validated.
    assert any(json.loads(r.body)["data"].get("post", {}) is None for r in received)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@needs_chromium
def test_the_docs_page_lists_every_webhook(browser, live_server):
    page = browser.new_page()
    page.goto(f"{live_server.url}/v1/docs")
    page.get_by_text("Webhooks", exact=True).wait_for()
    shown = page.locator(".opblock-summary-path").all_inner_texts()
    assert set(EventKind.values) <= {text.strip() for text in shown}
