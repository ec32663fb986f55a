"""Signing and sending webhook requests: keep-alive connection pools per worker process, with the
private-address guard deciding on every address a host resolves to before any of them is dialled."""

import base64
import hashlib
import hmac
import ipaddress
import os
import socket
import sys
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
from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NameResolutionError, NewConnectionError
from urllib3.util.connection import allowed_gai_family, create_connection

from apps.webhooks.models import SignatureFormat, standard_key

USER_AGENT = "ContentPublishingService-Webhooks/1.0 (+https://example.com/webhooks)"
RESPONSE_BODY_LIMIT = 20 * 1024

# Special-purpose ranges that the `is_global` of Python 3.11.7 (what we run) still calls global: the
# IETF protocol assignments (RFC 6890; no receiver lives there) and IPv6 documentation (RFC 9637).
_NOT_GLOBAL = (ipaddress.IPv4Network("192.0.0.0/24"), ipaddress.IPv6Network("3fff::/20"))
# The well-known NAT64 prefix and the local-use one: the last 32 bits are the IPv4 address reached.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


class BlockedAddress(Exception):
    pass


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The specification's X-Service-Signature: keyed with the secret string's own bytes."""
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def sign_standard(key: bytes, msg_id: str, timestamp: str, body: bytes) -> str:
    """One Standard Webhooks signature (`v1,<base64>`) of `{id}.{timestamp}.{body}`."""
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return f"v1,{base64.b64encode(digest).decode()}"


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries traffic to (mapped, 6to4, Teredo, NAT64)."""
    if ip.ipv4_mapped:
        return (ip.ipv4_mapped,)
    if ip.sixtofour:
        return (ip.sixtofour,)
    if ip.teredo:
        return ip.teredo
    if any(ip in network for network in _NAT64):
        return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)
    return ()


def _is_global_unicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    # `is_global` lets through IPv6 outside the global unicast space 2000::/3 (is_reserved: e.g.
    # ::7f00:1, the IPv4-compatible form of 127.0.0.1) and the deprecated site-local fec0::/10.
    site_local = ip.version == 6 and ip.is_site_local
    return (
        ip.is_global
        and not (ip.is_multicast or ip.is_reserved or site_local)
        and not any(ip in network for network in _NOT_GLOBAL)
    )


def is_public_address(address: str) -> bool:
    """Whether a webhook may be sent to this address: globally routable unicast only. An IPv6
    address that carries traffic to IPv4 addresses is judged by them, so a tunnel or translator
    prefix cannot reach an internal IPv4 address (nor is a public one behind it refused)."""
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and (embedded := _embedded_ipv4(ip)):
        return all(_is_global_unicast(v4) for v4 in embedded)
    return _is_global_unicast(ip)


