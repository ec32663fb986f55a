"""A local fake of a Mastodon instance: the app registration, OAuth 2.0 (authorize consents at once),
the account, the instance's limits, statuses (with Idempotency-Key semantics), edits, deletes, an
account's statuses and a status's source, and media (v2: 202 while processing), on 127.0.0.1. It
checks what the real API requires (scopes, the registered redirect URI, the text's length as
Mastodon counts it, whose media a status names) and answers as Mastodon does, with its rate-limit
headers on every answer; a revoked token is answered 401.

Its text counting is its own (not the service's): graphemes with `regex`, every http(s) link as
`characters_reserved_per_url`, a remote mention as its local part."""

import email.parser
import email.policy
import itertools
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
import regex

from apps.core import crypto
from apps.publishing.mastodon.models import MastodonApp
from apps.publishing.mastodon.services import connection_save
from tests.factories import ChannelFactory
from tests.fake_api import DROP, FakeApi, Request, Rule, basic, json_answer, page, redirect

SCOPES = "write:statuses write:media read:accounts read:statuses"
VISIBILITIES = ("public", "unlisted", "private", "direct")
_LINK = re.compile(r"https?://\S+?(?=[.,;:!?)\]]*(?:\s|$))")
_MENTION = re.compile(r"(@\w+)@[\w.-]+\w")
IMAGE_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF8", b"RIFF")


def counted(text: str, reserved: int) -> int:
    text = _MENTION.sub(r"\1", _LINK.sub("x" * reserved, text))
    return len(regex.findall(r"\X", text))


def _error(status: int, message: str, headers=()) -> tuple:
    return json_answer(status, {"error": message}, headers)


def _scoped(granted: str, needed: str) -> bool:
    """Whether the granted scopes include `needed` (read:statuses) or its parent (read)."""
    scopes = granted.split()
    return needed in scopes or needed.split(":")[0] in scopes


@dataclass
class Account:
    id: str
    username: str
    display_name: str


@dataclass
class Token:
    account: Account
    scope: str
    app: str
    revoked: bool = False


@dataclass
class Medium:
    id: str
    account_id: str
    data: bytes
    mime_type: str
    description: str
    polls_left: int
    status_id: str | None = None
    url: str | None = None


@dataclass
class Status:
    id: str
    account_id: str
    text: str
    visibility: str
    language: str | None
    media_ids: list[str]
    created_at: datetime
    edits: list[str] = field(default_factory=list)


