"""Logging: one line per record, plain or JSON, each with its request's id."""

from apps.core import env

LOG_LEVEL = env.one_of(
    "LOG_LEVEL",
    env.text("LOG_LEVEL", "INFO").upper(),
    {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"},
    "a logging level name",
)
LOG_FORMAT = env.one_of("LOG_FORMAT", env.text("LOG_FORMAT", "plain"), {"plain", "json"}, "'plain' or 'json'")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Both escape what a record quotes (CR, LF, NUL and the other controls of a hostile path, header
    # or e-mail), so each record is one line and none can be forged (apps/api/observability.py).
    "formatters": {
        "plain": {
            "class": "apps.api.observability.EscapingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        },
        "json": {
            "()": "apps.api.observability.EscapingJsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {
        # Every record carries the id of the request (or of the task's enqueuing request) it was
        # logged in, "-" outside one (apps/api/observability.py, config/celery.py).
        "request_id": {"()": "apps.api.observability.RequestIdFilter"},
        # Records that carry the request keep only its method and path: query strings can hold one-time tokens.
        "request_summary": {"()": "apps.api.observability.RequestSummaryFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id", "request_summary"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
