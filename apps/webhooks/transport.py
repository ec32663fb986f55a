"""Signing and sending webhook requests over the guarded keep-alive pools of apps.core.addresses
(one per worker process): every address a host resolves to is checked before any is dialled."""

import base64
import hashlib
import hmac
import threading
import time

import urllib3
from django.conf import settings
from urllib3 import HTTPConnectionPool, Timeout
from urllib3.exceptions import NewConnectionError
from urllib3.util import parse_url

from apps.core.addresses import BlockedAddress, pool_manager
from apps.webhooks.models import SignatureFormat, standard_key
from apps.webhooks.outcomes import Outcome

USER_AGENT = "ContentPublishingService-Webhooks/1.0 (+https://example.com/webhooks)"
RESPONSE_BODY_LIMIT = 20 * 1024


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The specification's X-Service-Signature: keyed with the secret string's own bytes."""
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def sign_standard(key: bytes, msg_id: str, timestamp: str, body: bytes) -> str:
    """One Standard Webhooks signature (`v1,<base64>`) of `{id}.{timestamp}.{body}`."""
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return f"v1,{base64.b64encode(digest).decode()}"


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
    if previous_secret and outcome.consequence.re_sign:
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


_routes = threading.local()


def _route(url: str) -> tuple[HTTPConnectionPool, str]:
    """This thread's keep-alive pool for `url` and the path its requests name, looked up once for
    the attempts to one URL in a row (a batch's): the pool manager's parse and look-up on every
    request cost about a twelfth of an attempt's HTTP work. No proxy is used (see pool_manager),
    so a request names the path, as the pool manager's own would. urllib3 2's manager closes no
    pool it lets go of (it only drops it), so the pool kept here stays usable."""
    manager = pool_manager()
    last = getattr(_routes, "last", None)
    if last is None or last[0] is not manager or last[1] != url:
        last = _routes.last = (manager, url, manager.connection_from_url(url), parse_url(url).request_uri)
    return last[2], last[3]


def _post(url: str, body: bytes, headers: dict) -> Outcome:
    outcome = Outcome(request_headers=headers)
    timeout = settings.WEBHOOK_TIMEOUT
    started = time.monotonic()
    try:
        pool, path = _route(url)
        response = pool.urlopen(
            "POST",
            path,
            body=body,
            headers=headers,
            timeout=Timeout(connect=timeout, read=timeout),
            retries=False,
            redirect=False,
            assert_same_host=False,
            preload_content=False,
        )
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
