"""A local fake of LinkedIn's OAuth 2.0 endpoints and the REST endpoints the LinkedIn destination
uses (userinfo, organizationAcls, organizations, images, posts), on 127.0.0.1 in a daemon thread. It checks
every header and body field the real API requires and answers as LinkedIn does, so a client that
passes here sends what LinkedIn takes. Failures can be injected: error answers, slow answers, and a
post made whose answer never arrives."""

import itertools
import json
import re
import secrets
import time
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import unquote

import pytest

from tests.fake_api import DROP, FakeApi, Request, Rule, basic, empty, json_answer, page, redirect

DEFAULT_SCOPE = "openid profile email w_member_social w_organization_social r_organization_admin"
KNOWN_SCOPES = set(DEFAULT_SCOPE.split()) | {"rw_organization_admin", "r_organization_social"}
MAIN_FEED = {"feedDistribution": "MAIN_FEED", "targetEntities": [], "thirdPartyDistributionChannels": []}
REQUIRED_POST_FIELDS = ("author", "commentary", "visibility", "distribution", "lifecycleState")
_OPTIONAL_POST_FIELDS = ("isReshareDisabledByAuthor", "content", "contentLandingPage", "contentCallToActionLabel")
POST_FIELDS = {*REQUIRED_POST_FIELDS, *_OPTIONAL_POST_FIELDS, "container", "reshareContext"}
COMMENTARY_LIMIT = 3000
ALT_TEXT_LIMIT = 4086
# What the Images API takes, by the bytes' signature (LinkedIn fails to process anything else).
IMAGE_SIGNATURES = {b"\x89PNG\r\n\x1a\n": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}
# Little Text Format: these characters mean markup unless escaped with a backslash; LinkedIn quietly
# cuts a post short at an unescaped one, which the fake turns into a 422 so a test notices. The
# elements it reads: a mention, a hashtag template, and a plain #word (letters and digits).
RESERVED = set("|{}@[]()<>#\\*_~")
_TEMPLATE = re.compile(r"@\[[^\]]*\]\(urn:li:(?:person|organization):[^)]+\)|\{hashtag\|\\#\|[^}]*\}|#[^\W_]+")


def little_text(commentary: str) -> str:
    """The text LinkedIn shows for `commentary`: escapes undone, templates kept as written. Raises
    ValueError at an unescaped reserved character."""
    shown, i = [], 0
    while i < len(commentary):
        if template := _TEMPLATE.match(commentary, i):
            shown.append(template.group())
            i = template.end()
        elif commentary[i] == "\\" and i + 1 < len(commentary):
            shown.append(commentary[i + 1])
            i += 2
        elif commentary[i] in RESERVED:
            raise ValueError(f"unescaped reserved character {commentary[i]!r} at position {i}")
        else:
            shown.append(commentary[i])
            i += 1
    return "".join(shown)


@dataclass
class _Token:
    sub: str
    scope: str
    expires_at: float
    revoked: bool = False


def _error(status: int, message: str, code: str | None = None, **extra) -> tuple:
    return json_answer(status, {"status": status, **extra, **({"code": code} if code else {}), "message": message})


def _oauth_error(status: int, error: str, description: str) -> tuple:
    return json_answer(status, {"error": error, "error_description": description})


def _unprocessable(message: str) -> tuple:
    return _error(422, message, "UNPROCESSABLE_ENTITY")


INVALID_TOKEN = dict(serviceErrorCode=65600, code="INVALID_ACCESS_TOKEN", message="Invalid access token")
REVOKED_TOKEN = dict(
    serviceErrorCode=65601,
    code="REVOKED_ACCESS_TOKEN",
    message="The token used in the request has been revoked by the user",
)


