"""A Mastodon instance's HTTP API as this service uses it: the app's registration (POST /api/v1/apps),
OAuth 2.0's authorization code flow (Authlib's OAuth2Session, over requests), the account, the
instance's limits, statuses (create with an Idempotency-Key, edit, delete, the account's recent ones
and their source) and media (v2: uploaded, then processed).

An instance's address is typed by a user, so every request dials through the address guard
(apps/core/addresses.py) unless MASTODON_ALLOW_LOCAL_INSTANCES lets the tests' local fakes in, and
none follows a redirect. Every failure is an ApiError carrying the instance's status (None: no answer
came) and its words; what it means for a job is the destination's business.
"""

import time
from datetime import UTC, datetime

import requests
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from django.conf import settings

from apps.core import refusals
from apps.core.addresses import BlockedRequest, guard

# What the service asks an account to grant: posting statuses and media, reading who it is, and
# reading its statuses (the look-up after a lost answer reads their source, which Mastodon grants
# only with read:statuses).
SCOPES = "write:statuses write:media read:accounts read:statuses"
# A wait further away than this is read as this (an instance's limits reset within a day).
MAX_RETRY_AFTER = 86400.0
# What a new instance is taken to allow until its /api/v2/instance says (Mastodon's defaults).
DEFAULT_LIMITS = {"max_characters": 500, "characters_reserved_per_url": 23, "max_media_attachments": 4}


class ApiError(Exception):
    """`blocked`: the address guard refused to dial the instance (no request was sent)."""

    def __init__(
        self, status: int | None, message: str, *, retry_after: float | None = None, blocked: bool = False
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after, self.blocked = status, message, retry_after, blocked


def _seconds_until(value: str | None) -> float | None:
    """Seconds to wait, from X-RateLimit-Reset (an ISO 8601 time) or Retry-After (seconds)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max((when - datetime.now(UTC)).total_seconds(), 0.0), MAX_RETRY_AFTER)


def _message(response: requests.Response) -> str:
    """The instance's own words for a refusal (Mastodon's `error`, `error_description`)."""
    return refusals.words(response, ("error_description", "error"))


def _no_answer(exc: requests.RequestException, what: str) -> ApiError:
    if isinstance(exc, BlockedRequest):
        return ApiError(None, f"The Mastodon instance may not be dialled for {what}: {exc}.", blocked=True)
    if isinstance(exc, requests.Timeout):
        return ApiError(None, f"The Mastodon instance did not answer {what} in time.")
    return ApiError(None, f"The Mastodon instance could not be reached for {what} ({exc}).")


def _refusal(response: requests.Response) -> ApiError:
    wait = response.headers.get("Retry-After")
    if response.status_code == 429:
        wait = response.headers.get("X-RateLimit-Reset") or wait
    return ApiError(response.status_code, _message(response), retry_after=_seconds_until(wait))


def _session(**kwargs) -> OAuth2Session:
    session = OAuth2Session(
        # Mastodon takes the client's secret in the form body as well as in a Basic header.
        token_endpoint_auth_method="client_secret_post",  # noqa: S106 (a method's name, not a secret)
        scope=SCOPES,
        **kwargs,
    )
    return guard(session, allow_private=settings.MASTODON_ALLOW_LOCAL_INSTANCES)


def _json(response: requests.Response, what: str):
    try:
        return response.json()
    except ValueError:
        raise ApiError(502, f"The instance's answer to {what} was not JSON.") from None


def _object(response: requests.Response, what: str) -> dict:
    body = _json(response, what)
    if not isinstance(body, dict):
        raise ApiError(502, f"The instance's answer to {what} was not a JSON object.")
    return body


def register_app(*, base_url: str, redirect_uri: str) -> dict:
    """The instance's new app for this service: its `client_id` and `client_secret`."""
    try:
        response = _session().post(
            f"{base_url}/api/v1/apps",
            json={
                "client_name": settings.MASTODON_CLIENT_NAME,
                "redirect_uris": redirect_uri,
                "scopes": SCOPES,
                "website": settings.SITE_URL,
            },
            timeout=settings.PUBLISH_TIMEOUT,
            allow_redirects=False,
            withhold_token=True,  # an app is registered before any account grants a token
        )
    except requests.RequestException as exc:
        raise _no_answer(exc, "the app's registration") from None
    if response.status_code >= 300:
        raise _refusal(response)
    app = _object(response, "the app's registration")
    if not isinstance(app.get("client_id"), str) or not isinstance(app.get("client_secret"), str):
        raise ApiError(502, "The instance registered the app but gave no client_id and client_secret.")
    return app


def authorization_url(*, base_url: str, client_id: str, redirect_uri: str, state: str) -> str:
    url, _state = _session(client_id=client_id, redirect_uri=redirect_uri).create_authorization_url(
        f"{base_url}/oauth/authorize", state=state
    )
    return url


