"""Signing and sending webhook requests: keep-alive connection pools per worker process, with the
private-address guard applied to the address each connection really reaches."""

import hashlib
import hmac
import ipaddress
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import certifi
import urllib3
from django.conf import settings
from urllib3 import PoolManager, Timeout
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError

USER_AGENT = "ContentPublishingService-Webhooks/1.0 (+https://example.com/webhooks)"
RESPONSE_BODY_LIMIT = 20 * 1024


class BlockedAddress(Exception):
    pass


def sign(secret: str, timestamp: str, body: bytes) -> str:
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def is_public_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not (
        ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast or ip.is_unspecified
    )


def resolve(host: str, port: int) -> list[str]:
    return [info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def check_url(url: str) -> str | None:
    """Why the URL may not be a webhook target, or None when it may."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return "The URL must be an absolute http:// or https:// URL."
    if settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
        return None
    try:
        addresses = resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError):
        return f"The host {parts.hostname!r} does not resolve."
    blocked = sorted({a for a in addresses if not is_public_address(a)})
    if blocked:
        return f"The host resolves to a private, loopback, link-local or reserved address ({', '.join(blocked)})."
    return None


class _GuardedMixin:
    def connect(self):
        super().connect()
        if settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
            return
        # Checked on the connected socket, so a DNS answer that changed since the URL was saved
        # (or differs between two look-ups) cannot reach an internal address.
        peer = self.sock.getpeername()[0]
        if not is_public_address(peer):
            self.sock.close()
            raise BlockedAddress(f"refused to connect to non-public address {peer}")


class GuardedHTTPConnection(_GuardedMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedMixin, HTTPSConnection):
    pass


class GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


def _ca_bundle() -> str:
    """The certificates requests would use: REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE, else certifi's."""
    return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or certifi.where()


_local = threading.local()


def pool_manager() -> PoolManager:
    """One keep-alive pool per destination, per process: created lazily, so a forked worker child
    never shares sockets with its parent. urllib3 directly, not requests on top of it: requests
    costs about three times the CPU per request (environment, proxies, cookies, hooks), the largest
    part of a delivery's own work. Deliveries go straight to the receiver (no proxy from the
    environment), so the address guard always checks the receiver's own address."""
    current = getattr(_local, "manager", None)
    if current is None or _local.pid != os.getpid():
        current = PoolManager(num_pools=32, maxsize=4, cert_reqs="CERT_REQUIRED", ca_certs=_ca_bundle())
        current.pool_classes_by_scheme = {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}
        _local.manager, _local.pid = current, os.getpid()
    return current


@dataclass
class Outcome:
    request_headers: dict
    status: int | None = None
    headers: dict = field(default_factory=dict)
    body: str = ""
    error: str = ""
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def send(*, url: str, secret: str, body: bytes, event: str, delivery_id: str) -> Outcome:
    """POST one signed attempt. The timestamp is taken now, so a late retry still passes the
    receiver's replay window; never raises for network trouble, it reports it."""
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event,
        "X-Service-Delivery": delivery_id,
        "X-Service-Timestamp": timestamp,
        "X-Service-Signature": sign(secret, timestamp, body),
    }
    outcome = Outcome(request_headers=headers)
    timeout = settings.WEBHOOK_TIMEOUT
    started = time.monotonic()
    try:
        response = pool_manager().urlopen(
            "POST", url, body=body, headers=headers, timeout=Timeout(connect=timeout, read=timeout),
            retries=False, redirect=False, preload_content=False,
        )  # fmt: skip
        try:
            outcome.status = response.status
            outcome.headers = dict(response.headers)
            chunks, size, complete = [], 0, True
            # The read timeout applies per socket read; the deadline bounds the whole attempt.
            for chunk in response.stream(4096):
                chunks.append(chunk)
                size += len(chunk)
                if size >= RESPONSE_BODY_LIMIT or time.monotonic() - started > timeout:
                    complete = False
                    break
            outcome.body = b"".join(chunks)[:RESPONSE_BODY_LIMIT].decode("utf-8", "replace")
        finally:
            # A connection with unread data in it is closed; one read to the end goes back to the pool.
            if complete:
                response.release_conn()
            else:
                response.close()
    except BlockedAddress as exc:
        outcome.error = str(exc)
    except NewConnectionError as exc:  # before TimeoutError: urllib3 makes it a subclass of it
        outcome.error = _describe(exc)
    except urllib3.exceptions.TimeoutError:
        outcome.error = f"timed out after {timeout}s"
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        outcome.error = _describe(exc)
    outcome.duration_ms = int((time.monotonic() - started) * 1000)
    if outcome.status is not None and outcome.duration_ms > timeout * 1000:
        outcome.status, outcome.error = None, f"timed out after {timeout}s"
    return outcome


def _describe(exc: Exception) -> str:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, BlockedAddress):
            return str(cause)
        cause = cause.__context__ or cause.__cause__
    text = str(exc)
    if isinstance(exc, urllib3.exceptions.SSLError):
        return f"TLS error: {text}"
    if isinstance(exc, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ProtocolError | OSError):
        return f"connection failed: {text}"
    return f"{type(exc).__name__}: {text}"
