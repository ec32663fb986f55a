import pytest

from apps.core.errors import InvalidInput
from apps.webhooks import transport
from apps.webhooks.services import delivery_attempt, endpoint_save
from tests.factories import WebhookEndpointFactory

pytestmark = pytest.mark.django_db

PRIVATE_URLS = [
    "http://127.0.0.1:8000/hook",
    "http://localhost/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.10/hook",
    "http://172.16.5.4/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0/hook",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_saving_a_private_target_is_refused(account, url):
    with pytest.raises(InvalidInput, match="private, loopback, link-local or reserved"):
        endpoint_save(account=account, url=url)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "javascript:alert(1)", "/relative", "http://"])
def test_saving_a_non_http_url_is_refused(account, url):
    with pytest.raises(InvalidInput, match="http"):
        endpoint_save(account=account, url=url)


def test_a_public_address_is_accepted(account, monkeypatch):
    monkeypatch.setattr(transport, "resolve", lambda host, port: ["93.184.215.14"])
    endpoint = endpoint_save(account=account, url="https://hooks.example.com/x", events=["post.published"])
    assert endpoint.pk and endpoint.events == ["post.published"]


def test_a_host_that_does_not_resolve_is_refused(account, monkeypatch):
    def fail(host, port):
        raise OSError("no such host")

    monkeypatch.setattr(transport, "resolve", fail)
    with pytest.raises(InvalidInput, match="does not resolve"):
        endpoint_save(account=account, url="https://nowhere.invalid/x")


def test_unknown_event_names_are_refused(account, monkeypatch):
    monkeypatch.setattr(transport, "resolve", lambda host, port: ["93.184.215.14"])
    with pytest.raises(InvalidInput, match=r"Unknown events: post\.deleted"):
        endpoint_save(account=account, url="https://hooks.example.com/x", events=["post.deleted"])


def test_private_targets_are_allowed_when_configured(account, private_targets):
    assert endpoint_save(account=account, url="http://127.0.0.1:9/hook").pk


def test_connection_to_a_private_address_is_refused_at_send_time(account, emit, receiver, settings):
    # Saved while allowed (or while DNS pointed elsewhere); each attempt checks the address it reaches.
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    WebhookEndpointFactory(account=account, url=receiver.url)
    delivery = emit().deliveries.get()
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    attempt = delivery_attempt(delivery_id=str(delivery.id))
    assert attempt.response_status is None
    assert "non-public address 127.0.0.1" in attempt.error
    assert receiver.requests == []


@pytest.mark.parametrize(
    ("address", "public"),
    [("8.8.8.8", True), ("2606:4700:4700::1111", True), ("10.0.0.1", False), ("fe80::1", False), ("::1", False)],
)
def test_address_classification(address, public):
    assert transport.is_public_address(address) is public
