import pytest

from apps.core import addresses
from apps.core.errors import InvalidInput
from apps.webhooks.services import delivery_attempt, endpoint_save
from tests.factories import WebhookEndpointFactory

pytestmark = pytest.mark.django_db

# A Teredo address (2001::/32) with a public server (65.54.227.120) and, obfuscated, the client 10.0.0.1.
TEREDO_PRIVATE_CLIENT = "2001:0:4136:e378:8000:63bf:f5ff:fffe"

# IP literals (and localhost), so no DNS is needed: every range the guard refuses.
PRIVATE_URLS = [
    "http://localhost/hook",
    "http://127.0.0.1:8000/hook",
    "http://10.1.2.3/hook",
    "http://172.16.5.4/hook",
    "http://192.168.0.10/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://0.0.0.0/hook",
    "http://0.1.2.3/hook",
    "http://100.64.0.1/hook",
    "http://100.127.255.254/hook",
    "http://192.0.0.1/hook",
    "http://192.0.0.8/hook",
    "http://192.0.0.100/hook",
    "http://192.0.2.10/hook",
    "http://198.18.0.1/hook",
    "http://198.19.255.254/hook",
    "http://198.51.100.10/hook",
    "http://203.0.113.10/hook",
    "http://224.0.0.1/hook",
    "http://239.255.255.250/hook",
    "http://240.0.0.1/hook",
    "http://255.255.255.255/hook",
    "http://[::]/hook",
    "http://[::1]/hook",
    "http://[::7f00:1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:10.0.0.1]/hook",
    "http://[100::1]/hook",
    "http://[2001:db8::1]/hook",
    "http://[2001:2::1]/hook",
    "http://[2002:7f00:1::]/hook",
    "http://[2002:a00:1::1]/hook",
    f"http://[{TEREDO_PRIVATE_CLIENT}]/hook",
    "http://[64:ff9b::7f00:1]/hook",
    "http://[64:ff9b::a9fe:a9fe]/hook",
    "http://[64:ff9b:1::a00:1]/hook",
    "http://[3fff::1]/hook",
    "http://[fc00::1]/hook",
    "http://[fd12:3456::1]/hook",
    "http://[fe80::1]/hook",
    "http://[fec0::1]/hook",
    "http://[ff02::1]/hook",
    "http://[ff0e::1]/hook",
    "https://[2002:7f00:1::]:8443/hook",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_saving_a_private_target_is_refused(account, url):
    with pytest.raises(InvalidInput, match="The host resolves to an address that is not publicly routable"):
        endpoint_save(account=account, url=url)
    assert not account.webhook_endpoints.exists()


@pytest.mark.parametrize("url", ["ftp://example.com/x", "javascript:alert(1)", "/relative", "http://"])
def test_saving_a_non_http_url_is_refused(account, url):
    with pytest.raises(InvalidInput, match="http"):
        endpoint_save(account=account, url=url)


def test_a_public_address_is_accepted(account, monkeypatch):
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.215.14"])
    endpoint = endpoint_save(account=account, url="https://hooks.example.com/x", events=["post.published"])
    assert endpoint.pk and endpoint.events == ["post.published"]


def test_a_host_that_does_not_resolve_is_refused(account, monkeypatch):
    def fail(host, port):
        raise OSError("no such host")

    monkeypatch.setattr(addresses, "resolve", fail)
    with pytest.raises(InvalidInput, match="does not resolve"):
        endpoint_save(account=account, url="https://nowhere.invalid/x")


def test_unknown_event_names_are_refused(account, monkeypatch):
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.215.14"])
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
    assert attempt.error == "address 127.0.0.1 is not allowed (not a public address)"
    assert receiver.requests == []


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("93.184.215.14", True),
        ("2606:4700:4700::1111", True),
        ("2a00:1450:4001:80b::200e", True),
        ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
        ("::ffff:8.8.8.8", True),
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
        ("2001:0:4136:e378:8000:63bf:f7f7:fbfb", True),  # Teredo: server 65.54.227.120, client 8.8.4.4
        ("10.0.0.1", False),
        ("127.0.0.1", False),
        ("100.64.0.1", False),
        ("192.0.0.9", False),
        ("198.18.0.1", False),
        ("224.0.0.251", False),
        ("fe80::1", False),
        ("fe80::1%1", False),
        ("::1", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:100.64.0.1", False),
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b:1::a00:1", False),  # local-use NAT64 of 10.0.0.1
        (TEREDO_PRIVATE_CLIENT, False),
        ("2001:0:a00:1:8000:63bf:f7f7:fbfb", False),  # Teredo: server 10.0.0.1, client 8.8.4.4
        ("4000::1", False),
        ("ff0e::1", False),
    ],
)
def test_address_classification(address, public):
    assert addresses.is_public_address(address) is public