class FakeLinkedIn(FakeApi):
    """LinkedIn at `.url` (REST, userinfo) and `.auth_url` (OAuth). State is public for tests to read and
    arrange: `members`, `organizations` (sub -> URNs administered), `organization_names`, `posts`,
    `deleted_posts`, `requests` (every request, as a Request), `token_requests` (each token form),
    `images` (image URN -> {"owner", "data": the uploaded bytes or None, "type"}) and `uploads` (each
    PUT of an image's bytes, as (image URN, bytes))."""

    def __init__(self, version: str = "202610", client_id: str = "test-client", client_secret: str = "test-secret"):  # noqa: S107
        super().__init__()
        self.version, self.client_id, self.client_secret = version, client_id, client_secret
        self.members = {
            "abc123": {
                "sub": "abc123",
                "name": "Ada Lovelace",
                "given_name": "Ada",
                "family_name": "Lovelace",
                "email": "ada@example.com",
            }
        }
        self.organizations = {"abc123": ["urn:li:organization:2414183"]}
        self.organization_names = {"urn:li:organization:2414183": "Devtestco"}
        self.authorizing_sub = "abc123"
        self.deny_next_authorization = False
        self.give_refresh_tokens = True
        self.redirect_uris: list[str] | None = None  # None: any redirect URI is registered
        self.token_requests: list[dict] = []
        self.posts: dict[str, dict] = {}
        self.deleted_posts: dict[str, dict] = {}
        self.images: dict[str, dict] = {}
        self.uploads: list[tuple[str, bytes]] = []
        self._upload_ids: dict[str, str] = {}  # the upload address's id -> image URN
        self._codes: dict[str, dict] = {}
        self._tokens: dict[str, _Token] = {}
        self._refresh_tokens: dict[str, _Token] = {}
        self._drops = 0
        self._next_post = 7000000000000000001
        self._touched: dict[str, int] = {}  # urn -> order of the last change, for the finder's sort
        self._changes = itertools.count(1)

    # -- life cycle ---------------------------------------------------------------------------------
    @property
    def auth_url(self) -> str:
        return self.url + "/oauth/v2"

    # -- test controls ------------------------------------------------------------------------------
    def issue_token(
        self, sub: str = "abc123", expires_in: int = 5184000, refresh: bool = True, scope: str = DEFAULT_SCOPE
    ) -> dict:
        """A token response as after a consent, for tests that skip the browser flow."""
        with self._lock:
            if sub not in self.members:
                raise ValueError(f"no member {sub!r} in the fake")
            return self._token_response(sub, scope, expires_in, refresh)

    def revoke(self, access_token: str) -> None:
        with self._lock:
            self._tokens[access_token].revoked = True

    def expire(self, access_token: str) -> None:
        with self._lock:
            self._tokens[access_token].expires_at = 0

    def fail_next(
        self, status: int, *, method: str | None = "POST", path: str | None = "/rest/posts", **kwargs
    ) -> None:
        """As FakeApi.fail_next, by default for the next post made (POST /rest/posts)."""
        super().fail_next(status, method=method, path=path, **kwargs)

    def drop_after_create(self, times: int = 1) -> None:
        """The next `times` successful POST /rest/posts store the post, then close the connection unanswered."""
        with self._lock:
            self._drops += times

    # -- serving ------------------------------------------------------------------------------------
    def _injected(self, rule: Rule) -> tuple:
        extra = INVALID_TOKEN if rule.status == 401 else {}
        if rule.status == 426:
            extra = {"code": "NONEXISTENT_VERSION", "message": f"Requested version {self.version} is not active"}
        body = {"status": rule.status, **extra}
        if rule.message or "message" not in body:
            body["message"] = rule.message or HTTPStatus(rule.status).phrase
        return json_answer(rule.status, body, list(rule.headers.items()))

    def _route(self, r: Request):
        routes = {
            "/oauth/v2/authorization": ("GET", self._authorization),
            "/oauth/v2/accessToken": ("POST", self._access_token),
            "/v2/userinfo": ("GET", self._userinfo),
        }
        if r.path in routes:
            method, view = routes[r.path]
            return view(r) if r.method == method else _error(405, f"{r.method} is not allowed here")
        if r.path.startswith("/dms-uploads/"):
            return self._upload(r) if r.method == "PUT" else _error(405, f"{r.method} is not allowed here")
        if not r.path.startswith("/rest/"):
            return _error(404, f"No resource at {r.path}", "NOT_FOUND")
        if "LinkedIn-Version" not in r.headers:
            return _error(
                400,
                "A version must be present. Please specify a version by adding the LinkedIn-Version header.",
                "VERSION_MISSING",
            )
        if r.headers["LinkedIn-Version"] != self.version:
            return _error(
                426, f"Requested version {r.headers['LinkedIn-Version']} is not active", "NONEXISTENT_VERSION"
            )
        if r.headers.get("X-Restli-Protocol-Version") != "2.0.0":
            return _error(400, "X-Restli-Protocol-Version: 2.0.0 is required", "ILLEGAL_ARGUMENT")
        token = self._bearer(r)
        if not isinstance(token, _Token):
            return token
        if r.path == "/rest/organizationAcls" and r.method == "GET":
            return self._acls(r, token)
        if (found := re.fullmatch(r"/rest/organizations/(\d+)", r.path)) and r.method == "GET":
            return self._organization(found.group(1))
        if r.path == "/rest/images" and r.method == "POST":
            return self._initialize_upload(r, token)
        if r.path == "/rest/posts":
            return {"POST": self._create_post, "GET": self._find_posts}.get(r.method, _not_allowed)(r, token)
        if r.path.startswith("/rest/posts/") and r.method in ("POST", "DELETE"):
            segment = r.path.removeprefix("/rest/posts/")
            if ":" in segment:
                return _error(400, f"The URN in the path must be URL-encoded: {segment}", "ILLEGAL_ARGUMENT")
            view = self._update_post if r.method == "POST" else self._delete_post
            return view(r, token, unquote(segment))
        return _error(404, f"No resource at {r.method} {r.path}", "NOT_FOUND")

    # -- OAuth --------------------------------------------------------------------------------------
    def _authorization(self, r: Request):
        q = r.query
        if q.get("response_type") != "code":
            return page(400, "response_type must be code")
        if q.get("client_id") != self.client_id:
            return page(400, "The passed in client_id is invalid")
        redirect_uri, state = q.get("redirect_uri"), q.get("state")
        if not redirect_uri or (self.redirect_uris is not None and redirect_uri not in self.redirect_uris):
            return page(400, "The redirect_uri does not match the registered value")
        if not state:
            return page(400, "state is required")
        scopes = q.get("scope", "").split(" ")
        if "w_member_social" not in scopes:
            return page(400, "scope must contain w_member_social (space separated)")
        if unknown := [s for s in scopes if s not in KNOWN_SCOPES]:
            return redirect(
                redirect_uri,
                error="unauthorized_scope_error",
                state=state,
                error_description=f'Scope "{unknown[0]}" is not authorized for your application',
            )
        if self.deny_next_authorization:
            self.deny_next_authorization = False
            return redirect(
                redirect_uri,
                error="user_cancelled_authorize",
                state=state,
                error_description="The user cancelled the authorization",
            )
        code = "AQT" + secrets.token_urlsafe(24)
        self._codes[code] = {"redirect_uri": redirect_uri, "sub": self.authorizing_sub, "scope": " ".join(scopes)}
        return redirect(redirect_uri, code=code, state=state)

    def _access_token(self, r: Request):
        form = r.body if isinstance(r.body, dict) else {}
        self.token_requests.append(dict(form))
        if not r.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            return _oauth_error(400, "invalid_request", "The request must be application/x-www-form-urlencoded")
        client_id, secret = basic(r.headers) or (form.get("client_id"), form.get("client_secret"))
        if client_id != self.client_id or secret != self.client_secret:
            return _oauth_error(401, "invalid_client", "Client authentication failed")
        if form.get("grant_type") == "authorization_code":
            grant = self._codes.pop(form.get("code", ""), None)  # a code is gone once presented
            if grant is None:
                return _oauth_error(
                    400, "invalid_request", "Unable to retrieve access token: authorization code not found"
                )
            if form.get("redirect_uri") != grant["redirect_uri"]:
                return _oauth_error(
                    400,
                    "invalid_request",
                    "Unable to retrieve access token: appid/redirect uri/code "
                    "verifier does not match authorization code. Or authorization code expired.",
                )
            return json_answer(
                200,
                self._token_response(grant["sub"], grant["scope"], 5184000, self.give_refresh_tokens),
                [("Cache-Control", "no-store")],
            )
        if form.get("grant_type") == "refresh_token":
            refresh = self._refresh_tokens.get(form.get("refresh_token", ""))
            if refresh is None or refresh.revoked or refresh.expires_at <= time.time():
                return _oauth_error(400, "invalid_request", "The provided refresh token is invalid")
            answer = self._token_response(refresh.sub, refresh.scope, 5184000, refresh=False)
            answer["refresh_token"] = form["refresh_token"]
            answer["refresh_token_expires_in"] = int(refresh.expires_at - time.time())
            return json_answer(200, answer, [("Cache-Control", "no-store")])
        return _oauth_error(400, "unsupported_grant_type", f"grant_type {form.get('grant_type')!r} is not supported")

    def _token_response(self, sub: str, scope: str, expires_in: int, refresh: bool) -> dict:
        access = "AQV" + secrets.token_urlsafe(32)
        self._tokens[access] = _Token(sub, scope, time.time() + expires_in)
        # LinkedIn names the granted scopes comma separated in its answer (requested: space separated).
        answer = {"access_token": access, "expires_in": expires_in, "scope": ",".join(sorted(scope.split()))}
        if refresh:
            answer["refresh_token"] = "AQX" + secrets.token_urlsafe(32)
            answer["refresh_token_expires_in"] = 31536000
            self._refresh_tokens[answer["refresh_token"]] = _Token(sub, scope, time.time() + 31536000)
        return answer

    def _bearer(self, r: Request):
        scheme, _, value = r.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not value:
            return _error(401, "Empty oauth2 access token", "EMPTY_ACCESS_TOKEN", serviceErrorCode=65604)
        token = self._tokens.get(value)
        if token is not None and token.revoked:
            return json_answer(401, {"status": 401, **REVOKED_TOKEN})
        if token is None or token.expires_at <= time.time():
            return json_answer(401, {"status": 401, **INVALID_TOKEN})
        return token

    # -- REST ---------------------------------------------------------------------------------------
    def _userinfo(self, r: Request):
        token = self._bearer(r)
        if not isinstance(token, _Token):
            return token
        if not {"openid", "profile"} <= set(token.scope.split()):
            return _error(403, "Not enough permissions to access: userinfo.GET.NO_VERSION", "ACCESS_DENIED")
        member = dict(self.members[token.sub])
        if "email" in token.scope.split():
            member["email_verified"] = True
        else:
            member.pop("email", None)
        return json_answer(200, {**member, "locale": {"country": "US", "language": "en"}})

    def _acls(self, r: Request, token: _Token):
        if r.query.get("q") != "roleAssignee":
            return _error(400, "q=roleAssignee is the finder this fake knows", "ILLEGAL_ARGUMENT")
        elements = [
            {
                "organization": urn,
                "role": "ADMINISTRATOR",
                "state": "APPROVED",
                "roleAssignee": f"urn:li:person:{token.sub}",
            }
            for urn in self.organizations.get(token.sub, [])
        ]
        elements = [e for e in elements if r.query.get("role", e["role"]) == e["role"]]
        elements = [e for e in elements if r.query.get("state", e["state"]) == e["state"]]
        return json_answer(200, {"elements": elements, "paging": {"start": 0, "count": 10, "links": []}})

    def _organization(self, organization_id: str):
        name = self.organization_names.get(f"urn:li:organization:{organization_id}")
        if name is None:
            return _error(404, f"Organization {organization_id} not found", "NOT_FOUND")
        vanity = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        return json_answer(200, {"id": int(organization_id), "localizedName": name, "vanityName": vanity})

    def _authors(self, token: _Token) -> list[str]:
        return [f"urn:li:person:{token.sub}", *self.organizations.get(token.sub, [])]

    def _create_post(self, r: Request, token: _Token):
        if not r.headers.get("Content-Type", "").startswith("application/json"):
            return _error(415, "Content-Type must be application/json")
        body = r.body
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object", "ILLEGAL_ARGUMENT")
        if unknown := sorted(set(body) - POST_FIELDS):
            return _unprocessable(f"/{unknown[0]} :: unrecognized field found but not allowed")
        if missing := [name for name in REQUIRED_POST_FIELDS if name not in body]:
            return _unprocessable(f"/{missing[0]} :: field is required but not found and has no default value")
        problem = _commentary_problem(body["commentary"])
        if problem is None and body["visibility"] != "PUBLIC":
            problem = f'/visibility :: {json.dumps(body["visibility"])} must be "PUBLIC"'
        if problem is None and body["distribution"] != MAIN_FEED:
            problem = f"/distribution :: must be {json.dumps(MAIN_FEED)}"
        if problem is None and body["lifecycleState"] != "PUBLISHED":
            problem = f'/lifecycleState :: {json.dumps(body["lifecycleState"])} must be "PUBLISHED"'
        if problem is None and not isinstance(body.get("isReshareDisabledByAuthor", False), bool):
            problem = "/isReshareDisabledByAuthor :: not a boolean"
        if problem is None and "content" in body:
            problem = _content_problem(body["content"])
        if problem:
            return _unprocessable(problem)
        denied = self._denied(token, body["author"], "create post as author")
        if denied:
            return denied
        if missing_image := self._image_problem(body.get("content"), body["author"]):
            return _error(400, missing_image, "ILLEGAL_ARGUMENT")
        urn = f"urn:li:share:{self._next_post}"
        self._next_post += 1
        now = int(time.time() * 1000)
        self.posts[urn] = {
            "id": urn,
            "author": body["author"],
            "commentary": body["commentary"],
            "visibility": "PUBLIC",
            "lifecycleState": "PUBLISHED",
            "createdAt": now,
            "lastModifiedAt": now,
            "publishedAt": now,
            "distribution": body["distribution"],
            "isReshareDisabledByAuthor": body.get("isReshareDisabledByAuthor", False),
            **({"content": body["content"]} if "content" in body else {}),
        }
        self._touch(urn)
        if self._drops:
            self._drops -= 1
            return DROP
        return empty(201, [("x-restli-id", urn), ("x-linkedin-id", urn)])

    def _initialize_upload(self, r: Request, token: _Token):
        if r.query.get("action") != "initializeUpload":
            return _error(400, "POST /rest/images takes action=initializeUpload", "ILLEGAL_ARGUMENT")
        request = r.body.get("initializeUploadRequest") if isinstance(r.body, dict) else None
        if not isinstance(request, dict) or not isinstance(request.get("owner"), str):
            return _unprocessable("/initializeUploadRequest/owner :: field is required but not found")
        if denied := self._denied(token, request["owner"], "upload an image as owner"):
            return denied
        urn, upload_id = f"urn:li:image:D4E10AQ{secrets.token_urlsafe(12)}", secrets.token_urlsafe(16)
        self.images[urn] = {"owner": request["owner"], "data": None, "type": None}
        self._upload_ids[upload_id] = urn
        expires = int(time.time() * 1000) + 86400000
        upload_url = f"{self.url}/dms-uploads/{upload_id}/feedshare-uploadedImage/0?ca=vector_feedshare&sync=0"
        return json_answer(200, {"value": {"uploadUrlExpiresAt": expires, "uploadUrl": upload_url, "image": urn}})

    def _upload(self, r: Request):
        token = self._bearer(r)
        if not isinstance(token, _Token):
            return token
        urn = self._upload_ids.get(r.path.split("/")[2])
        if urn is None:
            return _error(404, "No upload at this address", "NOT_FOUND")
        kind = next((kind for sig, kind in IMAGE_SIGNATURES.items() if r.raw.startswith(sig)), None)
        if kind is None:
            return _error(400, "The uploaded file is not a JPEG, PNG or GIF image", "ILLEGAL_ARGUMENT")
        self.images[urn].update(data=r.raw, type=kind)
        self.uploads.append((urn, r.raw))
        return empty(201)

    def _image_problem(self, content, author) -> str | None:
        """Why LinkedIn refuses the images a post names (never uploaded, another owner's), or None."""
        content = content or {}
        entries = [content["media"]] if "media" in content else content.get("multiImage", {}).get("images", [])
        for urn in (entry["id"] for entry in entries):
            image = self.images.get(urn)
            if image is None or image["data"] is None:
                return f"/content :: image {urn} has not been uploaded"
            if image["owner"] != author:
                return f"/content :: image {urn} belongs to {image['owner']}, not to the post's author {author}"
        return None

    def _denied(self, token: _Token, author, action: str):
        if author not in self._authors(token):
            return _error(403, f"Not enough permissions to {action} {author}", "ACCESS_DENIED")
        needed = "w_organization_social" if str(author).startswith("urn:li:organization:") else "w_member_social"
        if needed not in token.scope.split():
            return _error(
                403, f"Not enough permissions to {action} {author}: the token lacks {needed}", "ACCESS_DENIED"
            )
        return None

    def _update_post(self, r: Request, token: _Token, urn: str):
        if r.headers.get("X-RestLi-Method", "").upper() != "PARTIAL_UPDATE":
            return _error(400, "A POST to a post needs X-RestLi-Method: PARTIAL_UPDATE", "ILLEGAL_ARGUMENT")
        if urn not in self.posts:
            return _error(404, f"Post {urn} not found", "NOT_FOUND")
        body = r.body
        if not isinstance(body, dict) or set(body) != {"patch"} or not isinstance(body["patch"], dict):
            return _error(400, 'The body must be {"patch": {"$set": {...}}}', "ILLEGAL_ARGUMENT")
        changes = body["patch"].get("$set", {})
        if set(body["patch"]) - {"$set"} or not isinstance(changes, dict) or set(changes) - {"commentary"}:
            return _unprocessable("/patch :: only $set of commentary is supported")
        if "commentary" in changes and (problem := _commentary_problem(changes["commentary"])):
            return _unprocessable(problem)
        if denied := self._denied(token, self.posts[urn]["author"], "update post of author"):
            return denied
        self.posts[urn].update(changes, lastModifiedAt=int(time.time() * 1000))
        self._touch(urn)
        return empty(204)

    def _delete_post(self, r: Request, token: _Token, urn: str):
        if urn not in self.posts:
            return _error(404, f"Post {urn} not found", "NOT_FOUND")
        if denied := self._denied(token, self.posts[urn]["author"], "delete post of author"):
            return denied
        self.deleted_posts[urn] = self.posts.pop(urn)
        return empty(204)

    def _find_posts(self, r: Request, token: _Token):
        if r.headers.get("X-RestLi-Method", "FINDER").upper() != "FINDER" or r.query.get("q") != "author":
            return _error(400, "GET /rest/posts is the author finder: q=author", "ILLEGAL_ARGUMENT")
        author = r.query.get("author")
        if not author:
            return _error(400, "author is required", "ILLEGAL_ARGUMENT")
        if any(k == "author" and ":" in v for k, _, v in (p.partition("=") for p in r.raw_query.split("&"))):
            return _error(400, f"The URN in the query must be URL-encoded: {author}", "ILLEGAL_ARGUMENT")
        try:
            count, start = min(int(r.query.get("count", 10)), 100), int(r.query.get("start", 0))
        except ValueError:
            return _error(400, "count and start must be integers", "ILLEGAL_ARGUMENT")
        if (sort := r.query.get("sortBy", "LAST_MODIFIED")) not in ("LAST_MODIFIED", "CREATED"):
            return _error(400, f"sortBy {sort} is not one of LAST_MODIFIED, CREATED", "ILLEGAL_ARGUMENT")
        if author not in self._authors(token):
            return _error(403, f"Not enough permissions to read posts of author {author}", "ACCESS_DENIED")
        key = self._touched.get if sort == "LAST_MODIFIED" else (lambda urn: int(urn.rsplit(":", 1)[1]))
        mine = sorted((urn for urn, post in self.posts.items() if post["author"] == author), key=key, reverse=True)
        elements = [dict(self.posts[urn]) for urn in mine[start : start + count]]
        return json_answer(200, {"elements": elements, "paging": {"start": start, "count": count, "links": []}})

    def _touch(self, urn: str) -> None:
        self._touched[urn] = next(self._changes)


