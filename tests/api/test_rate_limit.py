import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from apps.api import ratelimit
from tests.api.v1_routes import request, v1_routes
from tests.factories import AccountFactory, ApiKeyFactory, UserFactory

pytestmark = pytest.mark.django_db

HOUR_START = 1_767_225_600  # 2026-01-01T00:00:00Z, the start of a clock hour


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(HOUR_START + 1000.25)
    monkeypatch.setattr(ratelimit, "clock", lambda: clock.now)
    return clock


def key_on_plan(plan: str):
    return ApiKeyFactory(user=UserFactory(account=AccountFactory(plan=plan)))


def remaining(response) -> int:
    return int(response.headers["X-RateLimit-Remaining"])


def from_address(address: str, raw_key: str | None = None) -> APIClient:
    client = APIClient(REMOTE_ADDR=address)
    if raw_key:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


# --- The headers ---


def test_every_v1_endpoint_reports_the_budget_it_was_charged_to(client_for, api_key, clock):
    """Whatever the endpoint answers (200, 404, 405...), a request with a key is charged to the
    account; the schema and docs take no key and report the address's budget instead."""
    client = client_for(api_key)
    expected_remaining = 1000
    for route in v1_routes():
        response = request(client, route)
        assert response.status_code < 500, (route, response.status_code)
        assert response["X-RateLimit-Reset"] == str(HOUR_START + 3600), route
        if route.checks_the_key:
            expected_remaining -= 1
            assert response["X-RateLimit-Limit"] == "1000", route
            assert remaining(response) == expected_remaining, route
        else:
            assert response["X-RateLimit-Limit"] == "100", route
            assert remaining(response) == 100, route
    assert expected_remaining < 1000


def test_every_v1_endpoint_without_a_key_reports_the_address_budget(api_client, clock):
    failures = 0
    for route in v1_routes():
        response = request(api_client, route)
        assert response["X-RateLimit-Limit"] == "100", route
        failures += response.status_code == 401
        assert remaining(response) == 100 - failures, route
        assert response["X-RateLimit-Reset"] == str(HOUR_START + 3600), route
    assert failures > 0


def test_remaining_falls_by_one_per_request(client_for, api_key, clock):
    client = client_for(api_key)
    assert [remaining(client.get("/v1/me")) for _ in range(3)] == [999, 998, 997]


def test_errors_of_an_authenticated_request_are_counted_and_carry_the_headers(client_for, api_key, clock):
    client = client_for(api_key)
    assert remaining(client.get("/v1/me")) == 999
    not_found = client.get("/v1/no-such-thing")
    assert not_found.status_code == 404
    assert remaining(not_found) == 998
    wrong_method = client.delete("/v1/me")
    assert wrong_method.status_code == 405
    assert remaining(wrong_method) == 997


@pytest.mark.urls("tests.api.urls")
def test_a_403_for_a_missing_scope_is_counted_too(client_for, clock):
    key = ApiKeyFactory(scopes=[])
    response = client_for(key).get("/v1/_test/scoped")
    assert response.status_code == 403
    assert remaining(response) == 999


@pytest.mark.parametrize(("plan", "limit"), [("free", 1000), ("starter", 10000), ("professional", 50000)])
def test_the_limit_follows_the_plan(client_for, clock, plan, limit):
    response = client_for(key_on_plan(plan)).get("/v1/me")
    assert response["X-RateLimit-Limit"] == str(limit)
    assert remaining(response) == limit - 1


def test_enterprise_is_unlimited_and_says_so(client_for, clock):
    key = key_on_plan("enterprise")
    response = client_for(key).get("/v1/me")
    assert response.status_code == 200
    assert response["X-RateLimit-Limit"] == "unlimited"
    assert "X-RateLimit-Remaining" not in response
    assert "X-RateLimit-Reset" not in response
    assert ratelimit.store.peek(f"account:{key.account_id}", HOUR_START + 3600, clock.now) == 0


def test_plan_limits_come_from_settings(client_for, settings, clock):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "enterprise": 5, "free": None}
    assert client_for(key_on_plan("enterprise")).get("/v1/me")["X-RateLimit-Limit"] == "5"
    assert client_for(key_on_plan("free")).get("/v1/me")["X-RateLimit-Limit"] == "unlimited"


def test_every_plan_has_a_limit_setting():
    from apps.accounts.models import Plan

    assert set(django_settings.RATE_LIMITS) == {plan.value for plan in Plan}


# --- Going over the limit, and the window ---


@pytest.fixture
def limit_of_3(settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "free": 3}


