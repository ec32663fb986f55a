import pytest

pytestmark = pytest.mark.django_db


def test_healthz_answers_without_a_key(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_checks_database_and_broker(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}


def test_readyz_is_503_naming_the_broker_when_it_is_down(client, private_redis, use_broker):
    use_broker(private_redis.url)
    private_redis.stop()
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith("error:")


def test_readyz_is_503_naming_the_database_when_it_fails(client, monkeypatch):
    from apps.api import health

    def broken():
        raise ConnectionError("database unreachable")

    monkeypatch.setattr(health, "_check_database", broken)
    body = client.get("/readyz").json()
    assert body["checks"]["database"] == "error: ConnectionError"


def test_health_endpoints_are_not_rate_limited_or_authenticated(client, settings):
    for _ in range(3):
        response = client.get("/healthz", HTTP_AUTHORIZATION="Bearer nonsense")
        assert response.status_code == 200
        assert "X-RateLimit-Limit" not in response
