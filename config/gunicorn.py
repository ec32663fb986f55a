"""gunicorn settings, all from the environment (see the README's configuration table)."""

import os


def _bool(name: str, default: str) -> bool:
    raw = os.environ.get(name, default).strip().lower()
    if raw not in {"true", "false", "1", "0", "yes", "no"}:
        raise ValueError(f"{name} must be true or false, got {raw!r}")
    return raw in {"true", "1", "yes"}


bind = os.environ.get("BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))
# Recycle workers now and then so a slow leak cannot grow without bound; jitter spreads restarts.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "10000"))
max_requests_jitter = max_requests // 10
# Workers are forked from a master that has already imported the application, so a recycled worker
# starts in milliseconds instead of importing Django again (about a second of CPU on a small
# machine, taken from the requests being served). Code changes then need a restart, not a HUP.
preload_app = _bool("WEB_PRELOAD", "true")
# The application logs one line per request (cps.request, with its request id and account), so
# gunicorn's own access log is off; WEB_ACCESS_LOG=true writes it to stdout as well.
accesslog = "-" if _bool("WEB_ACCESS_LOG", "false") else None
# The path without its query string: query strings can carry one-time tokens.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms'
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