class FakeMastodon(FakeApi):
    """Its state is public for tests to read and arrange: `apps` (client_id -> app), `accounts`,
    `statuses` (id -> Status), `deleted` (id -> Status), `media` (id -> Medium), `token_requests`,
    and the instance's `limits`."""

    def __init__(self) -> None:
        super().__init__()
        self.limits = {"max_characters": 500, "characters_reserved_per_url": 23, "max_media_attachments": 4}
        self.accounts = {"109": Account("109", "ada", "Ada Lovelace")}
        self.authorizing = "109"
        self.deny_next_authorization = False
        self.apps: dict[str, dict] = {}
        self.statuses: dict[str, Status] = {}
        self.deleted: dict[str, Status] = {}
        self.media: dict[str, Medium] = {}
        self.token_requests: list[dict] = []
        self.media_polls = 0  # GETs of a new medium answered 206 (processing) before it is ready
        self.rate_limit_reset = datetime.now(UTC) + timedelta(minutes=5)
        self._codes: dict[str, dict] = {}
        self._tokens: dict[str, Token] = {}
        self._keys: dict[tuple[str, str], str] = {}  # (account, Idempotency-Key) -> status id
        self._ids = itertools.count(110000000000000001)
        self._drops = 0

    # -- test controls ------------------------------------------------------------------------------
    def issue_token(self, account_id: str = "109", scope: str = SCOPES) -> dict:
        """A token response as after a consent, and its app, for tests that skip the browser flow."""
        with self._lock:
            app = self._register(
                {"client_name": "tests", "redirect_uris": "urn:ietf:wg:oauth:2.0:oob", "scopes": scope}
            )
            return self._token(self.accounts[account_id], scope, app["client_id"])

    def revoke(self, access_token: str) -> None:
        with self._lock:
            self._tokens[access_token].revoked = True

    def drop_after_create(self, times: int = 1) -> None:
        """The next `times` statuses made are not answered (the connection closes)."""
        with self._lock:
            self._drops += times

    def post_by_hand(self, text: str, account_id: str = "109") -> str:
        """A status the account posted itself (not through the service)."""
        with self._lock:
            return self._new_status(account_id, text, "public", None, []).id

    # -- serving ------------------------------------------------------------------------------------
    def _injected(self, rule: Rule) -> tuple:
        headers = {**dict(self._rate_headers()), **rule.headers}
        return _error(rule.status, rule.message or "Error", list(headers.items()))

    def _rate_headers(self) -> list:
        reset = self.rate_limit_reset.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return [("X-RateLimit-Limit", "300"), ("X-RateLimit-Remaining", "299"), ("X-RateLimit-Reset", reset)]

    def _route(self, r: Request):
        answer = self._answer(r)
        if answer is DROP:
            return answer
        status, headers, body = answer
        return status, [*headers, *self._rate_headers()], body

    def _answer(self, r: Request):
        public = {
            ("POST", "/api/v1/apps"): self._apps,
            ("GET", "/oauth/authorize"): self._authorize,
            ("POST", "/oauth/token"): self._oauth_token,
            ("GET", "/api/v2/instance"): lambda r: json_answer(200, self._instance()),
        }
        if view := public.get((r.method, r.path)):
            return view(r)
        token = self._bearer(r)
        if not isinstance(token, Token):
            return token
        for method, pattern, scope, view in self._routes():
            if r.method == method and (found := re.fullmatch(pattern, r.path)):
                if not _scoped(token.scope, scope):
                    return _error(403, "This action is outside the authorized scopes")
                return view(r, token, *found.groups())
        return _error(404, "Record not found")

    def _routes(self):
        return (
            ("GET", r"/api/v1/accounts/verify_credentials", "read:accounts", self._verify),
            ("POST", r"/api/v1/statuses", "write:statuses", self._create),
            ("PUT", r"/api/v1/statuses/(\d+)", "write:statuses", self._edit),
            ("DELETE", r"/api/v1/statuses/(\d+)", "write:statuses", self._delete),
            ("GET", r"/api/v1/statuses/(\d+)/source", "read:statuses", self._source),
            ("GET", r"/api/v1/accounts/(\d+)/statuses", "read:statuses", self._account_statuses),
            ("POST", r"/api/v2/media", "write:media", self._upload),
            ("GET", r"/api/v1/media/(\d+)", "write:media", self._medium),
        )

    # -- apps and OAuth -----------------------------------------------------------------------------
    def _register(self, form: dict) -> dict:
        app = {
            "id": str(next(self._ids)),
            "name": form["client_name"],
            "website": form.get("website"),
            "redirect_uri": form["redirect_uris"],
            "scopes": form.get("scopes", "read").split(),
            "client_id": secrets.token_urlsafe(16),
            "client_secret": secrets.token_urlsafe(24),
        }
        self.apps[app["client_id"]] = app
        return app

    def _apps(self, r: Request):
        form = r.body if isinstance(r.body, dict) else {}
        if not form.get("client_name") or not form.get("redirect_uris"):
            return _error(422, "Validation failed: Name can't be blank, Redirect URI can't be blank")
        unknown = [s for s in str(form.get("scopes", "read")).split() if s.split(":")[0] not in ("read", "write")]
        if unknown:
            return _error(422, f"Validation failed: Scopes {unknown[0]} is not a known scope")
        return json_answer(200, self._register(form))

    def _authorize(self, r: Request):
        q = r.query
        app = self.apps.get(q.get("client_id", ""))
        if q.get("response_type") != "code" or app is None:
            return page(400, "The client is unknown or response_type is not code.")
        if q.get("redirect_uri") != app["redirect_uri"]:
            return page(400, "The redirect uri included is not valid.")
        if not set(q.get("scope", "read").split()) <= set(app["scopes"]):
            return redirect(q["redirect_uri"], error="invalid_scope", state=q.get("state", ""))
        if self.deny_next_authorization:
            self.deny_next_authorization = False
            description = "The resource owner or authorization server denied the request."
            return redirect(q["redirect_uri"], error="access_denied", error_description=description, state=q["state"])
        code = secrets.token_urlsafe(24)
        self._codes[code] = {
            "app": app["client_id"],
            "redirect_uri": q["redirect_uri"],
            "scope": q.get("scope", "read"),
        }
        params = {"code": code, **({"state": q["state"]} if "state" in q else {})}
        return redirect(q["redirect_uri"], **params)

    def _oauth_token(self, r: Request):
        form = r.body if isinstance(r.body, dict) else {}
        self.token_requests.append(dict(form))
        client_id, secret = basic(r.headers) or (form.get("client_id"), form.get("client_secret"))
        app = self.apps.get(client_id or "")
        if app is None or app["client_secret"] != secret:
            return _error(401, "invalid_client")
        grant = self._codes.pop(form.get("code", ""), None)  # a code is gone once presented
        if form.get("grant_type") != "authorization_code" or grant is None or grant["app"] != client_id:
            return json_answer(
                400, {"error": "invalid_grant", "error_description": "The provided authorization grant is invalid"}
            )
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return json_answer(400, {"error": "invalid_grant", "error_description": "The redirect uri does not match"})
        return json_answer(200, self._token(self.accounts[self.authorizing], grant["scope"], client_id))

    def _token(self, account: Account, scope: str, app: str) -> dict:
        access = secrets.token_urlsafe(32)
        self._tokens[access] = Token(account, scope, app)
        return {"access_token": access, "token_type": "Bearer", "scope": scope, "created_at": 1764300000}

    def _bearer(self, r: Request):
        scheme, _, value = r.headers.get("Authorization", "").partition(" ")
        token = self._tokens.get(value) if scheme.lower() == "bearer" else None
        if token is not None and token.revoked:
            return _error(401, "The access token was revoked")
        if token is None:
            return _error(401, "The access token is invalid")
        return token

    # -- the API ------------------------------------------------------------------------------------
    def _instance(self) -> dict:
        return {
            "domain": "127.0.0.1",
            "title": "Fake Mastodon",
            "version": "4.3.0",
            "configuration": {
                "statuses": {**self.limits, "max_characters": self.limits["max_characters"]},
                "media_attachments": {"description_limit": 1500},
            },
        }

    def _account(self, account: Account) -> dict:
        return {
            "id": account.id,
            "username": account.username,
            "acct": account.username,
            "display_name": account.display_name,
        }

    def _verify(self, r: Request, token: Token):
        return json_answer(200, self._account(token.account))

    def _shown(self, status: Status) -> dict:
        return {
            "id": status.id,
            "created_at": status.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "visibility": status.visibility,
            "language": status.language,
            "url": f"{self.url}/@{self.accounts[status.account_id].username}/{status.id}",
            "content": "<p>" + status.text.replace("\n\n", "</p><p>").replace("\n", "<br />") + "</p>",
            "media_attachments": [{"id": m, "description": self.media[m].description} for m in status.media_ids],
            "edited_at": None if not status.edits else datetime.now(UTC).isoformat(),
        }

    def _status_problem(self, body, account_id: str, status_id: str | None) -> str | None:
        if not isinstance(body, dict):
            return "The request body must be JSON"
        text, media_ids = body.get("status") or "", body.get("media_ids") or []
        if not text and not media_ids:
            return "Validation failed: Text can't be blank"
        if counted(text, self.limits["characters_reserved_per_url"]) > self.limits["max_characters"]:
            return f"Validation failed: Text character limit of {self.limits['max_characters']} exceeded"
        if body.get("visibility", "public") not in VISIBILITIES:
            return f"Validation failed: Visibility {body['visibility']!r} is not a valid visibility"
        if (language := body.get("language")) is not None and not re.fullmatch(r"[a-z]{2}", str(language)):
            return f"Validation failed: Language {language!r} is not a known language"
        if len(media_ids) > self.limits["max_media_attachments"]:
            return "Validation failed: Cannot attach more than 4 files"
        for media_id in media_ids:
            medium = self.media.get(media_id)
            if medium is None or medium.account_id != account_id or medium.status_id not in (None, status_id):
                return f"Validation failed: Media {media_id} could not be found"
            if medium.url is None:
                return (
                    "Validation failed: Cannot attach files that have not finished processing. Try again in a moment!"
                )
        return None

    def _new_status(self, account_id: str, text: str, visibility: str, language, media_ids: list) -> Status:
        status = Status(
            str(next(self._ids)), account_id, text, visibility, language, list(media_ids), datetime.now(UTC)
        )
        self.statuses[status.id] = status
        for media_id in media_ids:
            self.media[media_id].status_id = status.id
        return status

    def _create(self, r: Request, token: Token):
        key = r.headers.get("Idempotency-Key")
        if key and (token.account.id, key) in self._keys:
            # Mastodon keeps the key for an hour and answers a repeat with the status it made.
            return json_answer(200, self._shown(self.statuses[self._keys[(token.account.id, key)]]))
        if problem := self._status_problem(r.body, token.account.id, None):
            return _error(422, problem)
        body = r.body
        status = self._new_status(
            token.account.id,
            body.get("status") or "",
            body.get("visibility", "public"),
            body.get("language"),
            body.get("media_ids") or [],
        )
        if key:
            self._keys[(token.account.id, key)] = status.id
        if self._drops:
            self._drops -= 1
            return DROP
        return json_answer(200, self._shown(status))

    def _owned(self, token: Token, status_id: str) -> Status | tuple:
        status = self.statuses.get(status_id)
        if status is None or status.account_id != token.account.id:
            return _error(404, "Record not found")
        return status

    def _edit(self, r: Request, token: Token, status_id: str):
        status = self._owned(token, status_id)
        if not isinstance(status, Status):
            return status
        if problem := self._status_problem(r.body, token.account.id, status_id):
            return _error(422, problem)
        for media_id in status.media_ids:
            self.media[media_id].status_id = None
        status.edits.append(status.text)
        status.text, status.media_ids = r.body.get("status") or "", list(r.body.get("media_ids") or [])
        status.language = r.body.get("language", status.language)
        for media_id in status.media_ids:
            self.media[media_id].status_id = status.id
        return json_answer(200, self._shown(status))

    def _delete(self, r: Request, token: Token, status_id: str):
        status = self._owned(token, status_id)
        if not isinstance(status, Status):
            return status
        self.deleted[status_id] = self.statuses.pop(status_id)
        return json_answer(200, {**self._shown(status), "text": status.text})

    def _source(self, r: Request, token: Token, status_id: str):
        status = self.statuses.get(status_id)
        if status is None:
            return _error(404, "Record not found")
        return json_answer(200, {"id": status.id, "text": status.text, "spoiler_text": ""})

    def _account_statuses(self, r: Request, token: Token, account_id: str):
        limit = min(int(r.query.get("limit", 20)), 40)
        mine = sorted((s for s in self.statuses.values() if s.account_id == account_id), key=lambda s: int(s.id))
        return json_answer(200, [self._shown(status) for status in reversed(mine)][:limit])

    def _upload(self, r: Request, token: Token):
        content_type = r.headers.get("Content-Type", "")
        if not content_type.startswith("multipart/form-data"):
            return _error(422, "Validation failed: File can't be blank")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + r.raw
        )
        parts = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
        if "file" not in parts:
            return _error(422, "Validation failed: File can't be blank")
        data = parts["file"].get_payload(decode=True)
        if not data.startswith(IMAGE_SIGNATURES):
            return _error(422, "Validation failed: File content type is invalid")
        description = parts["description"].get_content().strip() if "description" in parts else ""
        if len(description) > 1500:
            return _error(422, "Validation failed: Description is too long (maximum is 1500 characters)")
        medium = Medium(
            str(next(self._ids)),
            token.account.id,
            data,
            parts["file"].get_content_type(),
            description,
            self.media_polls,
        )
        self.media[medium.id] = medium
        if medium.polls_left:
            return json_answer(202, self._medium_shown(medium))
        medium.url = f"{self.url}/system/media/{medium.id}.png"
        return json_answer(200, self._medium_shown(medium))

    def _medium_shown(self, medium: Medium) -> dict:
        return {"id": medium.id, "type": "image", "url": medium.url, "description": medium.description or None}

    def _medium(self, r: Request, token: Token, media_id: str):
        medium = self.media.get(media_id)
        if medium is None or medium.account_id != token.account.id:
            return _error(404, "Record not found")
        if medium.polls_left:
            medium.polls_left -= 1
            return json_answer(206, self._medium_shown(medium))
        medium.url = medium.url or f"{self.url}/system/media/{medium.id}.png"
        return json_answer(200, self._medium_shown(medium))


@pytest.fixture
def mastodon(settings):
    """A started FakeMastodon, the Mastodon destination allowed to dial it (on 127.0.0.1)."""
    settings.MASTODON_ALLOW_LOCAL_INSTANCES = True
    with FakeMastodon() as fake:
        yield fake


def connected_channel(fake: FakeMastodon, **fields):
    """A Mastodon channel (made with `fields`) connected to the fake's account @ada."""
    token = fake.issue_token()
    client_id = next(client_id for client_id, app in fake.apps.items() if app["name"] == "tests")
    app, _created = MastodonApp.objects.get_or_create(
        base_url=fake.url,
        defaults={
            "client_id": client_id,
            "client_secret_encrypted": crypto.encrypt(fake.apps[client_id]["client_secret"]),
            "redirect_uri": "urn:ietf:wg:oauth:2.0:oob",
            "scopes": SCOPES,
        },
    )
    channel = ChannelFactory(platform="mastodon", **fields)
    connection_save(channel=channel, app=app, token=token, connected_by="tests")
    return channel


@pytest.fixture
def mastodon_channel(db, mastodon):
    """A Mastodon channel connected to the fake's account @ada."""
    return connected_channel(mastodon)
