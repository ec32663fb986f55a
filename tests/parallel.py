"""What each pytest-xdist worker has of its own, so that workers running at once cannot see each
other's state (docs/development.md, Tests in parallel).

pytest-django already gives each worker a test database of its own (test_<NAME>_gw0, _gw1, ...).
Everything else a test shares lives in Redis (caches, rate-limit counters, the broker's queues and
unacknowledged messages), in the Celery queue the tests send to, or on ports: each worker gets a
Redis database of its own (REDIS_URL's number plus the worker's), a queue named after it, and a
slice of the web processes' ports. A serial run (`-n 0`) keeps the settings it was given.
"""

import os
from urllib.parse import urlsplit, urlunsplit

# Redis's default `databases`: a worker's database number must stay below it.
REDIS_DATABASES = 16
# The variables that name a Redis database; the broker's is REDIS_URL's unless set apart.
REDIS_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL")


def worker_id() -> str | None:
    """This process's xdist worker (gw0, gw1, ...), or None in a serial run or in xdist's controller."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def worker_number() -> int:
    return int(worker_id().removeprefix("gw")) if worker_id() else 0


def worker_count() -> int:
    return int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def redis_url_for_worker(url: str, number: int) -> str:
    """`url` with its database number moved up by `number` (redis://host:6379/5, worker 2: /7)."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or number == 0:
        return url
    database = int(parts.path.strip("/") or 0) + number
    if database >= REDIS_DATABASES:
        raise ValueError(
            f"worker {number} would use Redis database {database} of {url}, beyond Redis's "
            f"{REDIS_DATABASES}: give REDIS_URL a lower database number, or run fewer workers (-n)"
        )
    return urlunsplit(parts._replace(path=f"/{database}"))


def worker_environment(number: int, environ=os.environ) -> dict[str, str]:
    """The variables worker `number` runs with, set before it loads the settings, so that the
    processes its tests start (web, workers) inherit them too."""
    return {name: redis_url_for_worker(environ[name], number) for name in REDIS_VARIABLES if environ.get(name)}


def queue_name(database_name: str) -> str:
    """The Celery queue the tests send to: never a development worker's, nor another run's (each
    has its own database), nor another worker's of this run."""
    suffix = f"-{worker_id()}" if worker_id() else ""
    return f"cps-test-{database_name}{suffix}".replace("/", "-")


def ports_for_worker(ports: range) -> range:
    """This worker's slice of `ports`: workers looking for a free port at once never pick the same one."""
    size = max(len(ports) // worker_count(), 1)
    start = ports.start + (worker_number() * size) % len(ports)
    return range(start, min(start + size, ports.stop))
