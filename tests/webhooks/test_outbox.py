import json

import pytest
from django.db import transaction

from apps.webhooks.models import Delivery, Event
from apps.webhooks.services import event_emit
from tests.factories import AccountFactory, WebhookEndpointFactory

pytestmark = pytest.mark.django_db


def test_emit_writes_one_delivery_per_subscribed_enabled_endpoint(account, django_capture_on_commit_callbacks):
    everything = WebhookEndpointFactory(account=account, events=[])
    published_only = WebhookEndpointFactory(account=account, events=["post.published"])
    WebhookEndpointFactory(account=account, events=["post.unpublished"])
    WebhookEndpointFactory(account=account, enabled=False)
    WebhookEndpointFactory(account=AccountFactory())  # another account's endpoint
    with django_capture_on_commit_callbacks() as callbacks, transaction.atomic():
        event = event_emit(account=account, kind="post.published", data={"post": {"id": 1}}, post_id=1)
    assert {d.endpoint_id for d in event.deliveries.all()} == {everything.id, published_only.id}
    assert len(callbacks) == 1


def test_event_body_is_fixed_at_emit_time(account):
    with transaction.atomic():
        event = event_emit(account=account, kind="post.updated", data={"post": {"title": "v1"}})
    account.name = "Renamed"
    account.save()
    body = json.loads(Event.objects.get(pk=event.pk).body)
    assert body["account"]["name"] == "Hooked Inc"
    assert body["data"]["post"]["title"] == "v1"


def test_rolled_back_change_sends_nothing(account, django_capture_on_commit_callbacks):
    WebhookEndpointFactory(account=account)
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(RuntimeError), transaction.atomic():
        event_emit(account=account, kind="post.published", data={})
        raise RuntimeError("the change failed")
    assert callbacks == []
    assert not Event.objects.exists() and not Delivery.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_emit_outside_a_transaction_is_refused(account):
    with pytest.raises(RuntimeError, match="inside the transaction"):
        event_emit(account=account, kind="post.published", data={})
