import pytest
from django.db import transaction

from apps.webhooks.services import event_emit
from tests.factories import AccountFactory, WebhookEndpointFactory


@pytest.fixture
def account(db):
    return AccountFactory(name="Hooked Inc")


@pytest.fixture
def endpoint(account, receiver, private_targets):
    return WebhookEndpointFactory(account=account, url=receiver.url)


@pytest.fixture
def emit(account):
    """Emit one event in its own transaction; the on-commit hand-over to the broker is captured
    (tests here drive delivery attempts themselves)."""

    def do(kind="post.published", data=None, **extra):
        with transaction.atomic():
            return event_emit(account=account, kind=kind, data=data or {"post": {"id": 7}}, **extra)

    return do
