"""Local fakes of Bluesky for the tests, on 127.0.0.1 (tests/fake_api.py): the identity side (a handle
resolver and the PLC directory of DID documents) and an account's server (PDS) with the XRPC
endpoints the destination uses. The PDS checks what the real one requires (the session's tokens,
the repository and collection, the record's text limits counted as Bluesky counts them, facets
within the text's UTF-8 bytes, blobs it has) and answers failures with XRPC's error bodies
(`{"error": ..., "message": ...}`): an existing record key, an expired access token, a revoked
app password, rate limits (RateLimit-Reset)."""

import hashlib
import itertools
import re
import secrets
from datetime import datetime

import pytest
import regex

from tests.fake_api import DROP, FakeApi, Request, Rule, json_answer

HANDLE = "ada.test"
DID = "did:plc:abcdefghijklmnopqrstuvwx"
APP_PASSWORD = "abcd-efgh-ijkl-mnop"
POST = "app.bsky.feed.post"
TID = re.compile(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}")
ERROR_NAMES = {
    400: "InvalidRequest",
    401: "AuthenticationRequired",
    429: "RateLimitExceeded",
    500: "InternalServerError",
    502: "UpstreamFailure",
    503: "NotEnoughResources",
}


def xrpc_error(status: int, error: str, message: str, headers=()) -> tuple:
    return json_answer(status, {"error": error, "message": message}, headers)


def grapheme_count(text: str) -> int:
    return len(regex.findall(r"\X", text))


