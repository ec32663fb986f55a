"""gunicorn settings, all from the environment (see the README's configuration table)."""

import os

bind = os.environ.get("BIND", f"127.0.0.1:{os.environ.get('PORT', '8000')}")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))
# Recycle workers now and then so a slow leak cannot grow without bound; jitter spreads restarts.
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "10000"))
max_requests_jitter = max_requests // 10
accesslog = "-"
# The path without its query string: query strings can carry one-time tokens.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms'
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
