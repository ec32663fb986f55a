"""PostgreSQL drops the connection of a running web process (a restart, a failover, an idle timeout):
the next request still succeeds, because CONN_HEALTH_CHECKS replaces a dead persistent connection."""

import pytest
import requests
from django.conf import settings
from django.db import connection

from tests.conftest import database_url, wait_until
from tests.factories import ApiKeyFactory

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(
        not settings.IS_POSTGRES,
        reason="needs PostgreSQL: the test ends the web process's connection with pg_terminate_backend; "
        "set DATABASE_URL",
    ),
    pytest.mark.django_db(transaction=True),
]

APPLICATION_NAME = "cps-reliability-web"


@pytest.fixture
def web(start_web):
    """The production web process with one worker and one thread, so that every request uses the same
    persistent database connection."""
    return start_web(
        DATABASE_URL=f"{database_url()}?application_name={APPLICATION_NAME}",
        CONN_MAX_AGE=600,
        REDIS_URL="",
        WEB_CONCURRENCY=1,
        WEB_THREADS=1,
    ).url


def web_backends() -> list[int]:
    with connection.cursor() as cursor:
        # The web processes of other runs (other xdist workers, other checkouts) use other databases.
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
            [APPLICATION_NAME],
        )
        return [row[0] for row in cursor.fetchall()]


def test_the_next_request_succeeds_after_the_database_dropped_the_web_process_connection(web):
    key = ApiKeyFactory()
    me = lambda: requests.get(f"{web}/v1/me", headers={"Authorization": f"Bearer {key.raw}"}, timeout=10)  # noqa: E731
    assert me().status_code == 200
    [backend] = web_backends()

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
    wait_until(lambda: backend not in web_backends(), timeout=10, step=0.05)

    response = me()
    assert response.status_code == 200, response.text
    assert response.json()["data"]["account"]["id"] == key.account_id
    # A new connection answered, and it is kept for the requests after it.
    [replacement] = web_backends()
    assert replacement != backend
    assert me().status_code == 200
    assert web_backends() == [replacement]
