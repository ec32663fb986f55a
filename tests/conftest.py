import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import ApiKeyFactory

requires_postgres = pytest.mark.skipif(
    not settings.IS_POSTGRES, reason="needs PostgreSQL (row locks and real concurrency); set DATABASE_URL"
)


@pytest.fixture(autouse=True)
def _test_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Tests render admin pages without running collectstatic first.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def api_key(db):
    return ApiKeyFactory()


@pytest.fixture
def client_for():
    """An API client that sends the given key as a Bearer token."""

    def make(api_key) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key.raw}")
        return client

    return make


@pytest.fixture
def authed(api_key, client_for):
    return client_for(api_key)
