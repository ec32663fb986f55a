"""Rotating an endpoint's secret keeps the old one valid for WEBHOOK_SECRET_OVERLAP: real
receivers, one holding only the old secret and one only the new, verify every delivery during the
overlap, in both signature formats; after it only the new secret verifies. Expiring the old secret
early is a button on the endpoint's page."""

import html
import json
import logging
import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.errors import Conflict
from apps.webhooks.models import Attempt, Delivery, DeliveryStatus
from apps.webhooks.services import (
    deliveries_attempt,
    endpoint_expire_previous_secret,
    endpoint_rotate_secret,
    endpoint_save,
)
from tests.conftest import admin_session, settings_loaded
from tests.factories import AdminUserFactory, ApiKeyFactory
from tests.users.test_sso_step_up import asks_for_password, sso_browser
from tests.webhooks.verifying import service_verifier, standard_verifier, start

pytestmark = pytest.mark.django_db

ENDPOINTS = "/admin/webhooks/webhookendpoint/"
VERIFIER = {"service": service_verifier, "standard": standard_verifier}
ID_HEADER = {"service": "X-Service-Delivery", "standard": "webhook-id"}
NOTHING_TO_EXPIRE = "There is no previous secret to expire: only the current secret signs deliveries."


@pytest.fixture
def receivers():
    """Two receivers, each behind its own endpoint; what they hold is set by the test."""
    servers = [start(lambda headers, body: False) for _ in range(2)]
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def settings_client(account):
    return admin_session(AdminUserFactory(account=account))


def deliver(emit, count: int) -> dict[int, list[str]]:
    """Emit `count` events and attempt their deliveries; the delivery ids by endpoint."""
    ids = [str(d.pk) for _ in range(count) for d in emit().deliveries.order_by("endpoint_id")]
    deliveries_attempt(delivery_ids=ids)
    by_endpoint: dict[int, list[str]] = {}
    for delivery in Delivery.objects.filter(pk__in=ids).order_by("created_at", "endpoint_id"):
        by_endpoint.setdefault(delivery.endpoint_id, []).append(str(delivery.pk))
    return by_endpoint


@pytest.mark.parametrize("signature_format", ["service", "standard"])
def test_receivers_holding_only_the_old_or_only_the_new_secret_verify_every_delivery_during_the_overlap_and_only_the_new_one_after_it(  # noqa: E501
    account, receivers, private_targets, emit, settings, signature_format
):
    settings.WEBHOOK_SECRET_OVERLAP = timedelta(seconds=2)
    old_holder, new_holder = receivers
    holds_old, holds_new = (
        endpoint_save(account=account, url=receiver.url, signature_format=signature_format) for receiver in receivers
    )
    old_holder.verify = VERIFIER[signature_format](holds_old.secret)
    rotated_at = timezone.now()
    endpoint_rotate_secret(endpoint=holds_old)
    endpoint_rotate_secret(endpoint=holds_new)
    holds_new.refresh_from_db()
    new_holder.verify = VERIFIER[signature_format](holds_new.secret)

    during = deliver(emit, 3)

    assert timezone.now() < rotated_at + settings.WEBHOOK_SECRET_OVERLAP, "the overlap ended before the deliveries"
    header = ID_HEADER[signature_format]
    assert old_holder.verified_ids(header) == during[holds_old.pk]
    assert new_holder.verified_ids(header) == during[holds_new.pk]
    delivered = [delivery_id for ids in during.values() for delivery_id in ids]
    assert set(Delivery.objects.filter(pk__in=delivered).values_list("status", flat=True)) == {DeliveryStatus.SUCCEEDED}
    if signature_format == "standard":
        # One request each, both signatures in the one header, the new secret's first.
        assert len(old_holder.requests) == len(new_holder.requests) == 3
        assert all(len(r.headers["webhook-signature"].split(" ")) == 2 for r in old_holder.requests)
    else:
        # The new secret's signature first; the receiver holding only the old one refuses it and
        # gets the same delivery at once, signed with the old one. The other sees one request.
        assert old_holder.verdicts == [False, True] * 3
        assert [r.headers[header] for r in old_holder.requests] == [i for i in during[holds_old.pk] for _ in "12"]
        assert new_holder.verdicts == [True] * 3
    # One attempt per delivery, recorded with the request whose answer counted.
    for delivery_id in during[holds_old.pk]:
        [recorded] = Attempt.objects.filter(delivery_id=delivery_id)
        assert recorded.response_status == 200
        assert old_holder.verify(recorded.request_headers, recorded.request_body.encode())

    time.sleep(max(0.0, (rotated_at + settings.WEBHOOK_SECRET_OVERLAP - timezone.now()).total_seconds()) + 0.1)
    old_holder.requests.clear(), old_holder.verdicts.clear(), new_holder.requests.clear(), new_holder.verdicts.clear()

    after = deliver(emit, 3)

    assert old_holder.verdicts == [False] * 3  # one request each: nothing is re-sent with an expired secret
    assert new_holder.verified_ids(header) == after[holds_new.pk] and new_holder.verdicts == [True] * 3
    if signature_format == "standard":
        assert all(" " not in r.headers["webhook-signature"] for r in new_holder.requests)
    assert all(
        d.status == DeliveryStatus.PENDING and d.last_status_code == 401
        for d in Delivery.objects.filter(pk__in=after[holds_old.pk])
    )