class FakeDirectory(FakeApi):
    """resolveHandle and the PLC directory (GET /<did>): `handles` (handle -> DID), `documents` (DID -> document)."""

    def __init__(self) -> None:
        super().__init__()
        self.handles: dict[str, str] = {}
        self.documents: dict[str, dict] = {}

    def add(self, handle: str, did: str, pds_url: str) -> None:
        with self._lock:
            self.handles[handle] = did
            self.documents[did] = {
                "@context": ["https://www.w3.org/ns/did/v1"],
                "id": did,
                "alsoKnownAs": [f"at://{handle}"],
                "service": [{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": pds_url}],
            }

    def _route(self, r: Request):
        if r.path == "/xrpc/com.atproto.identity.resolveHandle" and r.method == "GET":
            did = self.handles.get(r.query.get("handle", ""))
            if did is None:
                return xrpc_error(400, "InvalidRequest", "Unable to resolve handle")
            return json_answer(200, {"did": did})
        document = self.documents.get(r.path.lstrip("/"))
        if r.method == "GET" and document is not None:
            return json_answer(200, document)
        return json_answer(404, {"message": f"DID not registered: {r.path.lstrip('/')}"})


class FakePds(FakeApi):
    """An account's server. Public state: `accounts` (DID -> {"handle", "passwords"}), `records`
    ((DID, rkey) -> record), `deleted` (the keys deleted), `blobs` (CID -> bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.accounts = {DID: {"handle": HANDLE, "passwords": {APP_PASSWORD}}}
        self.records: dict[tuple[str, str], dict] = {}
        self.deleted: list[tuple[str, str]] = []
        self.blobs: dict[str, bytes] = {}
        self._access: dict[str, dict] = {}
        self._refresh: dict[str, dict] = {}
        self._drops = 0
        self._counter = itertools.count(1)

    # -- test controls ------------------------------------------------------------------------------
    def revoke(self, password: str = APP_PASSWORD) -> None:
        """The app password revoked on Bluesky: it signs in no more, and its sessions end."""
        with self._lock:
            for account in self.accounts.values():
                account["passwords"].discard(password)
            for tokens in (self._access, self._refresh):
                for session in tokens.values():
                    if session["password"] == password:
                        session["revoked"] = True

    def expire_access(self) -> None:
        with self._lock:
            for session in self._access.values():
                session["expired"] = True

    def expire_refresh(self) -> None:
        with self._lock:
            for session in self._refresh.values():
                session["expired"] = True

    def drop_after_create(self, times: int = 1) -> None:
        """The next `times` createRecord calls store the record, then close the connection unanswered."""
        with self._lock:
            self._drops += times

    def posts(self, did: str = DID) -> dict[str, dict]:
        with self._lock:
            return {rkey: value for (owner, rkey), value in self.records.items() if owner == did}

    # -- serving ------------------------------------------------------------------------------------
    def _injected(self, rule: Rule) -> tuple:
        error = ERROR_NAMES.get(rule.status, "UnknownError")
        return xrpc_error(rule.status, error, rule.message or error, list(rule.headers.items()))

    def _route(self, r: Request):
        nsid = r.path.removeprefix("/xrpc/")
        routes = {
            "com.atproto.server.createSession": ("POST", self._create_session, False),
            "com.atproto.server.refreshSession": ("POST", self._refresh_session, False),
            "com.atproto.repo.createRecord": ("POST", self._create_record, True),
            "com.atproto.repo.getRecord": ("GET", self._get_record, True),
            "com.atproto.repo.deleteRecord": ("POST", self._delete_record, True),
            "com.atproto.repo.uploadBlob": ("POST", self._upload_blob, True),
            "com.atproto.repo.describeRepo": ("GET", self._describe, True),
        }
        if nsid not in routes:
            return xrpc_error(501, "MethodNotImplemented", f"Method Not Implemented: {nsid}")
        method, view, authenticated = routes[nsid]
        if r.method != method:
            return xrpc_error(400, "InvalidRequest", f"Incorrect HTTP method ({r.method}) expected {method}")
        if not authenticated:
            return view(r)
        session = self._session(r, self._access)
        return view(r, session) if isinstance(session, dict) else session

    def _session(self, r: Request, tokens: dict):
        scheme, _, token = r.headers.get("Authorization", "").partition(" ")
        session = tokens.get(token) if scheme == "Bearer" else None
        if session is None or session["revoked"]:
            return xrpc_error(401, "InvalidToken", "Token could not be verified")
        if session["expired"]:
            return xrpc_error(400, "ExpiredToken", "Token has expired")
        return session

    def _new_session(self, did: str, password: str) -> tuple:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self._access[access] = {"did": did, "password": password, "revoked": False, "expired": False}
        self._refresh[refresh] = {"did": did, "password": password, "revoked": False, "expired": False}
        handle = self.accounts[did]["handle"]
        return json_answer(200, {"accessJwt": access, "refreshJwt": refresh, "did": did, "handle": handle})

    def _create_session(self, r: Request):
        body = r.body if isinstance(r.body, dict) else {}
        identifier, password = body.get("identifier"), body.get("password")
        if not isinstance(identifier, str) or not isinstance(password, str):
            return xrpc_error(400, "InvalidRequest", "Input must have the properties identifier and password")
        did = next((d for d, a in self.accounts.items() if identifier in (d, a["handle"])), None)
        if did is None or password not in self.accounts[did]["passwords"]:
            return xrpc_error(401, "AuthenticationRequired", "Invalid identifier or password")
        return self._new_session(did, password)

    def _refresh_session(self, r: Request):
        session = self._session(r, self._refresh)
        if not isinstance(session, dict):
            return session
        _scheme, _, token = r.headers["Authorization"].partition(" ")
        del self._refresh[token]  # a refresh token is used once
        return self._new_session(session["did"], session["password"])

    def _create_record(self, r: Request, session: dict):
        body = r.body if isinstance(r.body, dict) else {}
        if body.get("repo") not in (session["did"], self.accounts[session["did"]]["handle"]):
            return xrpc_error(400, "InvalidRequest", "Invalid repo: not the session's account")
        if body.get("collection") != POST:
            return xrpc_error(400, "InvalidRequest", f"Invalid collection {body.get('collection')!r}")
        rkey = body.get("rkey")
        if not isinstance(rkey, str) or not TID.fullmatch(rkey):
            return xrpc_error(400, "InvalidRequest", "Invalid record key: not a TID")
        if (session["did"], rkey) in self.records:
            return xrpc_error(400, "InvalidRequest", f"Record already exists at {rkey}")
        problem = self._invalid_post(body.get("record"))
        if problem:
            return xrpc_error(400, "InvalidRecord", problem)
        self.records[(session["did"], rkey)] = body["record"]
        uri = f"at://{session['did']}/{POST}/{rkey}"
        if self._drops:
            self._drops -= 1
            return DROP
        return json_answer(200, {"uri": uri, "cid": f"bafyrei{next(self._counter):040d}"})

    def _invalid_post(self, record) -> str:
        if not isinstance(record, dict) or record.get("$type") != POST:
            return "Record/$type must be app.bsky.feed.post"
        text = record.get("text")
        if not isinstance(text, str):
            return 'Record must have the property "text"'
        if grapheme_count(text) > 300 or len(text.encode()) > 3000:
            return "Record/text must not be longer than 300 graphemes"
        try:
            datetime.fromisoformat(record.get("createdAt", ""))
        except (TypeError, ValueError):
            return "Record/createdAt must be an valid atproto datetime"
        size = len(text.encode())
        for facet in record.get("facets") or []:
            index = facet.get("index", {})
            start, end = index.get("byteStart"), index.get("byteEnd")
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= size):
                return "Record/facets: byte range outside the text"
        return self._invalid_embed(record.get("embed"))

    def _invalid_embed(self, embed) -> str:
        if embed is None:
            return ""
        blobs = []
        if embed.get("$type") == "app.bsky.embed.external":
            card = embed.get("external") or {}
            if not all(isinstance(card.get(key), str) for key in ("uri", "title", "description")):
                return "Record/embed/external must have uri, title and description"
            blobs = [card["thumb"]] if "thumb" in card else []
        elif embed.get("$type") == "app.bsky.embed.images":
            if not 1 <= len(embed.get("images") or []) <= 4:
                return "Record/embed/images must have 1 to 4 images"
            blobs = [image.get("image") for image in embed["images"]]
        else:
            return f"Record/embed: unknown type {embed.get('$type')!r}"
        for blob in blobs:
            cid = ((blob or {}).get("ref") or {}).get("$link")
            if cid not in self.blobs:
                return f"Could not find blob: {cid}"
        return ""

    def _get_record(self, r: Request, session: dict):
        value = self.records.get((r.query.get("repo"), r.query.get("rkey")))
        if value is None or r.query.get("collection") != POST:
            return xrpc_error(400, "RecordNotFound", f"Could not locate record: {r.query.get('rkey')}")
        uri = f"at://{r.query['repo']}/{POST}/{r.query['rkey']}"
        return json_answer(200, {"uri": uri, "cid": "bafyreiexisting", "value": value})

    def _delete_record(self, r: Request, session: dict):
        body = r.body if isinstance(r.body, dict) else {}
        if body.get("repo") != session["did"] or body.get("collection") != POST:
            return xrpc_error(400, "InvalidRequest", "Invalid repo or collection")
        key = (session["did"], body.get("rkey"))
        if self.records.pop(key, None) is not None:
            self.deleted.append(key)
        return json_answer(200, {})

    def _upload_blob(self, r: Request, session: dict):
        if len(r.raw) > 1_000_000:
            return xrpc_error(
                400, "BlobTooLarge", "This file is too large. It is 1.2MB but the maximum size is 976.56KB."
            )
        mime_type = r.headers.get("Content-Type", "")
        if not mime_type.startswith("image/"):
            return xrpc_error(400, "InvalidRequest", f"Unsupported blob type {mime_type!r}")
        cid = "bafkrei" + hashlib.sha256(r.raw).hexdigest()[:40]
        self.blobs[cid] = r.raw
        return json_answer(
            200, {"blob": {"$type": "blob", "ref": {"$link": cid}, "mimeType": mime_type, "size": len(r.raw)}}
        )

    def _describe(self, r: Request, session: dict):
        did = r.query.get("repo")
        if did not in self.accounts:
            return xrpc_error(400, "InvalidRequest", f"Could not find repo: {did}")
        return json_answer(200, {"did": did, "handle": self.accounts[did]["handle"], "collections": [POST]})


@pytest.fixture
def bluesky(settings):
    """A fake PDS (`bluesky`) with Ada's account, and its directory (`bluesky.directory`), with the
    BLUESKY_* settings pointing at them and local servers allowed."""
    with FakePds() as pds, FakeDirectory() as directory:
        directory.add(HANDLE, DID, pds.url)
        pds.directory = directory
        settings.BLUESKY_RESOLVER_URL = settings.BLUESKY_DIRECTORY_URL = directory.url
        settings.BLUESKY_ALLOW_LOCAL_SERVERS = True
        yield pds


@pytest.fixture
def bluesky_channel(db, bluesky):
    """A Bluesky channel connected as @ada.test through the directory."""
    from apps.publishing.bluesky.services import connection_save
    from tests.factories import ChannelFactory

    channel = ChannelFactory(platform="bluesky")
    connection_save(channel=channel, handle=HANDLE, app_password=APP_PASSWORD, connected_by="tests")
    return channel
