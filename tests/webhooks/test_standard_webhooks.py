"""An endpoint signs its deliveries either with the specification's X-Service-* headers (the
default, unchanged) or as Standard Webhooks; real deliveries are verified with the
`standardwebhooks` library and the secret the Settings area shows."""

import base64
import html
import re

import pytest
from django.utils import timezone

from apps.core import crypto
from apps.core.errors import InvalidInput
from apps.webhooks.models import Delivery, DeliveryStatus, WebhookEndpoint, new_standard_secret
from apps.webhooks.services import delivery_attempt, endpoint_save
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, WebhookEndpointFactory
from tests.webhooks.verifying import service_verifier, standard_verifier, start

pytestmark = pytest.mark.django_db

ENDPOINTS = "/admin/webhooks/webhookendpoint/"


@pytest.fixture
def settings_client(account):
    return admin_session(AdminUserFactory(account=account))


@pytest.fixture
def verifying_receiver():
    """A receiver that verifies nothing until the test gives it a secret (`receiver.verify = ...`)."""
    server = start(lambda headers, body: False)
    yield server
    server.stop()


def secret_shown(client, endpoint: WebhookEndpoint) -> str:
    page = client.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()
    return html.unescape(re.search(r'<code id="webhook-secret">([^<]+)</code>', page)[1])


def attempt(delivery: Delivery):
    return delivery_attempt(delivery_id=str(delivery.pk))


def test_a_standard_endpoint_s_deliveries_verify_with_the_library_and_the_secret_the_settings_area_shows(
    account, settings_client, verifying_receiver, private_targets, emit
):
    endpoint = endpoint_save(account=account, url=verifying_receiver.url, signature_format="standard")
    secret = secret_shown(settings_client, endpoint)
    # A fresh secret as the standard serializes one: whsec_ and the base64 of 32 random bytes.
    assert secret == endpoint.secret and re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    verifying_receiver.verify = standard_verifier(secret)

    delivery = emit().deliveries.get()
    assert attempt(delivery).succeeded
    [request] = verifying_receiver.wait_for(1)

    assert verifying_receiver.verdicts == [True]
    assert request.headers["webhook-id"] == str(delivery.pk)
    assert abs(int(request.headers["webhook-timestamp"]) - timezone.now().timestamp()) < 60
    assert re.fullmatch(r"v1,[A-Za-z0-9+/]{43}=", request.headers["webhook-signature"])
    assert request.headers["X-Service-Event"] == "post.published"
    assert not {"X-Service-Signature", "X-Service-Timestamp", "X-Service-Delivery"} & set(request.headers)


def test_every_attempt_of_a_delivery_carries_its_id_as_webhook_id_and_verifies(
    account, verifying_receiver, private_targets, emit
):
    endpoint = endpoint_save(account=account, url=verifying_receiver.url, signature_format="standard")
    verifying_receiver.verify = standard_verifier(endpoint.secret)
    verifying_receiver.script = [(503, 0)]
    delivery = emit().deliveries.get()

    assert not attempt(delivery).succeeded
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    assert attempt(delivery).succeeded

    requests = verifying_receiver.wait_for(2)
    assert [r.headers["webhook-id"] for r in requests] == [str(delivery.pk)] * 2
    assert verifying_receiver.verdicts == [True, True]


def test_a_receiver_with_another_secret_refuses_a_standard_delivery(account, verifying_receiver, private_targets, emit):
    endpoint_save(account=account, url=verifying_receiver.url, signature_format="standard")
    verifying_receiver.verify = standard_verifier(new_standard_secret())
    delivery = emit().deliveries.get()

    assert attempt(delivery).response_status == 401
    assert verifying_receiver.verdicts == [False]


def test_the_specification_s_format_stays_the_default_and_unchanged(account, receiver, private_targets, emit):
    endpoint = endpoint_save(account=account, url=receiver.url)
    assert endpoint.signature_format == "service" and re.fullmatch(r"whsec_[0-9a-f]{64}", endpoint.secret)

    attempt(emit().deliveries.get())
    [request] = receiver.wait_for(1)

    assert service_verifier(endpoint.secret)(request.headers, request.body)
    assert not any(name.lower().startswith("webhook-") for name in request.headers)


def test_switching_the_format_in_the_settings_area_keeps_the_secret_and_both_formats_verify_with_it(
    account, settings_client, verifying_receiver, private_targets, emit
):
    endpoint = WebhookEndpointFactory(account=account, url=verifying_receiver.url)
    secret = endpoint.secret
    form = {"account": account.pk, "url": endpoint.url, "enabled": "on", "description": ""}

    response = settings_client.post(f"{ENDPOINTS}{endpoint.pk}/change/", {**form, "signature_format": "standard"})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.signature_format == "standard"
    assert endpoint.secret == secret == secret_shown(settings_client, endpoint)
    # The specification's hex secret is base64 too: the library reads it as 48 bytes.
    verifying_receiver.verify = standard_verifier(secret)
    assert attempt(emit().deliveries.get()).succeeded

    settings_client.post(f"{ENDPOINTS}{endpoint.pk}/change/", {**form, "signature_format": "service"})
    endpoint.refresh_from_db()
    assert endpoint.signature_format == "service" and endpoint.secret == secret
    verifying_receiver.verify = service_verifier(secret)
    assert attempt(emit().deliveries.get()).succeeded
    assert verifying_receiver.verdicts == [True, True]


def test_an_endpoint_added_in_the_settings_area_as_standard_gets_a_standard_secret(
    account, settings_client, private_targets
):
    response = settings_client.post(
        f"{ENDPOINTS}add/",
        {"account": account.pk, "url": "http://127.0.0.1:9/hook", "enabled": "on", "signature_format": "standard"},
    )
    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.signature_format == "standard"
    assert len(base64.b64decode(endpoint.secret.removeprefix("whsec_"), validate=True)) == 32


def test_a_secret_the_standard_cannot_read_is_replaced_when_the_format_switches_to_standard(account, private_targets):
    endpoint = WebhookEndpointFactory(account=account, url="http://127.0.0.1:9/hook", secret="whsec_not base64!")

    endpoint_save(endpoint=endpoint, account=account, url=endpoint.url, signature_format="standard")

    endpoint.refresh_from_db()
    assert endpoint.secret != "whsec_not base64!"
    assert len(base64.b64decode(endpoint.secret.removeprefix("whsec_"), validate=True)) == 32


def test_an_unknown_format_is_refused_with_the_field_named(account, private_targets):
    with pytest.raises(InvalidInput) as refused:
        endpoint_save(account=account, url="http://127.0.0.1:9/hook", signature_format="svix")
    assert refused.value.details["field"] == "signature_format"
    assert not WebhookEndpoint.objects.exists()


def test_a_standard_endpoint_whose_secret_no_library_reads_sends_nothing_and_says_why(
    account, verifying_receiver, private_targets, emit
):
    endpoint = endpoint_save(account=account, url=verifying_receiver.url, signature_format="standard")
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(secret_encrypted=crypto.encrypt("whsec_???"))
    delivery = emit().deliveries.get()

    outcome = attempt(delivery)

    assert outcome.response_status is None and "not a Standard Webhooks secret" in outcome.error
    assert verifying_receiver.requests == []
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