def test_the_request_over_the_limit_gets_429_with_retry_after(client_for, api_key, clock, limit_of_3):
    client = client_for(api_key)
    assert [client.get("/v1/me").status_code for _ in range(3)] == [200, 200, 200]
    response = client.get("/v1/me")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert "3 requests per hour" in response.json()["error"]["message"]
    # The window ends at HOUR_START + 3600; the clock stands 2599.75 s before it.
    assert response["Retry-After"] == "2600"
    assert response["X-RateLimit-Limit"] == "3"
    assert response["X-RateLimit-Remaining"] == "0"
    assert response["X-RateLimit-Reset"] == str(HOUR_START + 3600)


def test_retry_after_counts_down_with_the_clock(client_for, api_key, clock, limit_of_3):
    client = client_for(api_key)
    for _ in range(3):
        client.get("/v1/me")
    clock.advance(2000)
    assert client.get("/v1/me")["Retry-After"] == "600"


@pytest.mark.urls("tests.api.urls")
def test_a_key_over_the_limit_is_refused_before_the_view_runs(client_for, clock, limit_of_3):
    key = ApiKeyFactory(scopes=[])
    client = client_for(key)
    for _ in range(3):
        client.get("/v1/me")
    assert client.get("/v1/_test/scoped").status_code == 429
    assert client.post("/v1/_test/echo", {}, format="json").status_code == 429


def test_the_budget_is_full_again_when_the_hour_ends(client_for, api_key, clock, limit_of_3):
    client = client_for(api_key)
    for _ in range(4):
        client.get("/v1/me")
    clock.advance(2599.74)
    assert client.get("/v1/me").status_code == 429
    clock.advance(0.01)  # now exactly HOUR_START + 3600
    response = client.get("/v1/me")
    assert response.status_code == 200
    assert remaining(response) == 2
    assert response["X-RateLimit-Reset"] == str(HOUR_START + 7200)


def test_keys_of_one_account_share_its_budget_and_accounts_do_not(client_for, api_key, clock, limit_of_3):
    sibling = ApiKeyFactory(user=UserFactory(account=api_key.account))
    stranger = ApiKeyFactory()
    assert remaining(client_for(api_key).get("/v1/me")) == 2
    assert remaining(client_for(sibling).get("/v1/me")) == 1
    assert remaining(client_for(stranger).get("/v1/me")) == 2


# --- Counting under concurrency ---


def test_fifty_concurrent_hits_are_counted_exactly():
    """On Redis when REDIS_URL is set (shared by every process), else in the local-memory cache."""
    reset = ratelimit.window_end(time.time())
    barrier = threading.Barrier(10)

    def hit_five_times(_):
        barrier.wait()
        return [ratelimit.store.hit("concurrency", reset, time.time()) for _ in range(5)]

    with ThreadPoolExecutor(max_workers=10) as pool:
        counts = [count for batch in pool.map(hit_five_times, range(10)) for count in batch]
    # Every hit saw a different count: none was lost or counted twice.
    assert sorted(counts) == list(range(1, 51))
    assert ratelimit.store.peek("concurrency", reset, time.time()) == 50


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_requests_to_a_live_server_are_counted_exactly(live_server):
    key = ApiKeyFactory()
    headers = {"Authorization": f"Bearer {key.raw}"}
    url = f"{live_server.url}/v1/me"
    assert remaining(requests.get(url, headers=headers, timeout=10)) == 999  # also records the key's last use
    barrier = threading.Barrier(10)

    def five_requests(_):
        with requests.Session() as session:
            barrier.wait()
            return [session.get(url, headers=headers, timeout=10) for _ in range(5)]

    with ThreadPoolExecutor(max_workers=10) as pool:
        responses = [r for batch in pool.map(five_requests, range(10)) for r in batch]
    assert {r.status_code for r in responses} == {200}
    assert sorted(remaining(r) for r in responses) == list(range(949, 999))
    assert remaining(requests.get(url, headers=headers, timeout=10)) == 948


# --- The store unreachable: fail open ---


