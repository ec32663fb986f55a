import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.core.management import execute_from_command_line
from django.db import connection, connections
from django.test import Client
from rest_framework.test import APIClient

from apps.core.hosts import AllowedHosts
from apps.webhooks.models import Event
from config.celery import app as celery_app
from tests import parallel
from tests.factories import AdminUserFactory, ApiKeyFactory

celery_app.conf.task_default_queue = parallel.queue_name(settings.DATABASES["default"]["NAME"])

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Pages people look at are tried in a real browser: Debian's Chromium, driven by Playwright.
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium package (.ci/run installs it)")

requires_postgres = pytest.mark.skipif(
    not settings.IS_POSTGRES, reason="needs PostgreSQL (row locks and real concurrency); set DATABASE_URL"
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """Each xdist worker starts with the environment of its own (tests/parallel.py): set before it
    loads the settings, and inherited by the processes its tests start."""
    for number, spec in enumerate(specs):
        try:
            spec.env.update(parallel.worker_environment(number))
        except ValueError as error:
            raise pytest.UsageError(str(error)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    # An xdist worker sends its reports to the controller as UTF-8: a lone surrogate that a test
    # logged on purpose (tests/ops/test_log_forgery.py) would crash the worker, and end the run.
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8")) for title, text in report.sections
    ]
    return report


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, whose DROP at the end fails while any connection to it is
    open, leaving it behind with a warning: idle connections of threads the tests left (servers'
    request threads) are ended first. Only this run's (this worker's) own test database."""
    yield
    if not settings.IS_POSTGRES:
        return
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_terminate_backend(pid) {others}")
        # Ending a connection only asks its server process to stop.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            cursor.execute(f"SELECT count(*) {others}")
            if cursor.fetchone()[0] == 0:
                break
            time.sleep(0.05)


@pytest.fixture(autouse=True)
def _test_settings(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Tests render admin pages without running collectstatic first.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # Django's test set-up copies ALLOWED_HOSTS into a plain list (adding "testserver"), which would
    # drop the blogs' own domains that config/settings/environment.py's list accepts per request.
    settings.ALLOWED_HOSTS = AllowedHosts(settings.ALLOWED_HOSTS)


@pytest.fixture(autouse=True)
def _own_media_store(settings, tmp_path):
    """Each test uploads into a folder of its own (the embedded default's local store)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_STORAGE = {
        "BACKEND": "apps.media.storage.AtomicFileSystemStorage",
        "OPTIONS": {"location": str(settings.MEDIA_ROOT), "base_url": settings.MEDIA_URL},
    }


@pytest.fixture(autouse=True)
def _fresh_rate_limits(monkeypatch):
    """Each test counts rate limits from zero, in counters of its own: the cache outlives a test (and,
    on Redis, a test run), and account ids repeat between tests on SQLite."""
    from apps.api import ratelimit

    monkeypatch.setattr(ratelimit, "store", ratelimit.CounterStore(namespace=f"test-{uuid.uuid4().hex}"))


@pytest.fixture(autouse=True)
def _fresh_pages(monkeypatch):
    """Each test caches the blogs' pages in a set of its own (ids and versions repeat on SQLite)."""
    from apps.blog import pages

    monkeypatch.setattr(pages, "store", pages.PageStore(namespace=f"test-pages-{uuid.uuid4().hex}"))


@pytest.fixture(autouse=True)
def _fresh_representations(monkeypatch):
    """Each test caches representations in a set of its own (ids repeat between tests on SQLite)."""
    from apps.api import representations

    monkeypatch.setattr(
        representations, "store", representations.RepresentationStore(namespace=f"test-{uuid.uuid4().hex}")
    )


@pytest.fixture(autouse=True)
def _fresh_entries(monkeypatch):
    """Each test keeps the shared cache's entries standing for rows (apps/core/coherence.py) in a set
    of its own: ids repeat between tests on a reused database."""
    from apps.core import coherence

    monkeypatch.setattr(coherence.shared, "namespace", f"test-rows-{uuid.uuid4().hex}")


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


@pytest.fixture
def admin_key(db):
    """A key (every scope) of a user with role admin."""
    return ApiKeyFactory(user=AdminUserFactory())


@pytest.fixture
def emitted():
    """The bodies of the webhook events of one kind written so far, oldest first."""

    def bodies(kind: str) -> list[dict]:
        return [json.loads(event.body) for event in Event.objects.filter(kind=kind).order_by("created_at", "id")]

    return bodies


