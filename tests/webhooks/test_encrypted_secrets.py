"""Webhook signing secrets are stored encrypted under FERNET_KEYS, as the publishing credentials
are: the database holds no clear secret (a dump signs for no receiver), deliveries still verify
with the secret shown, rotate_credentials moves them to the newest key, and the migration
encrypts the clear secrets endpoints had before it (and gives them back on the way down)."""

import json
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.core import crypto
from apps.webhooks.models import WebhookEndpoint
from apps.webhooks.services import delivery_attempt, endpoint_rotate_secret, endpoint_save
from tests.conftest import admin_session
from tests.factories import AccountFactory, AdminUserFactory
from tests.webhooks.verifying import service_verifier, standard_verifier, start

pytestmark = pytest.mark.django_db

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
MIGRATION = ("webhooks", "0010_encrypted_signing_secrets")
VERIFIER = {"service": service_verifier, "standard": standard_verifier}


@pytest.fixture
def verifying_receiver():
    server = start(lambda headers, body: False)
    yield server
    server.stop()


def stored_row(endpoint: WebhookEndpoint) -> str:
    """Every column of the endpoint's row as the database holds it (what a dump would carry)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM webhooks_webhookendpoint WHERE id = %s", [endpoint.pk])
        return " ".join(str(value) for value in cursor.fetchone())


@pytest.mark.parametrize("signature_format", ["service", "standard"])
def test_the_database_holds_no_clear_secret_and_deliveries_still_verify_with_the_secret_shown(
    account, verifying_receiver, private_targets, emit, signature_format
):
    endpoint = endpoint_save(account=account, url=verifying_receiver.url, signature_format=signature_format)
    first = endpoint.secret
    second = endpoint_rotate_secret(endpoint=endpoint)
    endpoint.refresh_from_db()

    row = stored_row(endpoint)
    assert first not in row and second not in row
    assert first.removeprefix("whsec_") not in row and second.removeprefix("whsec_") not in row
    assert crypto.decrypt(endpoint.secret_encrypted) == second == endpoint.secret
    assert crypto.decrypt(endpoint.previous_secret_encrypted) == first == endpoint.previous_secret
    page = admin_session(AdminUserFactory(account=account)).get(
        f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/"
    )
    assert second in page.content.decode() and endpoint.secret_encrypted not in page.content.decode()

    verifying_receiver.verify = VERIFIER[signature_format](second)
    attempt = delivery_attempt(delivery_id=str(emit().deliveries.get().pk))
    assert attempt.succeeded and verifying_receiver.verdicts[0] is True


def test_rotate_credentials_moves_the_signing_secrets_to_the_newest_key(settings, private_targets):
    settings.FERNET_KEYS = [OLD]
    endpoint = endpoint_save(account=AccountFactory(), url="http://127.0.0.1:9/hook")
    first = endpoint.secret
    second = endpoint_rotate_secret(endpoint=endpoint)
    settings.FERNET_KEYS = [NEW, OLD]

    out = StringIO()
    call_command("rotate_credentials", "--json", stdout=out)

    report = json.loads(out.getvalue())
    assert report["reencrypted"]["webhooks.WebhookEndpoint.secret_encrypted"] == 1
    assert report["reencrypted"]["webhooks.WebhookEndpoint.previous_secret_encrypted"] == 1
    # The old key can go: both secrets open with the new one alone, and are what they were.
    settings.FERNET_KEYS = [NEW]
    endpoint = WebhookEndpoint.objects.get(pk=endpoint.pk)
    assert (endpoint.secret, endpoint.previous_secret) == (second, first)


def test_a_secret_no_key_opens_is_said_on_the_endpoint_page_and_rotating_replaces_it(
    settings, account, private_targets
):
    settings.FERNET_KEYS = [OLD]
    endpoint = endpoint_save(account=account, url="http://127.0.0.1:9/hook")
    settings.FERNET_KEYS = [NEW]  # the old key dropped before rotate_credentials ran
    client = admin_session(AdminUserFactory(account=account))

    page = client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/")
    assert page.status_code == 200
    assert "cannot be read with the configured Fernet keys" in page.content.decode()

    new = endpoint_rotate_secret(endpoint=endpoint)
    endpoint.refresh_from_db()
    # Nothing can sign with the unreadable secret, so no overlap is offered for it.
    assert endpoint.secret == new and endpoint.previous_secret == "" and endpoint.previous_secret_expires_at is None


@pytest.mark.django_db(transaction=True)
def test_the_migration_encrypts_the_clear_secrets_of_existing_endpoints_and_gives_them_back_on_the_way_down():
    executor = MigrationExecutor(connection)
    before = list(executor.loader.graph.node_map[MIGRATION].parents)
    before = [parent.key for parent in before if parent.key[0] == "webhooks"]
    executor.migrate(before)
    Endpoint = executor.loader.project_state(before).apps.get_model("webhooks", "WebhookEndpoint")
    account = AccountFactory()
    rotated = Endpoint.objects.create(
        account_id=account.pk, url="https://a.example/hook", secret="whsec_current", previous_secret="whsec_before"
    )
    plain = Endpoint.objects.create(account_id=account.pk, url="https://b.example/hook", secret="whsec_plain")

    executor = MigrationExecutor(connection)
    executor.migrate([MIGRATION])

    rotated, plain = WebhookEndpoint.objects.get(pk=rotated.pk), WebhookEndpoint.objects.get(pk=plain.pk)
    assert "whsec_" not in stored_row(rotated) and "whsec_" not in stored_row(plain)
    assert (rotated.secret, rotated.previous_secret) == ("whsec_current", "whsec_before")
    assert (plain.secret, plain.previous_secret, plain.previous_secret_encrypted) == ("whsec_plain", "", "")

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    Endpoint = executor.loader.project_state(before).apps.get_model("webhooks", "WebhookEndpoint")
    back = {e.pk: (e.secret, e.previous_secret) for e in Endpoint.objects.all()}
    assert back == {rotated.pk: ("whsec_current", "whsec_before"), plain.pk: ("whsec_plain", "")}

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_a_delivery_whose_secret_no_key_opens_fails_its_attempt_without_a_request_and_it_counts(
    settings, account, verifying_receiver, private_targets, emit
):
    settings.FERNET_KEYS = [OLD]
    endpoint_save(account=account, url=verifying_receiver.url)
    settings.FERNET_KEYS = [NEW]
    delivery = emit().deliveries.get()

    attempt = delivery_attempt(delivery_id=str(delivery.pk))

    delivery.refresh_from_db()
    assert not attempt.succeeded and "signing secret cannot be read" in attempt.error
    assert attempt.counted and delivery.attempts == 1 and delivery.locked_until is None
    assert verifying_receiver.verdicts == []
