import shutil
import socket
import subprocess
import time

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server of the test's own, so a test can stop and start it without touching the
    Redis that other tests and processes share."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def private_redis():
    if shutil.which("redis-server") is None:
        pytest.skip("needs the redis-server binary")
    server = PrivateRedis()
    server.start()
    yield server
    server.stop()