def run_together(calls) -> list:
    """Start the calls at the same moment, each in its own thread and database connection; return
    what each returned, or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait(timeout=10)
            results[index] = call()
        except Exception as exc:
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def admin_session(user) -> Client:
    """A browser session signed in as `user` (the way a password sign-in leaves it)."""
    client = Client()
    client.force_login(user, backend="apps.settings_area.access.AccessBackend")
    return client


def settings_loaded(code: str, env: dict, *, unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run `code`, which imports config.settings, in a fresh interpreter: this environment without
    the variables that start with any of `unset`, plus `env` (start-up validation seen from outside)."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith(unset)}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def manage(monkeypatch, capsys):
    """Run `manage.py ARGS` as manage.py runs it (the process's argv); (exit code, stdout, stderr)."""
    # A command run from the command line closes every connection at its end; here that connection
    # holds the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)

    def run(*args) -> tuple[int, str, str]:
        argv = ["manage.py", *(str(arg) for arg in args)]
        monkeypatch.setattr(sys, "argv", argv)
        capsys.readouterr()
        try:
            execute_from_command_line(argv)
            code = 0
        except SystemExit as exit:
            code = exit.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


def json_error(err: str) -> dict:
    """The one JSON line a failed --json run writes to stderr."""
    [line] = err.strip().splitlines()
    return json.loads(line)["error"]


def wait_until(condition, timeout: float = 30.0, step: float = 0.2, action=None) -> None:
    """Poll `condition` (running `action` before each look) until it holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if action:
            action()
        if condition():
            return
        time.sleep(step)
    raise AssertionError("condition not reached in time")


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


@pytest.fixture
def receiver():
    from tests.receiver import Receiver

    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture
def private_targets(settings):
    """Webhook tests deliver to 127.0.0.1, which the SSRF guard refuses unless allowed."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True


requires_broker = pytest.mark.skipif(
    not (settings.IS_POSTGRES and settings.REDIS_URL),
    reason="needs PostgreSQL and Redis (a real worker shares the test database); set DATABASE_URL and REDIS_URL",
)


def database_url() -> str:
    """The URL of the database the tests use (the test database), for processes they start."""
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class WorkerProcess:
    """A real `celery worker` on the test queue, in its own process group so it can be killed whole."""

    def __init__(self, broker_url: str, env: dict) -> None:
        self.broker_url = broker_url
        self.env = env
        self.process: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115

    def start(self) -> "WorkerProcess":
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": self.broker_url,
            "CELERY_BROKER_URL": self.broker_url,
            "CELERY_QUEUE": celery_app.conf.task_default_queue,
            "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            **self.env,
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "2",
                "-Q",
                celery_app.conf.task_default_queue,
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=settings.BASE_DIR,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if " ready." in Path(self.log.name).read_text():
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"celery worker did not start:\n{Path(self.log.name).read_text()}")

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the worker's log, for the message of a failed test."""
        return Path(self.log.name).read_text()[-chars:]

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process is not None:
            # Pool children that outlive their parent would keep the test database open.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


@pytest.fixture
def start_worker():
    """Start real Celery workers (on the shared Redis unless a broker URL is given); stopped after the test."""
    workers: list[WorkerProcess] = []

    def start(broker_url: str | None = None, **env) -> WorkerProcess:
        worker = WorkerProcess(broker_url or settings.REDIS_URL, {k: str(v) for k, v in env.items()}).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


# Each xdist worker looks in a slice of its own.
WEB_PORTS = parallel.ports_for_worker(range(8500, 8600))


def free_port_in(ports: range) -> int:
    for port in ports:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}")


class WebProcess:
    """The Procfile's web process (`python -m config.web`: granian serving config/server/) on the test
    database, on a free port in 8500-8599, in its own process group."""

    def __init__(self, env: dict) -> None:
        self.url = f"http://127.0.0.1:{free_port_in(WEB_PORTS)}"
        self.env = {**os.environ, "DATABASE_URL": database_url(), "BIND": self.url.removeprefix("http://"), **env}
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
        self.process: subprocess.Popen | None = None

    def start(self) -> "WebProcess":
        self.process = subprocess.Popen(
            [sys.executable, "-m", "config.web"],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=settings.BASE_DIR,
            start_new_session=True,
        )
        wait_until(lambda: self._answers() or self.process.poll() is not None, timeout=30, step=0.1)
        assert self.process.poll() is None, self.log_text()
        return self

    def _answers(self) -> bool:
        try:
            return requests.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def log_text(self) -> str:
        return Path(self.log.name).read_text()

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)


@pytest.fixture
def start_web():
    """Start the production web process (environment variables as keyword arguments); stopped after the test."""
    webs: list[WebProcess] = []

    def start(**env) -> WebProcess:
        web = WebProcess({name: str(value) for name, value in env.items()})
        webs.append(web)
        return web.start()

    yield start
    for web in webs:
        web.stop()


@pytest.fixture
def use_broker():
    """Point this process's task publishing at another broker for the test."""
    original = celery_app.conf.broker_url, celery_app.conf.broker_transport

    def switch(url: str, transport: str | None = None) -> None:
        # The embedded default names its transport (config/broker.py), which would win over the URL's scheme.
        celery_app.conf.broker_url, celery_app.conf.broker_transport = url, transport
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    yield switch
    switch(*original)


@pytest.fixture
def browser(monkeypatch):
    """Headless Chromium (Debian's, no browser download), for the test's pages."""
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
    # between browser steps are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        yield launched
        launched.close()