@pytest.fixture
def private_cache(settings, private_redis):
    settings.CACHES = {
        "default": {
            **django_settings.CACHES["default"],
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    return private_redis


@pytest.mark.reliability
def test_requests_are_served_unlimited_while_redis_is_stopped(client_for, api_key, clock, private_cache, caplog):
    client = client_for(api_key)
    assert remaining(client.get("/v1/me")) == 999
    private_cache.stop()
    with caplog.at_level(logging.WARNING, logger="apps.api.ratelimit"):
        started = time.monotonic()
        responses = [client.get("/v1/me") for _ in range(3)]
        elapsed = time.monotonic() - started
    assert [r.status_code for r in responses] == [200, 200, 200]
    for response in responses:
        assert response["X-RateLimit-Limit"] == "1000"
        assert "X-RateLimit-Remaining" not in response
    assert elapsed < 2
    # Logged once, not once per request: the store is left alone for a while after a failure.
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1

    private_cache.start()
    clock.advance(ratelimit.STORE_RETRY_AFTER)
    # The restarted Redis kept nothing, so counting starts again.
    assert remaining(client.get("/v1/me")) == 999


@pytest.mark.reliability
def test_a_hung_redis_costs_one_timeout_then_is_skipped(client_for, api_key, clock, private_cache):
    client = client_for(api_key)
    assert remaining(client.get("/v1/me")) == 999
    os.kill(private_cache.process.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        first = client.get("/v1/me")
        first_took = time.monotonic() - started
        started = time.monotonic()
        second = client.get("/v1/me")
        second_took = time.monotonic() - started
    finally:
        os.kill(private_cache.process.pid, signal.SIGCONT)
    assert (first.status_code, second.status_code) == (200, 200)
    assert "X-RateLimit-Remaining" not in first
    assert first_took < 3  # one socket timeout (1 s) per cache call, no retry loop
    assert second_took < 0.5


# --- 401s per client address ---


@pytest.fixture
def three_failures(settings):
    settings.RATE_LIMIT_AUTH_FAILURES = 3


def test_401s_are_counted_per_address_and_then_the_address_gets_429(api_key, clock, three_failures):
    guesser = from_address("203.0.113.7", "cps_12345678_guess")
    assert [remaining(guesser.get("/v1/me")) for _ in range(3)] == [2, 1, 0]
    response = guesser.get("/v1/me")
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    assert response["Retry-After"] == "2600"
    assert response["X-RateLimit-Limit"] == "3"
    assert response["X-RateLimit-Remaining"] == "0"
    # Only what would fail authentication is refused: a valid key from the same address is served.
    assert from_address("203.0.113.7", api_key.raw).get("/v1/me").status_code == 200
    assert from_address("203.0.113.7").get("/v1/me").status_code == 429
    assert from_address("203.0.113.7").get("/v1/nothing").status_code == 404
    # Other addresses are not affected.
    assert from_address("198.51.100.1", api_key.raw).get("/v1/me").status_code == 200
    assert from_address("198.51.100.1").get("/v1/me").status_code == 401


def test_a_flood_of_bad_keys_never_locks_out_a_good_key_from_the_same_address(admin_key, clock, settings):
    assert settings.RATE_LIMIT_AUTH_FAILURES == 100
    guesser = from_address("127.0.0.1", "cps_12345678_stale")
    answers = [guesser.get("/v1/channels").status_code for _ in range(101)]
    assert answers == [401] * 100 + [429]

    good = from_address("127.0.0.1", admin_key.raw)
    for path in ("/v1/me", "/v1/channels", "/v1/users"):
        response = good.get(path)
        assert response.status_code == 200, path
        # Charged to its account, as any request with a valid key.
        assert response["X-RateLimit-Limit"] == str(settings.RATE_LIMITS[admin_key.account.plan])
    assert good.post("/v1/users", {"email": "new@example.com", "name": "New"}, format="json").status_code != 429

    for client in (guesser, from_address("127.0.0.1"), from_address("127.0.0.1", "Basic abc")):
        response = client.get("/v1/me")
        assert response.status_code == 429
        assert response.json()["error"]["code"] == "rate_limit_exceeded"
        assert response["X-RateLimit-Remaining"] == "0"


def test_an_address_block_ends_with_the_hour(clock, three_failures):
    guesser = from_address("203.0.113.7")
    for _ in range(4):
        guesser.get("/v1/me")
    clock.advance(2599.75)
    response = guesser.get("/v1/me")
    assert response.status_code == 401
    assert remaining(response) == 2


def test_requests_with_a_valid_key_do_not_use_the_address_budget(api_key, clock, three_failures):
    client = from_address("203.0.113.7", api_key.raw)
    for _ in range(5):
        assert client.get("/v1/me").status_code == 200
    assert remaining(from_address("203.0.113.7").get("/v1/me")) == 2


def test_forwarded_for_is_ignored_unless_a_proxy_is_configured(settings, clock, three_failures):
    def failures_left(forwarded_for: str) -> int:
        return remaining(APIClient(REMOTE_ADDR="10.0.0.1").get("/v1/me", HTTP_X_FORWARDED_FOR=forwarded_for))

    # Without a trusted proxy a client could dodge the limit by forging the header.
    assert [failures_left("1.1.1.1"), failures_left("2.2.2.2")] == [2, 1]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert [failures_left("9.9.9.9, 3.3.3.3"), failures_left("9.9.9.9, 4.4.4.4")] == [2, 2]


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/admin/login/"])
def test_paths_outside_v1_are_never_limited(clock, three_failures, path):
    blocked = from_address("203.0.113.7")
    for _ in range(4):
        blocked.get("/v1/me")
    assert blocked.get("/v1/me").status_code == 429
    response = blocked.get(path)
    assert response.status_code != 429
    assert "X-RateLimit-Limit" not in response
