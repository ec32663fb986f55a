"""What Django answered from the blog's page cache (apps/blog/pages.py), recorded for the fast path
(config/server/fast_reads.py). Why it exists: a page depends on other things than an API read (no
key, no limit, no expiry; the entry its blog was found by and the stored page's headers), and
recording.py, which records both, would otherwise say both at length.

A page's answer is recorded only when the entry its blog was found by (`rows:h:<handle>`, or
`rows:d:<domain>` on its own domain) still holds the very channel the page was read under, and is
given again while that entry's bytes and the stored page's first line (its headers: ETag,
Last-Modified, ...) stand. Every change of what a blog shows gives its channel a new version, which
deletes the entry (channels 0007); a page stored again (expired, evicted) has another Last-Modified.
"""

from apps.api import representations
from apps.blog.pages import Served
from config.server.answers import entry_of, recorded_headers, sha1

# A page has no expiry or due write of its own: "never" to the fast path's clock.
NEVER = "1e300"


def recorded_page(served: Served, headers: list) -> bytes | None:
    """The recorded answer of a page read from the cache, or None when it is not certain: the
    channel's entry no longer holds the channel the page was read under, the answer sets a cookie,
    or the answer says what differs from request to request (Vary: a session was read)."""
    head = recorded_headers(headers, None)
    representation = representations.store.redis_key(served.key)
    if head is None or representation is None or b"\n" in served.head:
        return None
    # No page is counted by a limit: a rate-limit header would be another request's figure.
    if any(name == b"vary" or name.startswith(b"x-ratelimit") for name, _ in headers):
        return None
    found = served.channel_entry()
    if found is None:
        return None
    fields = {
        "expires": NEVER,
        "touch_due": NEVER,
        "limit": "",
        "counter": "",
        "representation": representation,
        "head": served.head.decode("latin-1"),
        "depends_on": f"{found.key} {sha1(found.raw)}",
        "account": "",
        # The stored page: its headers (JSON), then its body.
        "head_lines": "1",
    }
    return entry_of(fields, 200, head)
