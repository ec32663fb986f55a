"""The WSGI environ (PEP 3333) of a request granian hands over as an ASGI scope, built as gunicorn
built it, which the application was written against.

Why it exists: Django's WSGI handler needs an environ, and granian's ASGI interface gives a scope.
asgiref's WsgiToAsgi builds one, but keeps header names with an underscore (X_Forwarded_For would
pass for X-Forwarded-For) and takes no scheme from a proxy. granian's own proxy-headers wrapper
(granian.utils.proxies) reads X-Forwarded-Proto only, and only beside X-Forwarded-For, and rewrites
the client's address (the application picks it from X-Forwarded-For itself: NUM_PROXIES). Here the
scheme comes from gunicorn's secure scheme headers of a FORWARDED_ALLOW_IPS peer, and two that
disagree are refused.
"""

import ipaddress
import sys
from urllib.parse import unquote_to_bytes

from config.server.limits import Refused

# The scheme headers a trusted proxy may set, and the value that means HTTPS (gunicorn's
# secure_scheme_headers, which FORWARDED_ALLOW_IPS applied to before).
SECURE_SCHEME_HEADERS = {b"x-forwarded-protocol": b"ssl", b"x-forwarded-proto": b"https", b"x-forwarded-ssl": b"on"}


def trusted(client: tuple | None, networks: tuple) -> bool:
    """Whether the peer may tell the scheme (FORWARDED_ALLOW_IPS); a peer without an address (a
    unix socket) may, as with gunicorn."""
    if not client:
        return True
    if "*" in networks:
        return True
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return False
    address = getattr(address, "ipv4_mapped", None) or address  # ::ffff:10.0.0.5 on a dual-stack port
    return any(address in network for network in networks)


def build_environ(scope: dict, networks: tuple) -> dict:
    """The WSGI environ of the request (PEP 3333), as gunicorn built it: header names with an
    underscore are dropped (X_Forwarded_For would otherwise pass for X-Forwarded-For), repeated
    fields are joined with commas, and the scheme comes from a trusted proxy's headers only."""
    raw_path = scope.get("raw_path") or scope["path"].encode()
    path = raw_path.split(b"?", 1)[0]
    server = scope.get("server") or ("127.0.0.1", 0)
    client = scope.get("client")
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": (scope.get("query_string") or b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if client:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = str(client[0]), str(client[1])
    proxy = trusted(client, networks)
    scheme = None
    for name, value in scope["headers"]:
        if proxy and name in SECURE_SCHEME_HEADERS:
            said = "https" if value.strip().lower() == SECURE_SCHEME_HEADERS[name] else "http"
            if scheme not in (None, said):
                raise Refused(400)
            scheme = said
        if b"_" in name:
            continue
        key = name.decode("latin-1").upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = f"HTTP_{key}"
        text = value.decode("latin-1")
        environ[key] = f"{environ[key]},{text}" if key in environ else text
    if scheme:
        environ["wsgi.url_scheme"] = scheme
    return environ
