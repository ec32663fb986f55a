"""Bluesky's XRPC API as this service uses it, in plain HTTP on a requests session that dials
through the address guard (apps/core/addresses.py): the handle resolved to its DID, the DID's
document read from the directory (the account's server, PDS), sessions (createSession,
refreshSession), and the repository's records and blobs. Why not the `atproto` package:
docs/bluesky.md, "atproto or plain HTTP".

Every failure is an XrpcError with the status (None: no answer came), XRPC's `error` name and its
`message`; what it means for a job is the destination's business. Every address here, the
operator's and the ones a person or a directory gives, goes through the guard unless
BLUESKY_ALLOW_LOCAL_SERVERS lets this machine's be dialled.
"""

import re
import time
from urllib.parse import urlsplit

import requests
from django.conf import settings

from apps.core.addresses import BlockedRequest, guard

# A RateLimit-Reset further away than this is read as this (a day: Bluesky's longest window).
MAX_RETRY_AFTER = 86400.0
HANDLE = re.compile(r"([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
DID = re.compile(r"did:(plc:[a-z2-7]{24}|web:[a-z0-9.-]+(%3a\d+)?)")


# The error name of an address the guard refused (no request was sent).
BLOCKED = "BlockedAddress"


class XrpcError(Exception):
    def __init__(self, status: int | None, message: str, *, error: str = "", retry_after: float | None = None):
        super().__init__(message)
        self.status, self.message, self.error, self.retry_after = status, message, error, retry_after


def post_url(handle: str, rkey: str) -> str:
    """The post's page in Bluesky's app."""
    return f"https://bsky.app/profile/{handle}/post/{rkey}"


def _retry_after(response: requests.Response) -> float | None:
    """Seconds until the window resets, from RateLimit-Reset (Unix seconds)."""
    reset = (response.headers.get("RateLimit-Reset") or "").strip()
    if not reset.isdigit():
        return None
    return min(max(int(reset) - time.time(), 0.0), MAX_RETRY_AFTER)


def _refusal(response: requests.Response) -> XrpcError:
    try:
        body = response.json()
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), str) else ""
    message = body.get("message") if isinstance(body.get("message"), str) else ""
    said = " ".join((f"{error}: {message}" if message and message != error else error or message).split())[:500]
    return XrpcError(
        response.status_code,
        said or f"HTTP {response.status_code} {response.reason or ''}".strip(),
        error=error,
        retry_after=_retry_after(response),
    )


def _no_answer(exc: requests.RequestException, what: str) -> XrpcError:
    if isinstance(exc, BlockedRequest):
        # Not an outage: the address is refused, and will be on every attempt.
        return XrpcError(None, f"Bluesky was not asked for {what}: {exc}.", error=BLOCKED)
    if isinstance(exc, requests.Timeout):
        return XrpcError(None, f"Bluesky did not answer {what} in time.")
    return XrpcError(None, f"Bluesky could not be reached for {what} ({type(exc).__name__}: {str(exc)[:200]}).")


def guarded_session() -> requests.Session:
    return guard(requests.Session(), allow_private=settings.BLUESKY_ALLOW_LOCAL_SERVERS)


def server_url(value: str) -> str:
    """A server address a person gives, as the base of its XRPC paths; ValueError when it is none."""
    value = value.strip().rstrip("/")
    parts = urlsplit(value)
    schemes = {"https", "http"} if settings.BLUESKY_ALLOW_LOCAL_SERVERS else {"https"}
    if parts.scheme not in schemes or not parts.hostname or parts.query or parts.fragment or parts.username:
        raise ValueError(f"A Bluesky server is an https:// address such as https://bsky.social, got {value[:200]!r}.")
    return value


