"""A recorded answer (config/server/recording.py writes them, fast_reads.py gives them): which
requests have one and under what key, and how it is written.

Why it exists: the recorder runs with Django, the fast path before it; both must name and read a
recorded answer alike, and the fast path must not import Django to do so.
"""

import hashlib

# What a recorded answer's fields are, in order, each on a line; then the status and the headers.
FIELDS = ("expires", "touch_due", "limit", "counter", "representation", "etag", "depends_on", "account")
# Header values replaced with the request's own (recording.py puts them there).
REQUEST_ID, REMAINING, RESET = b"\x00request-id", b"\x00remaining", b"\x00reset"
# The request header that is not part of what a recorded answer is for: each request's own.
NOT_KEYED = frozenset({b"x-request-id"})
# Requests a body could come with, or that Django would read otherwise, are never answered here.
NEVER = frozenset({b"content-length", b"transfer-encoding", b"expect"})
# Paths answered here are plain: no escapes or dots that Django would read differently from bytes.
PLAIN_PATH = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_-")


def answer_key(namespace: str, scope: dict, scheme: str) -> str | None:
    """The key of the recorded answer to this request, or None when it is never answered here: not
    a GET under /v<N>/ with an Authorization header, a path that is not plain, a header that could
    bring a body."""
    if scope["method"] != "GET":
        return None
    raw_path = scope.get("raw_path") or scope["path"].encode()
    if not raw_path.startswith(b"/v") or not PLAIN_PATH.issuperset(raw_path):
        return None
    digest = hashlib.sha256(b"\x00".join((namespace.encode(), scheme.encode(), raw_path, scope["query_string"])))
    authorized = False
    for name, value in scope["headers"]:
        if name in NEVER:
            return None
        if name in NOT_KEYED:
            continue
        authorized = authorized or name == b"authorization"
        digest.update(b"\x00%s:%s" % (name, value))
    return f"{namespace}:{digest.hexdigest()}" if authorized else None


def parse(entry: bytes) -> tuple[dict, int, list[tuple[bytes, bytes]]]:
    """A recorded answer's fields, status and headers."""
    lines = entry.split(b"\n")
    fields = dict(zip(FIELDS, lines, strict=False))
    status = int(lines[len(FIELDS)])
    headers = [tuple(line.split(b": ", 1)) for line in lines[len(FIELDS) + 1 :]]
    return fields, status, headers
