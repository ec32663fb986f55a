"""Cached representations: a rendered response (body and ETag) kept in the default cache under the
version of the channel it shows, served again while that version stands.

The rule that keeps them fresh lives in the database: every change of what a channel's
representations show gives the channel a new version, in the transaction of the change (migration
channels 0002). A request reads the version first and looks for the body stored under it; on a
miss it computes the response as before and stores what it rendered under the version it read
*before* reading any data. So an entry holds data at least as new as its version, never older: a
write committed during the read makes a new version, and nobody asks for the old one again.

Only a 200 is stored, and only the request's own checks come before the lookup (key, scope, rate
limit, all in DRF's dispatch). An unknown channel, another account's, or any query a miss would
refuse goes down the ordinary path, which answers as it always did. The key holds the account,
the path with its query string, the negotiated media type, the version, and a digest of the code
and settings that shape the bytes, so a deploy that changes a representation never serves the old
one.

Concurrent misses of one representation compute it once: the first takes a lock beside the key
and computes, the others wait for what it stores (`_computed_by_another`).

The store fails open, like the rate-limit counters: with the cache unreachable, requests are
computed as if nothing were cached, and the store is left alone for a few seconds.
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, wraps

import django
import orjson
import rest_framework
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpResponse
from django.utils.cache import set_response_etag

from apps.api.ratelimit import REQUEST_ATTRIBUTE, FailOpenStore
from apps.core.coherence import shared
from apps.core.source import source_digest


@cache
def code_digest() -> str:
    """Changes with the code (apps.core.source), the libraries and the settings that shape the
    cached bytes."""
    shaping = (django.__version__, rest_framework.VERSION, orjson.__version__)
    # The addresses of blogs and their posts (the `url` fields) are made from these.
    addresses = (settings.SITE_URL, settings.BLOG_DOMAIN_SCHEME)
    settled = (source_digest(), shaping, settings.PAGE_SIZE_DEFAULT, settings.PAGE_SIZE_MAX, addresses)
    return hashlib.sha256(repr(settled).encode()).hexdigest()[:16]


class RepresentationStore(FailOpenStore):
    """Rendered responses in the default cache, as `etag \\n content type \\n body` bytes.
    `namespace` keeps separate sets apart (the tests use one each)."""

    outage = "Representation cache unreachable; computing every response"

    def __init__(self, namespace: str = "rep") -> None:
        super().__init__()
        self.namespace = namespace

    def key(self, request, account_id: int, version: int) -> str:
        resource = f"{request.path}?{request.META.get('QUERY_STRING', '')}|{request.accepted_media_type}"
        resource_digest = hashlib.sha256(resource.encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return f"{self.namespace}:{code_digest()}:{account_id}:{version}:{resource_digest}"

    @staticmethod
    def redis_key(key: str) -> str | None:
        """Where `key` is in Redis; None without Redis."""
        backend = caches["default"]
        return backend.make_and_validate_key(key) if isinstance(backend, RedisCache) else None

    def get(self, key: str) -> HttpResponse | None:
        value = self._call(self._read, key, now=time.monotonic())
        if not value:
            return None
        etag, content_type, body = value.split(b"\n", 2)
        response = HttpResponse(body, content_type=content_type.decode())
        response["ETag"] = etag.decode()
        return response

    def put(self, key: str, response) -> None:
        set_response_etag(response)
        value = f"{response['ETag']}\n{response['Content-Type']}\n".encode() + response.content
        self._call(self._write, key, value, now=time.monotonic())

    def lead(self, key: str) -> bool:
        """Whether this request is the one to compute `key` (the others wait for it); True when the
        store cannot be reached."""
        won = self._call(self._lock, key, now=time.monotonic())
        return won is None or bool(won)

    def done(self, key: str) -> None:
        self._call(self._unlock, key, now=time.monotonic())

    def computing(self, key: str) -> bool:
        return bool(self._call(lambda backend, key: backend.get(f"{key}:computing"), key, now=time.monotonic()))

    @staticmethod
    def _lock(backend, key: str) -> bool:
        return backend.add(f"{key}:computing", 1, COMPUTE_WAIT)

    @staticmethod
    def _unlock(backend, key: str) -> None:
        backend.delete(f"{key}:computing")

    @staticmethod
    def _read(backend, key: str) -> bytes | None:
        if isinstance(backend, RedisCache):
            # Plain bytes: no unpickling, and no new client object per call.
            return shared.client().get(backend.make_and_validate_key(key))
        return backend.get(key)

    @staticmethod
    def _write(backend, key: str, value: bytes) -> None:
        if isinstance(backend, RedisCache):
            shared.client().set(backend.make_and_validate_key(key), value, ex=settings.API_CACHE_SECONDS)
        else:
            backend.set(key, value, settings.API_CACHE_SECONDS)


store = RepresentationStore()

# How long requests wait for another computing the representation they all miss, and how often they
# look: past the wait, each computes it itself.
COMPUTE_WAIT = 5
WAIT_STEP = 0.004
MAX_WAIT_STEP = 0.05


# The request's note of the representation it was answered with (in its WSGI environ, which the web
# process reads once Django answered: config/server/recording.py records what its fast path may answer).
ANSWERED_FROM = "cps.representation"


@dataclass(frozen=True)
class Answered:
    """What a cached answer was made of: its stored representation, and the version that named it,
    read by `version_of(identifier)`."""

    key: str
    version: tuple[int, int]
    version_of: Callable
    identifier: object
    api_key: object  # the key the request was authenticated with (request.auth)
    budget: object  # the rate-limit budget it was charged to (ratelimit.Budget)


def cached(version_of: Callable[[int], tuple[int, int] | None], *, of: str) -> Callable:
    """A view's GET kept as its rendered response: `version_of(<the URL's `of` argument>)` is the
    (account id, version) of the channel the response shows, or None (see serve)."""

    def decorate(get: Callable) -> Callable:
        @wraps(get)
        def cached_get(view, request, **kwargs) -> HttpResponse:
            return serve(
                request,
                lambda: version_of(kwargs[of]),
                lambda: get(view, request, **kwargs),
                of=(version_of, kwargs[of]),
            )

        return cached_get

    return decorate


def serve(
    request,
    version_of: Callable[[], tuple[int, int] | None],
    compute: Callable[[], HttpResponse],
    *,
    of: tuple[Callable, object] | None = None,
) -> HttpResponse:
    """The response of a GET whose representation depends on one channel: `version_of()` reads the
    channel's (account id, version) before anything else, or None when there is no such channel;
    `compute()` makes the response the ordinary way. With the cache off, nothing is read first.
    `of`: the function and argument `version_of` calls, noted with an answer from the cache."""
    if not settings.API_CACHE_SECONDS:
        return compute()
    version = version_of()
    if version is None or version[0] != request.auth.account_id:
        return compute()
    key = store.key(request, *version)
    response = _served(request, store.get(key), key, version, of)
    if response is not None:
        return response
    if store.lead(key):
        # Another may have stored it between the look above and taking the lock.
        response = _served(request, store.get(key), key, version, of)
        if response is not None:
            store.done(key)
            return response
    else:
        response = _served(request, _computed_by_another(key), key, version, of)
        if response is not None:
            return response
    try:
        response = compute()
    except BaseException:
        store.done(key)
        raise
    if response.status_code != 200:
        store.done(key)
        return response

    def stored(rendered) -> None:
        # After rendering, so the bytes stored are the bytes sent; the ETag is set here, once, and
        # ConditionalGetMiddleware answers If-None-Match from it.
        store.put(key, rendered)
        store.done(key)

    response.add_post_render_callback(stored)
    # Not noted: the representation is stored only once the response is rendered, after the fast
    # path's recorder would look for it; the next request, answered from the store, is noted.
    return response


def _served(request, response, key: str, version: tuple[int, int], of: tuple[Callable, object] | None):
    """`response` read from the store, the request noted as answered from the representation `key`
    (when there is one)."""
    if response is not None and of is not None:
        budget = getattr(request, REQUEST_ATTRIBUTE, None)  # DRF passes it on from the HttpRequest
        request.META[ANSWERED_FROM] = Answered(key, version, *of, request.auth, budget)
    return response


def _computed_by_another(key: str) -> HttpResponse | None:
    """What the request computing `key` stores, waited for while it computes (at most
    COMPUTE_WAIT seconds): concurrent misses of one representation compute it once. None when it
    stored nothing (an error, a refusal): then each computes its own answer."""
    deadline = time.monotonic() + COMPUTE_WAIT
    step = WAIT_STEP
    while time.monotonic() < deadline:
        time.sleep(step)
        response = store.get(key)
        if response is not None:
            return response
        if not store.computing(key):
            return store.get(key)
        # A page takes milliseconds to compute: most waiters find it at their first look; the
        # longer it takes, the less often the others ask (each look is two calls to the cache).
        step = min(step * 2, MAX_WAIT_STEP)
    return None
