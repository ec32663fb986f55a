"""API keys, SSO tokens, webhook signing secrets and calendar feeds' addresses never reach a log line,
and no response shows them after the one that created them.

All logging is captured (every logger, every level) while requests create and use each secret, including
the failures around them, and every record is written out with each of the service's formatters (plain
and JSON, whose extra fields carry more than the message does).
"""

import logging
import re

import pytest
from django.conf import settings
from django.test import Client
from pythonjsonlogger.json import JsonFormatter

from apps.stories.models import CalendarFeed
from apps.users.models import ApiKey, SsoToken
from apps.webhooks.models import Delivery, WebhookEndpoint
from apps.webhooks.services import delivery_attempt
from tests.conftest import admin_session, free_port
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    ApiPublicationFactory,
    ChannelFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


class CaptureEverything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logs():
    """Every record of every logger while the test runs, as the service's formatters would write it."""
    handler = CaptureEverything()
    # The service's own handler filters, so the records are seen as its console handler sees them.
    for name in settings.LOGGING["handlers"]["console"].get("filters", []):
        spec = dict(settings.LOGGING["filters"][name])
        factory = spec.pop("()")
        module, _, attribute = factory.rpartition(".")
        handler.addFilter(getattr(__import__(module, fromlist=[attribute]), attribute)(**spec))
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    saved = [(logger, logger.level, logger.disabled) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.disabled = False
        if not logger.propagate or logger is loggers[0]:
            logger.addHandler(handler)
    formats = settings.LOGGING["formatters"]
    formatters = [
        logging.Formatter(formats["plain"]["format"]),
        JsonFormatter(fmt=formats["json"]["fmt"], rename_fields=formats["json"]["rename_fields"]),
    ]

    def written() -> str:
        return "\n".join(formatter.format(record) for record in handler.records for formatter in formatters)

    yield written
    for logger, level, disabled in saved:
        logger.setLevel(level)
        logger.disabled = disabled
        logger.removeHandler(handler)


def secret_forms(raw: str) -> list[str]:
    """The secret, and its part after the public prefix (`cps_<prefix>_<secret>`, `sso_<secret>`,
    `whsec_<secret>`). The secret part itself may contain `_`, so split at the known prefix only."""
    parts = 3 if raw.startswith("cps_") else 2
    return [raw, raw.split("_", parts - 1)[-1]]


def assert_nowhere(secrets: list[str], text: str, where: str) -> None:
    for secret in secrets:
        assert secret not in text, f"a secret appears in {where}"


def every_get(client: Client, ids: dict) -> list:
    """A GET of every readable /v1 resource, in the key's account."""
    paths = [
        "/v1/me",
        "/v1/channels",
        f"/v1/channels/{ids['channel']}",
        f"/v1/channels/{ids['channel']}/posts",
        f"/v1/channels/{ids['channel']}/posts/{ids['post']}",
        f"/v1/posts/{ids['post']}",
        "/v1/users",
        "/v1/users/profile",
        f"/v1/users/{ids['user']}",
    ]
    responses = [client.get(path) for path in paths]
    assert {response.status_code for response in responses} == {200}
    return responses


def as_text(response) -> str:
    headers = "\n".join(f"{name}: {value}" for name, value in response.items())
    cookies = "\n".join(morsel.OutputString() for morsel in response.cookies.values())
    return f"{headers}\n{cookies}\n{response.content.decode(errors='replace')}"


@pytest.fixture
def world(admin_client):
    account = AccountFactory()
    admin = AdminUserFactory(account=account)
    channel = ChannelFactory(account=account, platform="api")
    post = ApiPublicationFactory(post__channel=channel).post
    return {"account": account, "admin": admin, "ids": {"channel": channel.id, "post": post.id, "user": admin.id}}


def create_api_key_in_the_admin(admin_client, account, user) -> str:
    response = admin_client.post(
        "/admin/accounts/apikey/add/",
        {
            "account": account.id,
            "user": user.id,
            "name": "integration",
            "scopes": ["read:channels", "read:posts", "write:posts", "write:sso", "read:users"],
        },
    )
    # Shown on the answer to the POST that created it, never in a message or cookie.
    assert response.status_code == 200
    return re.search(r'id="api-key"[^>]* value="(cps_\w{8}_[\w-]+)"', response.content.decode()).group(1)


def test_api_keys_never_appear_in_logs_or_later_responses(logs, world, admin_client):
    raw = create_api_key_in_the_admin(admin_client, world["account"], world["admin"])
    key = ApiKey.objects.get(prefix=raw.split("_")[1])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")

    later = every_get(client, world["ids"])
    later.append(client.patch(f"/v1/channels/{world['ids']['channel']}/posts/{world['ids']['post']}/unpublish"))
    later.append(client.get("/v1/channels/424242"))  # 404
    # Near misses of the key: its prefix with another secret, a typo, an extra character.
    for forged in (f"cps_{key.prefix}_{'x' * 43}", raw[:-1], raw + "x", raw.replace("cps_", "csp_")):
        later.append(Client(HTTP_AUTHORIZATION=f"Bearer {forged}").get("/v1/me"))
    later.append(admin_client.get("/admin/accounts/apikey/"))
    later.append(admin_client.get(f"/admin/accounts/apikey/{key.pk}/change/"))
    # Revoked, then used once more.
    admin_client.post("/admin/accounts/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]})
    later.append(client.get("/v1/me"))
    assert later[-1].status_code == 401

    secrets = [*secret_forms(raw), key.key_hash]
    assert_nowhere(secrets, logs(), "the logs")
    for response in later:
        assert_nowhere(secrets, as_text(response), f"a response ({response.status_code})")


def test_sso_tokens_never_appear_in_logs_or_later_responses(logs, world, admin_client, client_for):
    api = client_for(ApiKeyFactory(user=world["admin"]))
    member = UserFactory(account=world["account"])
    created = api.post("/v1/sso_tokens", {"user_id": str(member.pk), "redirect_to": "/account/"}, format="json")
    assert created.status_code == 201
    raw = created.json()["data"]["token"]
    token = SsoToken.objects.get(user=member)

    browser = Client()
    later = [browser.get(f"/sso/login?token={raw}")]
    assert later[0].status_code == 302
    later += [browser.get("/account/"), Client().get(f"/sso/login?token={raw}")]  # used: 410
    assert later[-1].status_code == 410
    later.append(Client().get(f"/sso/login?token={raw[:-2]}"))  # unknown: 404
    later += every_get(api, world["ids"])
    later.append(admin_client.get("/admin/accounts/ssotoken/"))
    later.append(admin_client.get(f"/admin/accounts/ssotoken/{token.pk}/change/"))

    secrets = [*secret_forms(raw), token.token_hash]
    assert_nowhere(secrets, logs(), "the logs")
    for response in later:
        assert_nowhere(secrets, as_text(response), f"a response ({response.status_code})")


def test_calendar_feed_addresses_never_appear_in_logs_or_later_responses(logs, world):
    session = admin_session(world["admin"])
    feed_address = re.compile(r'/calendar/([\w-]+)\.ics"')
    raw = feed_address.search(session.post("/admin/calendar-feed/", {"action": "create"}).content.decode()).group(1)
    feed = CalendarFeed.objects.get(user=world["admin"])

    later = [Client().get(f"/calendar/{raw}.ics")]
    assert later[0].status_code == 200
    later.append(Client().get(f"/calendar/{raw[:-1]}.ics"))  # unknown: 404
    later.append(session.get("/admin/calendar-feed/"))
    replaced = session.post("/admin/calendar-feed/", {"action": "replace"})
    assert feed_address.search(replaced.content.decode()).group(1) != raw
    later.append(Client().get(f"/calendar/{raw}.ics"))  # replaced: 404
    assert later[-1].status_code == 404

    secrets = [raw, feed.token_hash]
    assert_nowhere(secrets, logs(), "the logs")
    for response in later:
        assert_nowhere(secrets, as_text(response), f"a response ({response.status_code})")


def test_webhook_secrets_never_appear_in_logs_or_api_responses(
    logs, world, admin_client, client_for, receiver, settings
):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    account = world["account"]
    admin_client.post(
        "/admin/webhooks/webhookendpoint/add/",
        {"account": account.id, "url": receiver.url, "enabled": "on", "description": "partner"},
    )
    endpoint = WebhookEndpoint.objects.get(account=account)
    first_secret = endpoint.secret
    admin_client.post(
        "/admin/webhooks/webhookendpoint/", {"action": "rotate_secret", "_selected_action": [endpoint.pk]}
    )
    endpoint.refresh_from_db()
    assert endpoint.secret != first_secret

    api = client_for(ApiKeyFactory(user=world["admin"]))
    ids = world["ids"]
    responses = [api.patch(f"/v1/channels/{ids['channel']}/posts/{ids['post']}/publish")]
    assert responses[0].status_code == 200
    # Signed deliveries: answered, refused with a 500, and to a receiver that is gone.
    receiver.script = [(200, 0), (500, 0)]
    delivery = Delivery.objects.get(endpoint=endpoint)
    for _ in range(2):
        delivery_attempt(delivery_id=str(delivery.id), manual=True)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(url=f"http://127.0.0.1:{free_port()}/gone")
    delivery_attempt(delivery_id=str(delivery.id), manual=True)
    # (The refused attempt went again signed with the previous secret, still valid for the overlap.)
    assert [r.headers["X-Service-Delivery"] for r in receiver.requests] == [str(delivery.id)] * 3
    responses += every_get(api, ids)
    responses.append(api.patch(f"/v1/channels/{ids['channel']}/posts/{ids['post']}/unpublish"))
    responses.append(admin_client.get(f"/admin/webhooks/delivery/{delivery.pk}/change/"))

    secrets = [first_secret, endpoint.secret]
    assert_nowhere(secrets, logs(), "the logs")
    for response in responses:
        assert_nowhere(secrets, as_text(response), f"a response ({response.status_code})")


def test_the_web_servers_access_log_writes_neither_query_strings_nor_authorization(caplog):
    from granian.log import log_request_builder

    from config.server.process import server_options

    log_request = log_request_builder(server_options(settings)["log_access_format"])
    request = {
        "addr_remote": "127.0.0.1",
        "path": "/sso/login",
        "qs": "token=sso_secret",
        "method": "GET",
        "scheme": "http",
        "protocol": "HTTP/1.1",
        "headers": {"authorization": "Bearer cps_abcdef12_secret"}.get,
    }
    with caplog.at_level(logging.INFO, logger="granian.access"):
        log_request(0.0, 0.0, request, 302)

    [line] = [record.getMessage() for record in caplog.records if record.name == "granian.access"]
    assert "/sso/login" in line
    assert_nowhere(["sso_secret", "cps_abcdef12_secret"], line, "the access log")
