"""A recorded answer (config/server/recording.py writes them, fast_reads.py gives them): which
requests have one and under what key, and how it is written.

Why it exists: the recorder runs with Django, the fast path before it; both must name and read a
recorded answer alike, and the fast path must not import Django to do so.
"""

import hashlib
import re

# What a recorded answer's fields are, in order, each on a line; then the status and the headers.
# `head`: the first line of the stored representation it answers with (the API's ETag, a page's
# headers), which the fast path finds there before it answers; `head_lines`: the lines before its body.
FIELDS = ("expires", "touch_due", "limit", "counter", "representation", "head", "depends_on", "account", "head_lines")
# Header values replaced with the request's own (recording.py puts them there).
REQUEST_ID, REMAINING, RESET = b"\x00request-id", b"\x00remaining", b"\x00reset"
# The request header that is not part of what a recorded answer is for: each request's own.
NOT_KEYED = frozenset({b"x-request-id"})
# Requests a body could come with, or that Django would read otherwise, are never answered here.
NEVER = frozenset({b"content-length", b"transfer-encoding", b"expect"})
# Paths answered here are plain: no escapes that Django would read differently from bytes. The API's
# have no dots either; a public page's may (feed.xml), but never a dot segment.
PLAIN_PATH = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_-")
PLAIN_PAGE_PATH = PLAIN_PATH | frozenset(b".")
# The API's paths (/v1/...); any other is a public page's (a blog on its own domain has its posts at
# the root: /very-good-news/ is one).
API = re.compile(rb"/v[0-9]+/")
# What a public page's key has after the namespace (fast_reads.FastReads.to_record tells them apart).
PAGES = "p"
# A request that brings a session (a signed-in editor) or a credential is never a public page's reader.
PERSONAL = frozenset({b"cookie", b"authorization"})


def answer_key(namespace: str, scope: dict, scheme: str) -> str | None:
    """The key of the recorded answer to this request, or None when it is never answered here: not
    a GET; under /v<N>/, without an Authorization header; elsewhere (a public page), with a cookie or
    an Authorization header; a path that is not plain; a header that could bring a body. Which of
    the others have an answer is for Django to say (recording.py records only what it notes)."""
    if scope["method"] != "GET":
        return None
    raw_path = scope.get("raw_path") or scope["path"].encode()
    api = API.match(raw_path) is not None
    if not (PLAIN_PATH if api else PLAIN_PAGE_PATH).issuperset(raw_path) or b"/." in raw_path:
        return None
    digest = hashlib.sha256(b"\x00".join((namespace.encode(), scheme.encode(), raw_path, scope["query_string"])))
    authorized = personal = False
    for name, value in scope["headers"]:
        if name in NEVER:
            return None
        if name in NOT_KEYED:
            continue
        authorized = authorized or name == b"authorization"
        personal = personal or name in PERSONAL
        digest.update(b"\x00%s:%s" % (name, value))
    if api:
        return f"{namespace}:{digest.hexdigest()}" if authorized else None
    return None if personal else f"{namespace}:{PAGES}:{digest.hexdigest()}"


def parse(entry: bytes) -> tuple[dict, int, list[tuple[bytes, bytes]]]:
    """A recorded answer's fields, status and headers."""
    lines = entry.split(b"\n")
    fields = dict(zip(FIELDS, lines, strict=False))
    status = int(lines[len(FIELDS)])
    headers = [tuple(line.split(b": ", 1)) for line in lines[len(FIELDS) + 1 :]]
    return fields, status, headers


def entry_of(fields: dict, status: int, head: list[bytes]) -> bytes:
    """A recorded answer as the fast path reads it (`parse`): its FIELDS, its status, its headers."""
    lines = [fields[name].encode("latin-1") for name in FIELDS]
    return b"\n".join([*lines, str(status).encode(), *head])


def sha1(value: bytes) -> str:
    """What Redis's Lua `redis.sha1hex` gives: the fast path compares entries to this, not a secret."""
    return hashlib.sha1(value).hexdigest()  # noqa: S324


def recorded_headers(headers: list, budget) -> list[bytes] | None:
    """The answer's headers, the request's own values in their places; None when one of them is not
    what this request's budget says (`budget`: None for a request no limit counts, a page's: then
    it has no rate-limit header), or when the answer sets a cookie (a session's: not a cached read)."""
    own = {b"x-request-id": None}
    if budget is not None:
        own |= {b"x-ratelimit-remaining": budget.remaining, b"x-ratelimit-reset": budget.reset}
    placeholder = {b"x-request-id": REQUEST_ID, b"x-ratelimit-remaining": REMAINING, b"x-ratelimit-reset": RESET}
    lines = []
    for name, value in headers:
        if name == b"set-cookie" or b"\n" in value:
            return None
        if name in own:
            if own[name] is not None and value != str(own[name]).encode():
                return None
            value = placeholder[name]
        lines.append(b"%s: %s" % (name, value))
    return lines
