"""The web process: `python -m config.web` (the Procfile's web line) runs granian serving
config/server/asgi.py.

Why it exists: granian takes its options from its command line or its Python API, not from Django's
settings. Here they are the settings (config/settings/web.py), read from the environment
and the `.env` file beside manage.py and checked at start-up like every other setting, before granian
binds its port; the settings gunicorn read that granian has no counterpart for stop the start-up, and
granian's own log lines go through the service's escaping formatter. granian has no control socket;
nothing is written outside the process but its output.
"""

import logging
import multiprocessing
import os

# Settings that gunicorn read and granian has no counterpart for: refused, so that a deployment
# does not believe them in force.
GONE = {
    "WEB_TIMEOUT": "a request is never killed; WEB_HEADER_TIMEOUT and WEB_BODY_TIMEOUT bound the reads",
    "WEB_KEEPALIVE": "an idle kept-alive connection is closed after WEB_HEADER_TIMEOUT",
    "WEB_MAX_REQUESTS": "workers are recycled by memory (WEB_MAX_MEMORY) instead",
}


# The largest request head (request line and header fields) granian reads; a larger one answers an
# empty 431 before config/server/limits.py sees it, which applies gunicorn's smaller limits itself.
HEAD_BUFFER_BYTES = 64 * 1024


# granian's logging (its own lines, and the access log), written by the formatter of the service's
# own plain logs (apps/api/observability.py), which escapes control characters: a path with an encoded
# line feed cannot write a line of its own. granian merges this dict into its own at the top level,
# so both of its formatters are given.
LOGGING = {
    "formatters": {
        "generic": {"class": "apps.api.observability.EscapingFormatter", "format": "[%(levelname)s] %(message)s"},
        "access": {"class": "apps.api.observability.EscapingFormatter", "format": "%(message)s"},
    },
}


# granian's warning when there are more worker processes than cores. Up to one and a half per core
# is what the service measured fastest (the default: 3 on the project's 2 cores, docs/benchmarks.md;
# docs/operations.md, Sizing the web process), so there the warning is noise on every start; past
# that it stands.
MORE_WORKERS_THAN_CORES = "Configured number of workers appears to be higher than the amount of CPU cores"


class WorkersAsMeasured(logging.Filter):
    def __init__(self, workers: int) -> None:
        super().__init__()
        self.measured = workers <= multiprocessing.cpu_count() * 3 // 2

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.measured and record.getMessage().startswith(MORE_WORKERS_THAN_CORES))


def logging_config(workers: int) -> dict:
    """LOGGING, with granian's own lines filtered for `workers` worker processes. granian replaces
    its dict's top-level keys with these, so both of its handlers are given again."""
    stdout = {"class": "logging.StreamHandler", "stream": "ext://sys.stdout"}
    return {
        **LOGGING,
        "filters": {"workers": {"()": WorkersAsMeasured, "workers": workers}},
        "handlers": {
            "console": {**stdout, "formatter": "generic", "filters": ["workers"]},
            "access": {**stdout, "formatter": "access"},
        },
    }


def server_options(web) -> dict:
    """granian's options from the settings (`web`: django.conf.settings)."""
    from granian.constants import HTTPModes, Interfaces, RuntimeModes
    from granian.http import HTTP1Settings

    host, port = web.WEB_BIND
    return {
        "target": "config.server.asgi:application",
        "address": host,
        "port": port,
        # The application's own interface is WSGI; config/server/asgi.py reads the bodies in the event
        # loop and runs it on WEB_THREADS threads of its own.
        "interface": Interfaces.ASGINL,
        "workers": web.WEB_CONCURRENCY,
        "runtime_mode": RuntimeModes(web.WEB_RUNTIME_MODE),
        "http": HTTPModes.http1,
        "websockets": False,
        # Counted from the connection's opening, or from the end of the previous answer on a
        # kept-alive connection: also how long an idle connection is kept.
        "http1_settings": HTTP1Settings(
            header_read_timeout=web.WEB_HEADER_TIMEOUT * 1000, keep_alive=True, max_buffer_size=HEAD_BUFFER_BYTES
        ),
        "log_dictconfig": logging_config(web.WEB_CONCURRENCY),
        "log_access": web.WEB_ACCESS_LOG,
        # The path without its query string: query strings can carry one-time tokens.
        "log_access_format": '%(addr)s "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).1fms',
        # A worker that dies is started again, as gunicorn's master did (granian gives up on a
        # worker that dies again within seconds, and exits).
        "respawn_failed_workers": True,
        "workers_max_rss": web.WEB_MAX_MEMORY,
        "rss_sample_interval": web.WEB_MEMORY_CHECK_INTERVAL,
        "workers_kill_timeout": web.WEB_GRACEFUL_TIMEOUT,
    }


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    # Reading one setting loads them all, from the environment and .env: a bad value stops the
    # start-up here, before granian binds its port.
    settings.WEB_BIND  # noqa: B018
    for name, instead in GONE.items():
        if name in os.environ:
            raise ImproperlyConfigured(f"{name} is no longer read by the web process ({instead}): unset it")
    # The settings fit together (production's policies), before granian binds its port.
    from config.checks import refuse_to_serve_on_errors

    refuse_to_serve_on_errors(preload=settings.WEB_PRELOAD)
    from granian import Granian

    server = Granian(**server_options(settings))
    if settings.WEB_PRELOAD:
        # Workers are forked from this process: with the application imported here (Django set up,
        # its middleware and views loaded), a worker that is started again (WEB_MAX_MEMORY) is
        # ready at once instead of importing Django again. Code changes then need a restart.
        import config.server.asgi  # noqa: F401
    server.serve()


if __name__ == "__main__":
    main()