def resolve(host: str, port: int) -> list[str]:
    """The host's addresses in the resolver's order, for the address families urllib3 would dial."""
    infos = socket.getaddrinfo(host, port, allowed_gai_family(), socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def _refusal(addresses: list[str]) -> str:
    if len(addresses) == 1:
        return f"address {addresses[0]} is not allowed (not a public address)"
    return f"addresses {', '.join(addresses)} are not allowed (not public addresses)"


def check_url(url: str) -> str | None:
    """Why the URL may not be a webhook target, or None when it may."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return "The URL must be an absolute http:// or https:// URL."
    return check_host(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))


def check_host(host: str, port: int) -> str | None:
    """Why an outside party at `host` may not be dialled (the address guard), or None when it may."""
    if settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
        return None
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return f"The host {host!r} does not resolve."
    blocked = sorted({a for a in addresses if not is_public_address(a)})
    if blocked:
        return (
            "The host resolves to an address that is not publicly routable (private, loopback, link-local, "
            f"reserved, multicast or another special-use range): {', '.join(blocked)}."
        )
    return None


class _GuardedMixin:
    """Replaces urllib3's connect step (HTTPConnection._new_conn): the host is resolved once, every
    address is checked before any is dialled, and only the checked addresses are dialled, so neither
    a refused address nor a second, different DNS answer (rebinding) ever gets a TCP connection.
    The connection keeps the host name, which urllib3 uses after this for the Host header, TLS SNI
    and the certificate check."""

    def _new_conn(self) -> socket.socket:
        try:
            addresses = resolve(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        except UnicodeError:
            raise LocationParseError(f"'{self._dns_host}', label empty or too long") from None
        if not settings.WEBHOOK_ALLOW_PRIVATE_TARGETS:
            blocked = [a for a in addresses if not is_public_address(a)]
            if blocked:
                raise BlockedAddress(_refusal(blocked))
        error: OSError = OSError("getaddrinfo returns an empty list")
        for address in addresses:
            try:
                sock = create_connection(
                    (address, self.port),
                    self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except OSError as exc:
                error = exc
                continue
            sys.audit("http.client.connect", self, self.host, self.port)
            return sock
        # The same exceptions as urllib3's own _new_conn, so callers report them as before.
        if isinstance(error, TimeoutError):
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from error
        raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error


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


def send(
    *,
    url: str,
    secret: str,
    body: bytes,
    event: str,
    delivery_id: str,
    previous_secret: str = "",
    signature_format: str = SignatureFormat.SERVICE,
) -> Outcome:
    """POST one signed attempt. The timestamp is taken now, so a late retry still passes the
    receiver's replay window; never raises for network trouble, it reports it.

    `previous_secret` is the one a rotation's overlap still honours. Standard Webhooks carries
    both signatures in its one header. The specification's header holds one signature, which no
    receiver holding only the other secret can verify; so the request is signed with the current
    secret, and one answered with a refusal (any status but 2xx and 410 Gone) is sent again at once,
    signed with the previous one, and that answer counts (with both requests' time)."""
    if signature_format == SignatureFormat.STANDARD:
        return _send_standard(url, secret, previous_secret, body, event, delivery_id)
    outcome = _post(url, body, _service_headers(secret, body, event, delivery_id))
    if previous_secret and outcome.status is not None and not outcome.ok and outcome.status != 410:
        first = outcome
        outcome = _post(url, body, _service_headers(previous_secret, body, event, delivery_id))
        outcome.duration_ms += first.duration_ms
    return outcome


def _headers(event: str) -> dict:
    """What a request carries in either signature format."""
    return {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Service-Event": event}


def _service_headers(secret: str, body: bytes, event: str, delivery_id: str) -> dict:
    timestamp = str(int(time.time()))
    return {
        **_headers(event),
        "X-Service-Delivery": delivery_id,
        "X-Service-Timestamp": timestamp,
        "X-Service-Signature": sign(secret, timestamp, body),
    }


def _send_standard(url: str, secret: str, previous_secret: str, body: bytes, event: str, delivery_id: str) -> Outcome:
    timestamp = str(int(time.time()))
    headers = {
        **_headers(event),
        "webhook-id": delivery_id,
        "webhook-timestamp": timestamp,
    }
    key = standard_key(secret)
    if key is None:  # the services never store one; a signature no library verifies would only be refused
        return Outcome(request_headers=headers, error="The secret is not a Standard Webhooks secret: rotate it.")
    previous = standard_key(previous_secret) if previous_secret else None
    # Space-separated, as the standard lets a rotation's overlap send both; receivers try each.
    headers["webhook-signature"] = " ".join(
        sign_standard(k, delivery_id, timestamp, body) for k in (key, previous) if k is not None
    )
    return _post(url, body, headers)


def _post(url: str, body: bytes, headers: dict) -> Outcome:
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
        cause = cause.__cause__ or cause.__context__
    text = str(exc)
    if isinstance(exc, urllib3.exceptions.SSLError):
        return f"TLS error: {text}"
    if isinstance(exc, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ProtocolError | OSError):
        return f"connection failed: {text}"
    return f"{type(exc).__name__}: {text}"
