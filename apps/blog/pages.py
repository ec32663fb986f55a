"""Rendered public pages, kept in the default cache under their channel's version.

The API's rule holds here (apps/api/representations.py): every change of what a blog shows (a post,
its tags or media, the channel's settings) gives the channel a new version in the transaction of
the change, whatever wrote it. A request reads the channel (its version with it: from Redis, where the
database's own notifications delete it at every change, see apps/core/coherence.py), then looks for
the page stored under that version; a miss renders the page and stores it under the version read
before any post was. So an edit, an unpublish or a delete shows at the very next request, and a
page costs two cache reads and no query while nothing changed.

Each entry keeps the headers its page needs (ETag, Last-Modified: when it was rendered, the
Content-Security-Policy, which names the hash of the page's one inline style, and the page's own
Referrer-Policy, which SecurityMiddleware would otherwise replace with its default). The key holds a
digest of the code, templates and settings that shape the bytes, so a deploy never serves old ones.

A page answered from the cache is noted on the request (`Served`): the web process records the
answer and gives it again before Django while the channel's entry and the stored page stand
(config/server/recording.py, fast_reads.py).
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

import orjson
from django.conf import settings
from django.http import HttpResponse
from django.template import engines
from django.template.utils import get_app_template_dirs
from django.templatetags.static import static
from django.utils.cache import get_conditional_response, patch_cache_control, set_response_etag
from django.utils.http import http_date, parse_http_date_safe

from apps.api.representations import RepresentationStore
from apps.blog.site import channel_entry, found_by_domain
from apps.core.coherence import Stored
from apps.core.source import source_digest

STATIC = ("blog/theme.css", "blog/icon.svg")
STORED_HEADERS = ("ETag", "Last-Modified", "Content-Security-Policy", "Referrer-Policy", "Content-Type")


def template_files() -> list[Path]:
    """Every file under blog/ of every template folder: the defaults and the operator's overrides."""
    folders = [*engines["django"].engine.dirs, *get_app_template_dirs("templates")]
    return sorted(path for folder in folders for path in Path(folder, "blog").rglob("*") if path.is_file())


@cache
def code_digest() -> str:
    """Changes with the code (apps.core.source), the templates, the static files' names and the
    settings that shape the pages' bytes."""
    digest = hashlib.sha256(source_digest().encode())
    for path in template_files():
        digest.update(path.read_bytes())
    shaping = (
        [static(name) for name in STATIC],
        settings.SITE_URL,
        settings.BLOG_DOMAIN_SCHEME,
        settings.BLOG_PAGE_SIZE,
        settings.BLOG_FEED_SIZE,
    )
    digest.update(repr(shaping).encode())
    return digest.hexdigest()[:16]


class PageStore(RepresentationStore):
    """Rendered pages as `headers (JSON) \\n body` bytes."""

    outage = "Page cache unreachable; rendering every page"

    def page_key(self, channel, resource: str) -> str:
        resource_digest = hashlib.sha256(resource.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return f"{self.namespace}:{code_digest()}:{channel.pk}:{channel.version}:{resource_digest}"

    def get(self, key: str) -> HttpResponse | None:
        found = self.read(key)
        return None if found is None else HttpResponse(found[1], headers=orjson.loads(found[0]))

    def read(self, key: str) -> tuple[bytes, bytes] | None:
        """The stored page's headers line and body."""
        value = self._call(self._read, key, now=time.monotonic())
        if not value:
            return None
        head, body = value.split(b"\n", 1)
        return head, body

    def put(self, key: str, response) -> None:
        headers = {name: response[name] for name in STORED_HEADERS if name in response}
        self._call(self._write, key, orjson.dumps(headers) + b"\n" + response.content, now=time.monotonic())


store = PageStore(namespace="page")


def public_cache_control(response) -> HttpResponse:
    """Anyone may keep it, but must ask again before using it (a 304 while it stands); a CDN may
    serve it for BLOG_CDN_MAX_AGE seconds without asking."""
    patch_cache_control(response, public=True, max_age=0, must_revalidate=True)
    if settings.BLOG_CDN_MAX_AGE:
        patch_cache_control(response, s_maxage=settings.BLOG_CDN_MAX_AGE)
    return response


# The request's note of the stored page it was answered with (in its WSGI environ, which the web
# process reads once Django answered: config/server/recording.py records what its fast path may answer).
ANSWERED_FROM = "cps.page"


@dataclass(frozen=True)
class Served:
    """What a page answered from the cache was made of: the stored page (its key and its headers
    line) and the shared cache's entry of its channel, as `channel_entry()` finds it now (None when
    it no longer holds the channel the page was read under)."""

    key: str
    head: bytes
    channel_entry: Callable[[], Stored | None]


def serve(request, channel, resource: str, render: Callable[[], HttpResponse]) -> HttpResponse:
    """The page named `resource` (its path and the parameters it reads) of `channel`, read with
    its version: from the cache, or rendered by `render()` and stored when it is a 200; a 304 when
    the request's validators match it. A page read from the cache is noted on the request."""
    if not settings.API_CACHE_SECONDS:
        return _conditional(request, public_cache_control(_validated(render())))
    key = store.page_key(channel, resource)
    found = store.read(key)
    if found is not None:
        head, body = found
        response = HttpResponse(body, headers=orjson.loads(head))
        entry = partial(channel_entry, channel, domain=found_by_domain(request))
        request.META[ANSWERED_FROM] = Served(key, head, entry)
    else:
        response = _validated(render())
        if response.status_code == 200:
            store.put(key, response)
    return _conditional(request, public_cache_control(response))


# A browser lays a 304's headers over those it kept with the page; Django's 304 keeps only the
# validators and Cache-Control, and the middleware would then add the site's defaults (a data
# response's CSP, the admin's referrer policy) in place of the page's own.
KEPT_ON_304 = ("Content-Security-Policy", "Referrer-Policy")


def _conditional(request, response: HttpResponse) -> HttpResponse:
    if response.status_code != 200:
        return response
    last_modified = parse_http_date_safe(response["Last-Modified"])
    answer = get_conditional_response(request, etag=response["ETag"], last_modified=last_modified, response=response)
    if answer is not response:
        for name in KEPT_ON_304:
            if name in response:
                answer[name] = response[name]
    return answer


def _validated(response: HttpResponse) -> HttpResponse:
    if response.status_code == 200:
        set_response_etag(response)
        response["Last-Modified"] = http_date(time.time())
    return response