def test_rotation_sets_the_overlap_from_the_setting_and_a_new_secret_of_the_endpoint_s_format(
    account, private_targets, settings
):
    settings.WEBHOOK_SECRET_OVERLAP = timedelta(hours=6)
    service = endpoint_save(account=account, url="http://127.0.0.1:9/a")
    standard = endpoint_save(account=account, url="http://127.0.0.1:9/b", signature_format="standard")
    before = {service.pk: service.secret, standard.pk: standard.secret}
    started = timezone.now()

    for endpoint in (service, standard):
        endpoint_rotate_secret(endpoint=endpoint)
        endpoint.refresh_from_db()
        assert endpoint.previous_secret == before[endpoint.pk] != endpoint.secret
        expires_at = endpoint.previous_secret_expires_at
        assert started + timedelta(hours=6) <= expires_at <= timezone.now() + timedelta(hours=6)
    assert re.fullmatch(r"whsec_[0-9a-f]{64}", service.secret)
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", standard.secret)


def test_rotating_again_during_the_overlap_is_refused_until_the_previous_secret_is_expired(account, private_targets):
    endpoint = endpoint_save(account=account, url="http://127.0.0.1:9/a")
    first = endpoint.secret
    current = endpoint_rotate_secret(endpoint=endpoint)

    with pytest.raises(Conflict, match="Expire it first"):
        endpoint_rotate_secret(endpoint=endpoint)
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.previous_secret) == (current, first)

    endpoint_expire_previous_secret(endpoint=endpoint)
    newest = endpoint_rotate_secret(endpoint=endpoint)
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.previous_secret) == (newest, current)


def test_a_refusal_of_the_new_signature_that_says_gone_is_not_sent_again_with_the_old_one(
    account, receiver, private_targets, emit
):
    endpoint = endpoint_save(account=account, url=receiver.url)
    endpoint_rotate_secret(endpoint=endpoint)
    receiver.script = [(410, 0)]

    deliver(emit, 1)

    assert len(receiver.wait_for(1)) == 1 and len(receiver.requests) == 1
    endpoint.refresh_from_db()
    assert not endpoint.enabled


def test_the_expire_button_ends_the_overlap_at_once_and_shows_only_while_there_is_one(
    account, settings_client, receivers, private_targets, emit
):
    old_holder, _ = receivers
    endpoint = endpoint_save(account=account, url=old_holder.url)
    old_holder.verify = service_verifier(endpoint.secret)
    page = settings_client.get(f"{ENDPOINTS}{endpoint.pk}/change/").content.decode()
    assert "/expire-previous-secret/" not in page

    rotated = settings_client.post(f"{ENDPOINTS}{endpoint.pk}/rotate-secret/", follow=True).content.decode()
    endpoint.refresh_from_db()
    until = f"{endpoint.previous_secret_expires_at:%Y-%m-%d %H:%M:%S} UTC"
    assert "Signing secret rotated" in rotated and until in html.unescape(rotated)
    assert f'action="{ENDPOINTS}{endpoint.pk}/expire-previous-secret/"' in rotated
    assert endpoint.secret in rotated and endpoint.previous_secret not in rotated
    assert deliver(emit, 1) and old_holder.verdicts == [False, True]

    response = settings_client.post(f"{ENDPOINTS}{endpoint.pk}/expire-previous-secret/", follow=True)

    page = response.content.decode()
    assert "The previous secret has expired" in page and "/expire-previous-secret/" not in page
    endpoint.refresh_from_db()
    assert endpoint.previous_secret == "" and endpoint.previous_secret_expires_at is None
    deliver(emit, 1)
    assert old_holder.verdicts == [False, True, False]


def test_expiring_when_there_is_nothing_to_expire_shows_the_error_only(account, settings_client, private_targets):
    endpoint = endpoint_save(account=account, url="http://127.0.0.1:9/a")

    response = settings_client.post(f"{ENDPOINTS}{endpoint.pk}/expire-previous-secret/", follow=True)

    messages = [str(m) for m in response.context["messages"]]
    assert messages == [f"{endpoint.url}: {NOTHING_TO_EXPIRE}"]


def test_a_single_sign_on_session_confirms_its_password_before_it_may_expire_a_secret(client_for, private_targets):
    admin = AdminUserFactory()
    endpoint = endpoint_save(account=admin.account, url="http://127.0.0.1:9/a")
    endpoint_rotate_secret(endpoint=endpoint)
    browser = sso_browser(client_for, ApiKeyFactory(user=admin, scopes=["write:sso"]), admin)
    url = f"{ENDPOINTS}{endpoint.pk}/expire-previous-secret/"

    assert asks_for_password(browser.post(url), url)
    endpoint.refresh_from_db()
    assert endpoint.previous_secret


def test_no_secret_reaches_the_log(account, receivers, private_targets, emit, caplog):
    old_holder, _ = receivers
    caplog.set_level(logging.DEBUG)
    endpoint = endpoint_save(account=account, url=old_holder.url, signature_format="standard")
    old = endpoint.secret
    old_holder.verify = standard_verifier(old)
    new = endpoint_rotate_secret(endpoint=endpoint)
    deliver(emit, 1)
    endpoint_expire_previous_secret(endpoint=endpoint)

    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "secret rotated" in logged and "webhook attempt" in logged and "previous secret expired" in logged
    assert old_holder.verdicts == [True]
    for secret in (old, new):
        assert secret not in logged and secret.removeprefix("whsec_") not in logged


def test_the_overlap_is_24_hours_unless_set_and_a_bad_value_stops_the_start_up():
    show = "import config.settings as s; print(s.WEBHOOK_SECRET_OVERLAP.total_seconds())"
    assert json.loads(settings_loaded(show, {}, unset=("WEBHOOK_",)).stdout) == 24 * 3600
    assert json.loads(settings_loaded(show, {"WEBHOOK_SECRET_OVERLAP": "PT90M"}).stdout) == 5400
    refused = settings_loaded(show, {"WEBHOOK_SECRET_OVERLAP": "a day"})
    assert refused.returncode != 0 and "WEBHOOK_SECRET_OVERLAP" in refused.stderr
