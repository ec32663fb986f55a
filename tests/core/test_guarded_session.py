"""A requests session for an address a user gave (a social network's server) dials only public
addresses, as the webhooks do; a destination's setting for local fakes lets it dial this machine."""

import pytest
import requests

from apps.core.addresses import BlockedRequest, guard
from tests.fake_api import FakeApi, json_answer


class Hello(FakeApi):
    def _route(self, request):
        return json_answer(200, {"hello": "world"})


@pytest.fixture
def server():
    with Hello() as fake:
        yield fake


def test_a_guarded_session_refuses_this_machine_before_dialling_it(settings, server):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(BlockedRequest, match="not allowed") as refused:
        guard(requests.Session()).get(server.url, timeout=5)
    assert isinstance(refused.value, requests.ConnectionError)
    assert server.requests == []


def test_the_destinations_own_setting_lets_it_reach_a_local_fake(settings, server):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    assert guard(requests.Session(), allow_private=True).get(server.url, timeout=5).json() == {"hello": "world"}


def test_proxies_from_the_environment_are_not_used(monkeypatch, settings, server):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    monkeypatch.setenv("HTTP_PROXY", server.url)
    session = guard(requests.Session())
    assert session.trust_env is False
    with pytest.raises(BlockedRequest):
        session.get("http://127.0.0.2:9/", timeout=5)
    assert server.requests == []
