"""The suite's xdist workers each get a Redis database, a Celery queue and ports of their own
(tests/parallel.py), so that tests running at once cannot see each other's keys or messages."""

import pytest

from tests import parallel


def test_each_worker_moves_redis_urls_database_up_by_its_number():
    assert parallel.redis_url_for_worker("redis://127.0.0.1:6379/5", 0) == "redis://127.0.0.1:6379/5"
    assert parallel.redis_url_for_worker("redis://127.0.0.1:6379/5", 2) == "redis://127.0.0.1:6379/7"
    assert parallel.redis_url_for_worker("redis://127.0.0.1:6379", 1) == "redis://127.0.0.1:6379/1"
    assert parallel.redis_url_for_worker("rediss://:pw@cache.example:6380/0?ssl=1", 3) == (
        "rediss://:pw@cache.example:6380/3?ssl=1"
    )


def test_a_worker_beyond_redis_databases_stops_the_run_saying_what_to_change():
    with pytest.raises(ValueError, match="lower database number, or run fewer workers"):
        parallel.redis_url_for_worker("redis://127.0.0.1:6379/10", 6)


def test_a_worker_moves_the_broker_too_and_leaves_unset_variables_unset():
    environ = {"REDIS_URL": "redis://127.0.0.1:6379/0", "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0", "X": "y"}
    assert parallel.worker_environment(1, environ) == {
        "REDIS_URL": "redis://127.0.0.1:6379/1",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
    }
    assert parallel.worker_environment(1, {"REDIS_URL": ""}) == {}
    assert parallel.worker_environment(1, {"CELERY_BROKER_URL": "filesystem://"}) == {
        "CELERY_BROKER_URL": "filesystem://"
    }


def test_each_worker_sends_tasks_to_a_queue_of_its_own(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert parallel.queue_name("cps_ci") == "cps-test-cps_ci"
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert parallel.queue_name("cps_ci") == "cps-test-cps_ci-gw1"
    assert parallel.queue_name("/tmp/db.sqlite3") == "cps-test--tmp-db.sqlite3-gw1"


def test_workers_look_for_web_ports_in_slices_that_do_not_overlap(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = []
    for number in range(3):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{number}")
        slices.append(set(parallel.ports_for_worker(range(8500, 8600))))
    assert [len(ports) for ports in slices] == [33, 33, 33]
    assert not (slices[0] & slices[1]) and not (slices[1] & slices[2]) and not (slices[0] & slices[2])
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert parallel.ports_for_worker(range(8500, 8600)) == range(8500, 8600)
