"""What a receiver gets in `data.post`: the full post at the time of the event, its external
references included, while a body stored before a change of shape is sent as it was stored."""

import json

import pytest

from apps.posts.editor_status import post_set_status
from apps.webhooks.models import Delivery, Event
from apps.webhooks.services import delivery_attempt
from tests.factories import ApiKeyFactory, ApiPublicationFactory, PostFactory

pytestmark = pytest.mark.django_db


def delivered_post(receiver, kind: str) -> dict:
    """Attempt the pending delivery of `kind` and return the `data.post` the receiver got."""
    delivery = Delivery.objects.get(event__kind=kind)
    delivery_attempt(delivery_id=str(delivery.id))
    [request] = [r for r in receiver.wait_for(1) if r.headers["X-Service-Event"] == kind]
    return json.loads(request.body)["data"]["post"]


def test_a_post_published_delivery_carries_the_external_reference_given_to_the_publish_call(
    endpoint, receiver, client_for, account
):
    record = ApiPublicationFactory(post__channel__account=account)
    post = record.post
    key = ApiKeyFactory(user__account=account)
    published = client_for(key).patch(
        f"/v1/channels/{post.channel_id}/posts/{post.id}/publish",
        {"post": {"external_id": "partner-2001", "external_url": "https://partner.example.com/a/2001"}},
        format="json",
    )
    assert published.status_code == 200, published.content

    data = delivered_post(receiver, "post.published")
    assert data["id"] == post.id
    assert data["external_id"] == "partner-2001"
    assert data["external_url"] == "https://partner.example.com/a/2001"
    assert data["publication_status"] == "published"
    # The same full post as the API's single-post form at that moment (which adds where readers
    # find it, the external address here, its publication on a destination: none on an api channel, and its
    # planned time: none once published).
    api = client_for(key).get(f"/v1/posts/{post.id}").json()["data"]
    assert api.pop("publication") is None
    assert api.pop("url") == "https://partner.example.com/a/2001"
    assert api.pop("scheduled_at") is None
    assert data == api


def test_post_events_without_an_external_reference_carry_nulls(endpoint, receiver, account):
    post = PostFactory(channel__account=account, channel__platform="blog")
    post_set_status(post_id=post.pk, status="published")

    data = delivered_post(receiver, "post.published")
    assert data["external_id"] is None
    assert data["external_url"] is None


def test_a_body_stored_before_the_external_fields_existed_is_sent_unchanged(endpoint, receiver, emit):
    # An event written by the earlier code: its `data.post` has no external references.
    event = emit(data={"post": {"id": 7, "title": "Old shape"}}, post_id=7)
    delivery_attempt(delivery_id=str(event.deliveries.get().id))
    [request] = receiver.wait_for(1)
    assert request.body == Event.objects.get(pk=event.pk).body.encode()
    assert json.loads(request.body)["data"]["post"] == {"id": 7, "title": "Old shape"}
