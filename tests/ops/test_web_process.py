"""The web process (`python -m config.web`): granian's options come from Django's settings (the
environment and .env, checked at start-up), and workers are forked from a preloaded application, so
replacing one (WEB_MAX_MEMORY) costs a fork, not a new import of Django."""

import ipaddress
import logging
import logging.config
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import requests
from django.conf import settings

from config.server.environ import build_environ
from config.server.process import LOGGING, MORE_WORKERS_THAN_CORES, WorkersAsMeasured, server_options
from tests.conftest import settings_loaded
from tests.factories import ApiKeyFactory

UNSET = ("WEB_", "BIND", "PORT", "FORWARDED_ALLOW_IPS", "DJANGO_")
SHOW = (
    "import config.settings as s; print(s.WEB_BIND, s.WEB_CONCURRENCY, s.WEB_THREADS, s.WEB_HEADER_TIMEOUT, "
    "s.WEB_BODY_TIMEOUT, s.WEB_MAX_MEMORY, s.WEB_PRELOAD, s.WEB_ACCESS_LOG, s.FORWARDED_ALLOW_IPS)"
)


def loaded(**env) -> subprocess.CompletedProcess:
    return settings_loaded(SHOW, env, unset=UNSET)


def test_the_web_settings_have_defaults_that_run_on_one_machine():
    result = loaded()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 9) == [
        "('127.0.0.1',",
        "8000)",
        "3",
        "2",
        "10",
        "30",
        "1024",
        "True",
        "False",
        "(IPv4Network('127.0.0.1/32'),)\n",
    ]


def test_the_web_settings_are_read_from_the_environment():
    result = loaded(
        PORT="9001",
        WEB_CONCURRENCY="3",
        WEB_THREADS="8",
        WEB_HEADER_TIMEOUT="5",
        WEB_BODY_TIMEOUT="60",
        WEB_MAX_MEMORY="",
        WEB_PRELOAD="no",
        WEB_ACCESS_LOG="true",
        FORWARDED_ALLOW_IPS="10.0.0.0/8, ::1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 9) == [
        "('127.0.0.1',",
        "9001)",
        "3",
        "8",
        "5",
        "60",
        "None",
        "False",
        "True",
        "(IPv4Network('10.0.0.0/8'), IPv6Network('::1/128'))\n",
    ]
    assert loaded(BIND="[::1]:8123", PORT="9001").stdout.startswith("('::1', 8123) ")
    assert loaded(FORWARDED_ALLOW_IPS="*").stdout.endswith("('*',)\n")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"BIND": "localhost:8000"}, "BIND must be an IP address and a port"),
        ({"BIND": "127.0.0.1:80000"}, "BIND must be an IP address and a port"),
        ({"PORT": "http"}, "BIND must be an IP address and a port"),
        ({"WEB_PRELOAD": "maybe"}, "WEB_PRELOAD must be true or false, got 'maybe'"),
        ({"WEB_HEADER_TIMEOUT": "61"}, "WEB_HEADER_TIMEOUT must be between 1 and 60, got 61"),
        ({"WEB_THREADS": "0"}, "WEB_THREADS must be a positive integer"),
        ({"WEB_RUNTIME_MODE": "fast"}, "WEB_RUNTIME_MODE must be mt or st, got 'fast'"),
        ({"WEB_MAX_MEMORY": "0"}, "WEB_MAX_MEMORY must be a positive integer or empty"),
        ({"FORWARDED_ALLOW_IPS": "proxy.internal"}, "FORWARDED_ALLOW_IPS must be comma-separated IP addresses"),
    ],
)
def test_a_bad_web_setting_stops_the_start_up(env, named):
    result = loaded(**env)
    assert result.returncode != 0
    assert named in result.stderr


def test_granians_runtime_is_multi_threaded_unless_the_single_threaded_one_is_asked_for():
    show = "import config.settings as s; print(s.WEB_RUNTIME_MODE)"
    assert settings_loaded(show, {}, unset=UNSET).stdout == "mt\n"
    assert settings_loaded(show, {"WEB_RUNTIME_MODE": " ST "}, unset=UNSET).stdout == "st\n"