class Xrpc:
    """Calls to one base address, within the job's deadline (None: PUBLISH_TIMEOUT per call)."""

    def __init__(
        self, base_url: str, *, token: str = "", deadline: float | None = None, http: requests.Session | None = None
    ) -> None:
        self.base_url, self.token, self.deadline = base_url.rstrip("/"), token, deadline
        # A job's calls share one session: one connection (and TLS handshake) to the server, not one per call.
        self.http = http or guarded_session()

    def _timeout(self, what: str) -> float:
        if self.deadline is None:
            return float(settings.PUBLISH_TIMEOUT)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise XrpcError(None, f"Bluesky did not answer {what} in time.")
        return remaining

    def call(self, method: str, nsid: str, what: str, *, token: str | None = None, headers=None, **kwargs) -> dict:
        token = self.token if token is None else token
        headers = {**({"Authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
        try:
            response = self.http.request(
                method,
                f"{self.base_url}/xrpc/{nsid}",
                headers=headers,
                timeout=self._timeout(what),
                allow_redirects=False,  # a redirect could lead anywhere: the guard judges only what is dialled
                **kwargs,
            )
        except requests.RequestException as exc:
            raise _no_answer(exc, what) from None
        if response.status_code >= 300:
            raise _refusal(response)
        return _object(response, what)

    def get(self, url: str, what: str) -> dict:
        """A JSON document at an absolute address (a DID's document)."""
        try:
            response = self.http.get(url, timeout=self._timeout(what), allow_redirects=False)
        except requests.RequestException as exc:
            raise _no_answer(exc, what) from None
        if response.status_code >= 300:
            raise _refusal(response)
        return _object(response, what)


def _object(response: requests.Response, what: str) -> dict:
    if not response.content:
        return {}
    try:
        body = response.json()
    except ValueError:
        raise XrpcError(502, f"Bluesky's answer to {what} was not JSON.") from None
    if not isinstance(body, dict):
        raise XrpcError(502, f"Bluesky's answer to {what} was not a JSON object.")
    return body


# --- Identity: handle -> DID -> the account's server ---


def resolve_handle(handle: str) -> str:
    body = Xrpc(settings.BLUESKY_RESOLVER_URL).call(
        "GET", "com.atproto.identity.resolveHandle", "the handle's look-up", params={"handle": handle}
    )
    did = body.get("did")
    if not isinstance(did, str) or not DID.fullmatch(did):
        raise XrpcError(502, f"The handle's look-up answered no DID Bluesky uses (plc or web): {str(did)[:100]!r}.")
    return did


def did_document(did: str) -> dict:
    """The DID's document: from the directory for did:plc, from the domain itself for did:web."""
    if did.startswith("did:web:"):
        url = f"https://{did.removeprefix('did:web:').replace('%3a', ':')}/.well-known/did.json"
    else:
        url = f"{settings.BLUESKY_DIRECTORY_URL}/{did}"
    return Xrpc("").get(url, "the account's DID document")


def pds_of(document: dict) -> str:
    """The account's server, as its DID document names it (the `#atproto_pds` service)."""
    for service in document.get("service") or []:
        if isinstance(service, dict) and str(service.get("id", "")).endswith("#atproto_pds"):
            endpoint = service.get("serviceEndpoint")
            if isinstance(endpoint, str):
                try:
                    return server_url(endpoint)
                except ValueError:
                    break
    raise XrpcError(502, "The account's DID document names no server (PDS) this service can reach.")


def handles_of(document: dict) -> set[str]:
    return {
        name.removeprefix("at://").lower()
        for name in document.get("alsoKnownAs") or []
        if isinstance(name, str) and name.startswith("at://")
    }


# --- Sessions ---


def create_session(
    *, pds: str, identifier: str, password: str, deadline: float | None = None, http: requests.Session | None = None
) -> dict:
    """A new session (accessJwt, refreshJwt, did, handle) from the handle and the app password."""
    return _session(
        Xrpc(pds, deadline=deadline, http=http).call(
            "POST",
            "com.atproto.server.createSession",
            "the sign-in",
            json={"identifier": identifier, "password": password},
        )
    )


def refresh_session(
    *, pds: str, refresh_jwt: str, deadline: float | None = None, http: requests.Session | None = None
) -> dict:
    return _session(
        Xrpc(pds, deadline=deadline, http=http).call(
            "POST", "com.atproto.server.refreshSession", "the session's renewal", token=refresh_jwt
        )
    )


def _session(body: dict) -> dict:
    if not all(isinstance(body.get(key), str) and body[key] for key in ("accessJwt", "refreshJwt", "did")):
        raise XrpcError(502, "Bluesky's session answer held no tokens and DID.")
    return body
