"""The address guard for every outside party the service dials (webhook receivers, destinations' remotes):
only globally routable unicast addresses, checked on every address a host resolves to before any
of them is dialled, and keep-alive urllib3 pools whose connections apply the same check when they
connect. WEBHOOK_ALLOW_PRIVATE_TARGETS turns the check off (local development and tests)."""

import ipaddress
import os
import socket
import sys
import threading
from urllib.parse import urlsplit

import certifi
import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3 import PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, LocationParseError, NameResolutionError, NewConnectionError
from urllib3.util.connection import allowed_gai_family, create_connection

# Special-purpose ranges that the `is_global` of Python 3.11.7 (what we run) still calls global: the
# IETF protocol assignments (RFC 6890; no receiver lives there) and IPv6 documentation (RFC 9637).
_NOT_GLOBAL = (ipaddress.IPv4Network("192.0.0.0/24"), ipaddress.IPv6Network("3fff::/20"))
# The well-known NAT64 prefix and the local-use one: the last 32 bits are the IPv4 address reached.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


class BlockedAddress(Exception):
    pass


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


class BlockedRequest(requests.ConnectionError):
    """requests' form of BlockedAddress: a caller that handles requests' failures handles it too."""


class GuardedAdapter(HTTPAdapter):
    """A requests adapter whose connections dial through the address guard, as the webhooks' pools do."""

    def send(self, request, *args, **kwargs):
        try:
            return super().send(request, *args, **kwargs)
        except BlockedAddress as exc:
            raise BlockedRequest(f"{request.url.split('?')[0]}: {exc}", request=request) from exc

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        super().init_poolmanager(connections, maxsize, block=block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}


def guard(session: requests.Session, *, allow_private: bool = False) -> requests.Session:
    """The session (a plain requests.Session, or Authlib's OAuth2Session on it) made to dial only what
    the address guard allows, for outside parties whose address a user gave (a social network's
    server); `allow_private` (a destination's setting for local fakes) or WEBHOOK_ALLOW_PRIVATE_TARGETS
    lets it dial this machine's and private addresses too. Proxies from the environment are not used:
    through one, the guard would check the proxy's address instead."""
    session.trust_env = False
    if not allow_private:
        session.mount("http://", GuardedAdapter())
        session.mount("https://", GuardedAdapter())
    return session
