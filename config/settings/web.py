"""The web process (config/web.py: granian serving config/server/): where it listens, its processes
and timeouts, and the service's public address built from it."""

import ipaddress
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from apps.core import env


def _bind() -> tuple[str, int]:
    """BIND as `address:port` (an IP address; IPv6 in brackets), by default 127.0.0.1:$PORT."""
    port = env.text("PORT", "8000").strip()
    raw = env.text("BIND", f"127.0.0.1:{port}").strip()
    host, _, port = raw.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(host)
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(port)
    except ValueError:
        raise ImproperlyConfigured(
            f"BIND must be an IP address and a port, like 127.0.0.1:8000 or [::1]:8000 (PORT: a port), got {raw!r}"
        ) from None
    return host, int(port)


def _networks(name: str, default: str) -> tuple:
    """Comma-separated addresses or networks, or `*` (any)."""
    raw = env.text(name, default)
    try:
        return tuple(
            part if part == "*" else ipaddress.ip_network(part, strict=False)
            for part in (item.strip() for item in raw.split(","))
            if part
        )
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be comma-separated IP addresses or networks, or *, got {raw!r}"
        ) from None


WEB_BIND = _bind()


def _site_url() -> str:
    """SITE_URL, by default the address the web process listens on (127.0.0.1 for one that listens
    on every address), so a trial on another PORT or BIND prints and sends links that reach it."""
    host, port = WEB_BIND
    if ipaddress.ip_address(host).is_unspecified:
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    raw = env.text("SITE_URL", f"http://{host}:{port}").strip().rstrip("/")
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - a port that is not a number raises here
        if parts.scheme not in {"http", "https"} or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(raw)
    except ValueError:
        raise ImproperlyConfigured(
            f"SITE_URL must be an http or https address, like https://cps.example.com, got {raw!r}"
        ) from None
    return raw


# The service's public address: it builds every address the service prints or sends (invitation,
# sign-in and password links, blogs without a domain, the seed's hints).
SITE_URL = _site_url()
# The fastest of the API benchmark's sweep on the project's 2-core machine (bench/RESULTS.md §1): three
# processes of two threads each; docs/operations.md says how to size a bigger machine.
WEB_CONCURRENCY = env.positive_int("WEB_CONCURRENCY", 3)  # worker processes
WEB_THREADS = env.positive_int("WEB_THREADS", 2)  # threads per process that run the application
# granian's runtime for the sockets in each process: multi-threaded (`mt`, its default for this
# interface) or single-threaded (`st`). The API benchmark measures both beside each other.
WEB_RUNTIME_MODE = env.one_of(
    "WEB_RUNTIME_MODE", env.text("WEB_RUNTIME_MODE", "mt").strip().lower(), {"mt", "st"}, "mt or st"
)
# Seconds a client has to send a request's line and headers (counted from the connection's opening
# or the end of the previous answer, so also how long an idle kept-alive connection stays open;
# granian takes at most 60), and then its body: past either the connection is closed (a body
# answers 408 first). Neither holds a thread while it waits.
WEB_HEADER_TIMEOUT = env.int_between("WEB_HEADER_TIMEOUT", 10, 1, 60)
WEB_BODY_TIMEOUT = env.positive_int("WEB_BODY_TIMEOUT", 30)
# Seconds a stopping worker gets to finish its requests before it is killed.
WEB_GRACEFUL_TIMEOUT = env.int_between("WEB_GRACEFUL_TIMEOUT", 30, 1, 1800)
# A worker whose memory (RSS, MiB) reaches this is replaced (a new one first, then the old one stops
# gracefully), checked every WEB_MEMORY_CHECK_INTERVAL seconds: a slow leak cannot grow without bound.
WEB_MAX_MEMORY = env.limit("WEB_MAX_MEMORY", "1024")
WEB_MEMORY_CHECK_INTERVAL = env.int_between("WEB_MEMORY_CHECK_INTERVAL", 30, 1, 300)
WEB_PRELOAD = env.boolean("WEB_PRELOAD", default=True)
# The application logs one line per request (cps.request); granian's own access log is off unless asked.
WEB_ACCESS_LOG = env.boolean("WEB_ACCESS_LOG", default=False)
# A cached API read whose answer is certain from Redis alone is answered in the event loop, before
# Django (config/server/fast_reads.py); `false` sends every request through Django.
WEB_FAST_READS = env.boolean("WEB_FAST_READS", default=True)
# Proxies whose X-Forwarded-Proto (or -Protocol, -Ssl) sets the request's scheme.
FORWARDED_ALLOW_IPS = _networks("FORWARDED_ALLOW_IPS", "127.0.0.1")