def test_the_web_process_answers_on_the_single_threaded_runtime_too(start_web):
    """Its health check (start_web waits for it) and a large answer, sent in parts from the
    application's thread through the event loop."""
    web = start_web(WEB_RUNTIME_MODE="st", WEB_CONCURRENCY=1, WEB_THREADS=2)
    response = requests.get(f"{web.url}/v1/openapi.json", timeout=30)
    assert response.status_code == 200, response.text[:200]
    assert response.json()["info"]["title"]


def test_a_setting_granian_has_no_counterpart_for_stops_the_web_process_at_start_up():
    """WEB_TIMEOUT, WEB_KEEPALIVE and WEB_MAX_REQUESTS were gunicorn's: a deployment that sets one
    is told, instead of believing it in force."""
    result = subprocess.run(
        [sys.executable, "-m", "config.web"],
        env={**environment_without_web_settings(), "WEB_MAX_REQUESTS": "1000"},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "WEB_MAX_REQUESTS is no longer read by the web process" in result.stderr


def environment_without_web_settings() -> dict:
    return {key: value for key, value in os.environ.items() if not key.startswith(UNSET)}


def test_granians_options_are_the_settings():
    web = SimpleNamespace(
        WEB_BIND=("192.0.2.1", 8080),
        WEB_CONCURRENCY=3,
        WEB_HEADER_TIMEOUT=7,
        WEB_ACCESS_LOG=False,
        WEB_MAX_MEMORY=512,
        WEB_MEMORY_CHECK_INTERVAL=20,
        WEB_GRACEFUL_TIMEOUT=25,
        WEB_RUNTIME_MODE="st",
    )
    options = server_options(web)
    assert (options["address"], options["port"], options["workers"]) == ("192.0.2.1", 8080, 3)
    assert options["runtime_mode"] == "st"
    assert options["http1_settings"].header_read_timeout == 7000
    assert (options["workers_max_rss"], options["rss_sample_interval"]) == (512, 20)
    assert options["workers_kill_timeout"] == 25
    assert options["log_access"] is False
    assert options["target"] == "config.server.asgi:application"


def test_granians_access_log_escapes_control_characters_of_the_path():
    fields = {"addr": "127.0.0.1", "path": "/healthz\n2026-11-24 18:00:00,000 INFO cps.request [forged]\x00"}
    record = logging.LogRecord("granian.access", logging.INFO, __file__, 1, "%(addr)s %(path)s", (fields,), None)
    formatter = logging.config.DictConfigurator({}).configure_formatter(LOGGING["formatters"]["access"])
    line = formatter.format(record)
    assert line == "127.0.0.1 /healthz\\n2026-11-24 18:00:00,000 INFO cps.request [forged]\\x00"


def granian_warning(text: str) -> logging.LogRecord:
    return logging.LogRecord("_granian", logging.WARNING, __file__, 1, text, (), None)


@pytest.mark.parametrize(("cores", "workers", "warned"), [(2, 3, False), (2, 4, True), (8, 12, False), (8, 13, True)])
def test_granians_more_workers_than_cores_warning_is_kept_only_past_one_and_a_half_per_core(
    monkeypatch, cores, workers, warned
):
    monkeypatch.setattr("multiprocessing.cpu_count", lambda: cores)
    warning = granian_warning(f"{MORE_WORKERS_THAN_CORES} available. Consider using {cores} workers")
    assert WorkersAsMeasured(workers).filter(warning) is warned
    assert WorkersAsMeasured(workers).filter(granian_warning("Workers respawn is configured, but ...")) is True


@pytest.mark.skipif(os.cpu_count() < 2, reason="3 workers on one core are more than the measured default")
def test_the_web_process_with_the_default_workers_starts_without_granians_workers_warning(start_web):
    web = start_web(WEB_CONCURRENCY=3, WEB_THREADS=2)
    log = web.log_text()
    assert "Listening at" in log  # granian's own lines are still written
    assert "Configured number of workers" not in log


@pytest.mark.postgres
@pytest.mark.skipif(not settings.IS_POSTGRES, reason="the web process needs the test database on PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_replaced_workers_of_the_preloaded_application_keep_answering(start_web):
    """A worker over WEB_MAX_MEMORY is replaced by a new one forked from the preloaded master.
    Connections to PostgreSQL and Redis are opened in each worker after the fork, never shared
    through the master: every answer is right before, during and after the replacement."""
    key = ApiKeyFactory()
    web = start_web(
        WEB_CONCURRENCY=1,
        WEB_THREADS=1,
        WEB_MAX_MEMORY=1,
        WEB_MEMORY_CHECK_INTERVAL=1,
        REDIS_URL=settings.REDIS_URL,
        RATE_LIMIT_FREE=1_000_000,  # the counters on Redis outlive a test run, and account ids repeat
    )

    def me() -> None:
        response = requests.get(f"{web.url}/v1/me", headers={"Authorization": f"Bearer {key.raw}"}, timeout=10)
        assert response.status_code == 200, response.text
        assert response.json()["data"]["account"]["id"] == key.account_id
        assert response.headers["X-RateLimit-Limit"]

    me()
    deadline = time.monotonic() + 30
    while "Stopped old worker-1" not in web.log_text():
        assert time.monotonic() < deadline, web.log_text()
        me()
        time.sleep(0.1)
    me()
    assert "worker-1 RSS over threshold" in web.log_text(), web.log_text()


def scope(client: str = "127.0.0.1", headers: tuple = ()) -> dict:
    return {
        "type": "http",
        "method": "GET",
        "path": "/v1/me",
        "raw_path": b"/v1/%C3%A9t%C3%A9",
        "query_string": b"a=1",
        "scheme": "http",
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": (client, 50000),
        "headers": [(b"host", b"localhost"), *headers],
    }


PROXIES = (ipaddress.ip_network("10.0.0.0/8"),)


def test_the_application_gets_the_environ_gunicorn_gave_it():
    environ = build_environ(
        scope(
            headers=(
                (b"x-forwarded-for", b"1.2.3.4"),
                (b"x_forwarded_for", b"5.6.7.8"),
                (b"accept", b"a"),
                (b"accept", b"b"),
                (b"content-type", b"application/json"),
            )
        ),
        PROXIES,
    )
    assert environ["PATH_INFO"] == "/v1/été".encode().decode("latin-1")  # PEP 3333: the bytes as latin-1
    assert (environ["QUERY_STRING"], environ["REMOTE_ADDR"], environ["SERVER_PROTOCOL"]) == (
        "a=1",
        "127.0.0.1",
        "HTTP/1.1",
    )
    # A header name with an underscore is dropped: it would otherwise pass for X-Forwarded-For.
    assert environ["HTTP_X_FORWARDED_FOR"] == "1.2.3.4"
    assert environ["HTTP_ACCEPT"] == "a,b"
    assert environ["CONTENT_TYPE"] == "application/json" and "HTTP_CONTENT_TYPE" not in environ


@pytest.mark.parametrize(
    ("client", "headers", "scheme"),
    [
        ("10.1.2.3", ((b"x-forwarded-proto", b"https"),), "https"),
        ("::ffff:10.1.2.3", ((b"x-forwarded-ssl", b"on"),), "https"),
        ("10.1.2.3", ((b"x-forwarded-proto", b"http"),), "http"),
        ("192.0.2.7", ((b"x-forwarded-proto", b"https"),), "http"),  # not a trusted proxy
    ],
)
def test_the_scheme_comes_from_a_trusted_proxys_headers_only(client, headers, scheme):
    assert build_environ(scope(client, headers), PROXIES)["wsgi.url_scheme"] == scheme


def test_an_answer_larger_than_the_streaming_threshold_reaches_the_client_whole(start_web, client):
    """Answers past STREAM_AFTER_BYTES are sent in parts from the application's thread (the schema,
    about 400 kB, is one): through granian, as users get them."""
    from config.server.streaming import STREAM_AFTER_BYTES

    expected = client.get("/v1/openapi.json").content
    assert len(expected) > STREAM_AFTER_BYTES
    web = start_web()
    response = requests.get(f"{web.url}/v1/openapi.json", timeout=30)
    assert response.status_code == 200, response.text[:200]
    assert response.content == expected
