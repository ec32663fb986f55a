"""The web process: gunicorn's settings come from the environment, and workers are forked from a
preloaded application, so recycling one (WEB_MAX_REQUESTS) costs a fork, not a new import of Django."""

import runpy

import pytest
import requests
from django.conf import settings

from tests.factories import ApiKeyFactory

GUNICORN_CONFIG = str(settings.BASE_DIR / "config" / "gunicorn.py")


def gunicorn_settings(monkeypatch, **env) -> dict:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(GUNICORN_CONFIG)


def test_gunicorn_preloads_the_application_by_default(monkeypatch):
    monkeypatch.delenv("WEB_PRELOAD", raising=False)
    assert gunicorn_settings(monkeypatch)["preload_app"] is True


@pytest.mark.parametrize(("value", "expected"), [("false", False), ("0", False), ("True", True), ("yes", True)])
def test_web_preload_is_read_from_the_environment(monkeypatch, value, expected):
    assert gunicorn_settings(monkeypatch, WEB_PRELOAD=value)["preload_app"] is expected


def test_a_bad_web_preload_value_stops_gunicorn_at_start_up(monkeypatch):
    with pytest.raises(ValueError, match="WEB_PRELOAD must be true or false, got 'maybe'"):
        gunicorn_settings(monkeypatch, WEB_PRELOAD="maybe")


@pytest.mark.postgres
@pytest.mark.skipif(not settings.IS_POSTGRES, reason="the web process needs the test database on PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_recycled_workers_of_the_preloaded_application_keep_answering(start_web):
    """Connections to PostgreSQL and Redis are opened in each worker after the fork, never shared
    through the preloaded master: every answer is right across several recycled workers."""
    key = ApiKeyFactory()
    web = start_web(WEB_CONCURRENCY=1, WEB_THREADS=1, WEB_MAX_REQUESTS=3, REDIS_URL=settings.REDIS_URL)
    for _ in range(10):
        response = requests.get(f"{web.url}/v1/me", headers={"Authorization": f"Bearer {key.raw}"}, timeout=10)
        assert response.status_code == 200, response.text
        assert response.json()["data"]["account"]["id"] == key.account_id
        assert response.headers["X-RateLimit-Limit"]
    assert web.log_text().count("Autorestarting worker") >= 2, web.log_text()