def exchange_code(*, base_url: str, client_id: str, client_secret: str, code: str, redirect_uri: str) -> dict:
    """The token response for an authorization code (`access_token`, `scope`...)."""
    session = _session(client_id=client_id, client_secret=client_secret, redirect_uri=redirect_uri)
    what = "the authorization code"
    try:
        token = session.fetch_token(
            f"{base_url}/oauth/token",
            grant_type="authorization_code",
            code=code,
            timeout=settings.PUBLISH_TIMEOUT,
            allow_redirects=False,
        )
    except OAuthError as exc:
        raise ApiError(400, f"The instance refused {what}: {exc.description or exc.error}.") from None
    except requests.HTTPError as exc:
        raise ApiError(exc.response.status_code, f"The instance refused {what}: {_message(exc.response)}.") from None
    except requests.RequestException as exc:
        raise _no_answer(exc, what) from None
    except ValueError:
        raise ApiError(502, f"The instance's answer to {what} was not JSON.") from None
    if not token.get("access_token"):
        raise ApiError(502, f"The instance's answer to {what} held no access token.")
    return dict(token)


class Client:
    """An account's access to its instance, each request within the job's deadline."""

    def __init__(self, base_url: str, access_token: str, *, deadline: float | None = None) -> None:
        self.base_url = base_url
        self.session = _session(token={"access_token": access_token, "token_type": "Bearer"})
        self.deadline = deadline

    def _timeout(self) -> float:
        if self.deadline is None:
            return float(settings.PUBLISH_TIMEOUT)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ApiError(None, "The Mastodon instance did not answer in time.")
        return remaining

    def _request(self, method: str, path: str, what: str, **kwargs) -> requests.Response:
        try:
            response = self.session.request(
                method, f"{self.base_url}{path}", timeout=self._timeout(), allow_redirects=False, **kwargs
            )
        except requests.RequestException as exc:
            raise _no_answer(exc, what) from None
        if response.status_code >= 300:
            raise _refusal(response)
        return response

    def verify_credentials(self) -> dict:
        """The account the token belongs to (`id`, `acct`, `display_name`...)."""
        account = _object(self._request("GET", "/api/v1/accounts/verify_credentials", "the account"), "the account")
        if not isinstance(account.get("id"), str) or not account["id"]:
            raise ApiError(502, "The instance's answer about the account held no id.")
        return account

    def limits(self) -> dict:
        """The instance's limits on a status (DEFAULT_LIMITS' keys), from /api/v2/instance."""
        try:
            response = self._request("GET", "/api/v2/instance", "the instance's limits")
        except ApiError as exc:
            if exc.status == 404:  # before Mastodon 4.0: its defaults
                return dict(DEFAULT_LIMITS)
            raise
        configuration = _object(response, "the instance's limits").get("configuration")
        configuration = configuration if isinstance(configuration, dict) else {}
        statuses = configuration.get("statuses") if isinstance(configuration.get("statuses"), dict) else {}
        limits = {}
        for key, default in DEFAULT_LIMITS.items():
            value = statuses.get(key)
            limits[key] = value if isinstance(value, int) and value > 0 else default
        return limits

    def create_status(self, *, fields: dict, idempotency_key: str) -> dict:
        """A new status; the instance answers a repeat of the same key with the status it made."""
        response = self._request(
            "POST", "/api/v1/statuses", "the new status", json=fields, headers={"Idempotency-Key": idempotency_key}
        )
        return self._status(response, "the new status")

    def edit_status(self, *, status_id: str, fields: dict) -> dict:
        return self._status(self._request("PUT", f"/api/v1/statuses/{status_id}", "the status's edit", json=fields), "")

    def _status(self, response: requests.Response, what: str) -> dict:
        status = _object(response, what or "the status")
        if not isinstance(status.get("id"), str) or not status["id"]:
            raise ApiError(502, "The instance made the status but did not say its id.")
        return status

    def delete_status(self, *, status_id: str) -> bool:
        """Take the status down; False when the instance has no such status (already gone)."""
        try:
            self._request("DELETE", f"/api/v1/statuses/{status_id}", "the status's removal")
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def recent_statuses(self, *, account_id: str, limit: int = 20) -> list[dict]:
        """The account's latest statuses, newest first."""
        response = self._request(
            "GET",
            f"/api/v1/accounts/{account_id}/statuses",
            "the account's recent statuses",
            params={"limit": limit, "exclude_reblogs": "true"},
        )
        statuses = _json(response, "the account's recent statuses")
        return [status for status in statuses if isinstance(status, dict)] if isinstance(statuses, list) else []

    def status_text(self, *, status_id: str) -> str | None:
        """A status's plain text as it was posted (its source); None when it is gone."""
        try:
            response = self._request("GET", f"/api/v1/statuses/{status_id}/source", "a status's text")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        text = _object(response, "a status's text").get("text")
        return text if isinstance(text, str) else None

    def upload_media(self, *, data: bytes, filename: str, mime_type: str, description: str) -> tuple[str, bool]:
        """(the medium's id, whether it is ready): 202 means the instance is still processing it."""
        response = self._request(
            "POST",
            "/api/v2/media",
            "an image's upload",
            files={"file": (filename, data, mime_type)},
            data={"description": description} if description else {},
        )
        medium = _object(response, "an image's upload")
        if not isinstance(medium.get("id"), str):
            raise ApiError(502, "The instance took the image but did not say its id.")
        return medium["id"], response.status_code == 200 and bool(medium.get("url"))

    def media_ready(self, *, media_id: str) -> bool:
        """Whether the instance has processed the medium (GET answers 206 until then)."""
        response = self._request("GET", f"/api/v1/media/{media_id}", "an image's processing")
        return response.status_code == 200 and bool(_object(response, "an image").get("url"))