def _not_allowed(r: Request, _token) -> tuple:
    return _error(405, f"{r.method} is not allowed on {r.path}")


def _commentary_problem(commentary) -> str | None:
    if not isinstance(commentary, str) or not commentary:
        return "/commentary :: must be a non-empty string"
    if len(commentary) > COMMENTARY_LIMIT:
        return f"/commentary :: length {len(commentary)} exceeds the maximum of {COMMENTARY_LIMIT} characters"
    try:
        little_text(commentary)
    except ValueError as error:
        return f"/commentary :: {error} (Little Text Format)"
    return None


def _content_problem(content) -> str | None:
    if not isinstance(content, dict) or len(content) != 1 or not isinstance(next(iter(content.values())), dict):
        return "/content :: one of article, media or multiImage, an object"
    if article := content.get("article"):
        if not str(article.get("source", "")).startswith(("http://", "https://")) or not article.get("title"):
            return "/content/article :: source (a URL) and title are required"
        return None
    if "media" in content:
        return _media_problem(content["media"], "/content/media")
    if "multiImage" not in content or set(content["multiImage"]) - {"images", "altText"}:
        return "/content :: the fake takes article, media or multiImage: {'multiImage': {'images': [...]}}"
    images = content["multiImage"].get("images")
    if not isinstance(images, list) or not 2 <= len(images) <= 20:
        return "/content/multiImage/images :: from 2 to 20 images"
    problems = (_media_problem(image, f"/content/multiImage/images/{n}") for n, image in enumerate(images))
    return next(filter(None, problems), None)


def _media_problem(media, where: str) -> str | None:
    if not isinstance(media, dict) or set(media) - {"id", "altText", "title"}:
        return f"{where} :: an object of id, altText and title"
    if not str(media.get("id", "")).startswith("urn:li:image:"):
        return f"{where}/id :: an image URN (urn:li:image:...) is required"
    alt_text = media.get("altText", "")
    if not isinstance(alt_text, str) or len(alt_text) > ALT_TEXT_LIMIT:
        return f"{where}/altText :: a string of at most {ALT_TEXT_LIMIT} characters"
    return None


@pytest.fixture
def linkedin():
    """A started FakeLinkedIn; point settings.LINKEDIN_API_URL / LINKEDIN_AUTH_URL at .url / .auth_url."""
    with FakeLinkedIn() as fake:
        yield fake
