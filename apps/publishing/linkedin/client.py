"""LinkedIn's HTTP API as this service uses it: the OAuth 2.0 authorization code flow and token
refresh (Authlib's OAuth2Session, over requests), the member's userinfo, the pages they administer,
the Images API (initialize an upload, then PUT the bytes) and the Posts API (versioned REST:
`LinkedIn-Version` and Rest.li 2.0.0 headers).

Every failure is an ApiError carrying LinkedIn's status (None: no answer came) and message; what
it means for a job is the destination's business. The two base addresses are operator settings
(LINKEDIN_AUTH_URL, LINKEDIN_API_URL), so the webhook address guard does not apply.
"""

import email.utils
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlsplit

import requests
from authlib.integrations.requests_client import OAuth2Session, OAuthError
from django.conf import settings
from django.utils import timezone

from apps.core import refusals

RESTLI_PROTOCOL = "2.0.0"
# A Retry-After further away than this is read as this (a day: LinkedIn's quotas reset daily).
MAX_RETRY_AFTER = 86400.0
# The distribution of a post to the main feed, as the Posts API requires it.
MAIN_FEED = {"feedDistribution": "MAIN_FEED", "targetEntities": [], "thirdPartyDistributionChannels": []}


class ApiError(Exception):
    def __init__(self, status: int | None, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


def post_url(urn: str) -> str:
    """The post's page on LinkedIn."""
    return f"https://www.linkedin.com/feed/update/{urn}/"


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait, from a Retry-After header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return min(max((when - datetime.now(UTC)).total_seconds(), 0.0), MAX_RETRY_AFTER)


def _message(response: requests.Response) -> str:
    """LinkedIn's own words for a refusal (its JSON `message`, an OAuth `error_description`)."""
    return refusals.words(response, ("message", "error_description", "error"))


def _no_answer(exc: requests.RequestException, what: str) -> ApiError:
    if isinstance(exc, requests.Timeout):
        return ApiError(None, f"LinkedIn did not answer {what} in time.")
    return ApiError(None, f"LinkedIn could not be reached for {what} ({type(exc).__name__}).")


# --- OAuth 2.0 (Authlib) ---


def oauth_session(*, redirect_uri: str | None = None, token: dict | None = None) -> OAuth2Session:
    return OAuth2Session(
        client_id=settings.LINKEDIN_CLIENT_ID,
        client_secret=settings.LINKEDIN_CLIENT_SECRET,
        # LinkedIn takes the client's secret in the form body, not in an Authorization header.
        token_endpoint_auth_method="client_secret_post",  # noqa: S106 (a method's name, not a secret)
        scope=" ".join(settings.LINKEDIN_SCOPES),
        redirect_uri=redirect_uri,
        token=token,
    )


def authorization_url(*, redirect_uri: str, state: str) -> str:
    url, _state = oauth_session(redirect_uri=redirect_uri).create_authorization_url(
        f"{settings.LINKEDIN_AUTH_URL}/authorization", state=state
    )
    return url


def _token(call, what: str) -> dict:
    try:
        token = call()
    except OAuthError as exc:
        raise ApiError(400, f"LinkedIn refused {what}: {exc.description or exc.error}.") from None
    except requests.HTTPError as exc:
        raise ApiError(exc.response.status_code, f"LinkedIn refused {what}: {_message(exc.response)}.") from None
    except requests.RequestException as exc:
        raise _no_answer(exc, what) from None
    except ValueError:
        raise ApiError(502, f"LinkedIn's answer to {what} was not JSON.") from None
    if not token.get("access_token"):
        raise ApiError(502, f"LinkedIn's answer to {what} held no access token.")
    return dict(token)


def exchange_code(*, code: str, redirect_uri: str) -> dict:
    """The token response for an authorization code (access_token, expires_in, refresh_token...)."""
    session = oauth_session(redirect_uri=redirect_uri)
    return _token(
        lambda: session.fetch_token(
            f"{settings.LINKEDIN_AUTH_URL}/accessToken",
            grant_type="authorization_code",
            code=code,
            timeout=settings.PUBLISH_TIMEOUT,
        ),
        "the authorization code",
    )


def refresh(*, refresh_token: str) -> dict:
    session = oauth_session()
    return _token(
        lambda: session.refresh_token(
            f"{settings.LINKEDIN_AUTH_URL}/accessToken", refresh_token=refresh_token, timeout=settings.PUBLISH_TIMEOUT
        ),
        "the refresh token",
    )


def expiry(token: dict, key: str = "expires_in") -> datetime | None:
    """When a token response's access (or, with key="refresh_token_expires_in", refresh) ends."""
    seconds = token.get(key)
    if not isinstance(seconds, int | float) or seconds <= 0:
        return None
    return timezone.now() + timedelta(seconds=seconds)


# --- The API, with an access token ---


class Client:
    def __init__(self, access_token: str, *, deadline: float | None = None) -> None:
        self.session = oauth_session(token={"access_token": access_token, "token_type": "Bearer"})
        self.deadline = deadline

    def _timeout(self) -> float:
        if self.deadline is None:
            return float(settings.PUBLISH_TIMEOUT)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ApiError(None, "LinkedIn did not answer in time.")
        return remaining

    def _request(self, method: str, path: str, what: str, *, rest: bool = True, headers=None, **kwargs):
        if rest:
            headers = {
                "LinkedIn-Version": settings.LINKEDIN_API_VERSION,
                "X-Restli-Protocol-Version": RESTLI_PROTOCOL,
                **(headers or {}),
            }
        # An upload goes to the absolute address LinkedIn gave for it; everything else to the API.
        url = path if path.startswith(("https://", "http://")) else f"{settings.LINKEDIN_API_URL}{path}"
        try:
            response = self.session.request(
                method,
                url,
                headers=headers,
                timeout=self._timeout(),
                allow_redirects=False,
                **kwargs,
            )
        except requests.RequestException as exc:
            raise _no_answer(exc, what) from None
        if response.status_code >= 300:
            raise ApiError(
                response.status_code, _message(response), retry_after=_retry_after(response.headers.get("Retry-After"))
            )
        return response

    def _json(self, response: requests.Response, what: str) -> dict:
        try:
            body = response.json()
        except ValueError:
            raise ApiError(502, f"LinkedIn's answer to {what} was not JSON.") from None
        if not isinstance(body, dict):
            raise ApiError(502, f"LinkedIn's answer to {what} was not a JSON object.")
        return body

    def userinfo(self) -> dict:
        """The member who granted the token (OpenID Connect: `sub`, `name`, `email`...)."""
        body = self._json(self._request("GET", "/v2/userinfo", "the member's profile", rest=False), "userinfo")
        if not isinstance(body.get("sub"), str) or not body["sub"]:
            raise ApiError(502, "LinkedIn's userinfo held no member id (sub).")
        return body

    def organizations(self) -> list[dict] | None:
        """The pages the member administers, as [{"urn", "name"}]; None when the token may not list them."""
        try:
            response = self._request(
                "GET",
                "/rest/organizationAcls",
                "the member's pages",
                params={"q": "roleAssignee", "role": "ADMINISTRATOR", "state": "APPROVED"},
            )
        except ApiError as exc:
            if exc.status == 403:  # no r_organization_admin: pages are then typed in by hand
                return None
            raise
        pages = []
        for element in self._json(response, "the member's pages").get("elements") or []:
            urn = element.get("organization") if isinstance(element, dict) else None
            if isinstance(urn, str) and urn.startswith("urn:li:organization:"):
                pages.append({"urn": urn, "name": self._organization_name(urn)})
        return pages

    def _organization_name(self, urn: str) -> str:
        try:
            response = self._request("GET", f"/rest/organizations/{urn.rsplit(':', 1)[1]}", "a page's name")
            name = self._json(response, "a page").get("localizedName")
        except ApiError:
            return ""
        return name if isinstance(name, str) else ""

    def initialize_image_upload(self, *, owner: str) -> tuple[str, str]:
        """(the address to PUT the image's bytes to, the image's URN) for an image of `owner`."""
        response = self._request(
            "POST",
            "/rest/images?action=initializeUpload",
            "the image's upload",
            json={"initializeUploadRequest": {"owner": owner}},
        )
        value = self._json(response, "the image's upload").get("value")
        upload_url = value.get("uploadUrl") if isinstance(value, dict) else None
        urn = value.get("image") if isinstance(value, dict) else None
        if not isinstance(upload_url, str) or not isinstance(urn, str) or not urn.startswith("urn:li:image:"):
            raise ApiError(502, "LinkedIn's answer to the image's upload held no upload address and image URN.")
        api = urlsplit(settings.LINKEDIN_API_URL)
        target = urlsplit(upload_url)
        # The access token goes with the bytes: only to LinkedIn over TLS (or to the API's own origin).
        if target.scheme != "https" and (target.scheme, target.netloc) != (api.scheme, api.netloc):
            raise ApiError(502, f"LinkedIn gave an upload address that is not https: {upload_url[:200]}")
        return upload_url, urn

    def upload_image(self, *, upload_url: str, data: bytes, mime_type: str) -> None:
        self._request(
            "PUT", upload_url, "the image's upload", rest=False, headers={"Content-Type": mime_type}, data=data
        )

    def create_post(self, *, author: str, commentary: str, content: dict | None = None) -> str:
        """Publish; the new post's URN (LinkedIn's `x-restli-id` header). `content`: the Posts API's
        `content` (the post's images), none for a text post."""
        body = {
            "author": author,
            "commentary": commentary,
            "visibility": "PUBLIC",
            "distribution": MAIN_FEED,
            "lifecycleState": "PUBLISHED",
            "isReshareDisabledByAuthor": False,
            **({"content": content} if content else {}),
        }
        response = self._request("POST", "/rest/posts", "the new post", json=body)
        urn = response.headers.get("x-restli-id", "").strip()
        if not urn.startswith("urn:li:"):
            raise ApiError(502, "LinkedIn made the post but did not say its id (x-restli-id).")
        return urn

    def update_commentary(self, *, urn: str, commentary: str) -> None:
        self._request(
            "POST",
            f"/rest/posts/{quote(urn, safe='')}",
            "the post's new text",
            headers={"X-RestLi-Method": "PARTIAL_UPDATE"},
            json={"patch": {"$set": {"commentary": commentary}}},
        )

    def delete_post(self, *, urn: str) -> bool:
        """Take the post down; False when LinkedIn has no such post (already gone)."""
        try:
            self._request(
                "DELETE",
                f"/rest/posts/{quote(urn, safe='')}",
                "the post's removal",
                headers={"X-RestLi-Method": "DELETE"},
            )
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def recent_posts(self, *, author: str, count: int = 20) -> list[dict]:
        """The author's latest posts, newest first (LinkedIn's finder by author)."""
        response = self._request(
            "GET",
            f"/rest/posts?author={quote(author, safe='')}&q=author&count={count}&sortBy=LAST_MODIFIED",
            "the author's recent posts",
            headers={"X-RestLi-Method": "FINDER"},
        )
        elements = self._json(response, "the author's posts").get("elements") or []
        return [element for element in elements if isinstance(element, dict)]
