"""The floor of the API benchmark: plain Django views (no DRF) that do the same authentication
lookup and the same queries as the real endpoints and return the same JSON with JsonResponse.
And the floor of the blog part (bench/blog.py): a blog's index and post page rendered from the
database on every request.

They serve nothing but the comparison: what the cheapest hand-written Django code costs for the
same work, under the same middleware. The benchmark checks that their bodies equal the real
endpoints' bodies before it measures anything.
"""

import itertools
import json
import math
import os
from datetime import UTC

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.http import Http404, HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.cache import set_response_etag
from django.views.decorators.csrf import csrf_exempt

from apps.api.pagination import cursor_after
from apps.api.ratelimit import enforce_account_budget
from apps.blog import pages as blog_pages
from apps.blog import site as blog_site
from apps.blog import views as blog_views
from apps.channels.models import Channel
from apps.core.prepared import PreparedLookup
from apps.posts import selectors as post_selectors
from apps.posts import services as post_services
from apps.posts.api import posts_list_key
from apps.posts.models import Media, Post, Tag
from apps.posts.services import post_update_content
from apps.users.credentials import api_key_touch
from apps.users.models import ApiKey, Permission, split_api_key

COMPACT = {"separators": (",", ":"), "ensure_ascii": False}  # the bytes DRF's JSONRenderer writes


def _json(data, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, json_dumps_params=COMPACT)


def _error(status: int, code: str, message: str) -> JsonResponse:
    return _json({"error": {"code": code, "message": message}}, status)


def _utc(value) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()[:-6] + "Z"


# The key with its account and user, read from the database on every request: the plain-Django
# lookup (apps.users.selectors.api_key_find reads it from Redis, which is what the endpoints are
# measured against). The same query the service makes on a miss, compiled once per process.
_key_by_prefix = PreparedLookup(
    ApiKey,
    "prefix",
    ("00000000", "11111111"),
    lambda prefix: ApiKey.objects.select_related("account", "user").filter(prefix=prefix).order_by()[:1],
)


def _key(raw: str) -> ApiKey | None:
    parts = split_api_key(raw)
    api_key = None if parts is None else _key_by_prefix.first(parts[0])
    return api_key if api_key is not None and api_key.matches(raw) else None


def _authenticate(request) -> ApiKey | None:
    """The checks of apps.users.authentication written out, around the key lookup: the same query
    the service makes without its cache, the same hash and comparison, the same rate-limit charge
    and last-use write."""
    scheme, _, raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    api_key = _key(raw.strip()) if scheme.lower() == "bearer" else None
    if api_key is None or not api_key.is_usable(timezone.now()):
        return None
    if not api_key.user.is_active:
        return None
    enforce_account_budget(request, api_key.account)
    api_key_touch(api_key=api_key)
    request.user, request.auth = api_key.user, api_key
    return api_key


def _unauthorized() -> JsonResponse:
    return _error(401, "authentication_failed", "Invalid API key provided.")


def _channel(account_id: int, channel_id: int) -> tuple[dict, Channel] | None:
    """The channel's list form (its `posts_count` also counts the unfiltered posts list), and the
    channel's public site as an unsaved Channel (where its published posts are read: a post's `url`)."""
    row = (
        Channel.objects.select_related("team")
        .filter(pk=channel_id)
        .values("id", "account_id", "title", "platform", "handle", "domain", "team_id", "team__name", "posts_count")
        .first()
    )
    if row is None or row["account_id"] != account_id:
        return None
    team = None if row["team_id"] is None else {"id": row["team_id"], "name": row["team__name"]}
    site = Channel(platform=row["platform"], handle=row["handle"], domain=row["domain"])
    return {
        "id": row["id"],
        "title": row["title"],
        "platform": row["platform"],
        "team": team,
        "posts_count": row["posts_count"],
    }, site


def _page_params(request) -> tuple[int, int] | None:
    try:
        page = int(request.GET.get("page") or 1)
        per_page = int(request.GET.get("per_page") or request.GET.get("limit") or settings.PAGE_SIZE_DEFAULT)
    except ValueError:
        return None
    if page < 1 or per_page < 1:
        return None
    return page, min(per_page, settings.PAGE_SIZE_MAX)


def me(request):
    api_key = _authenticate(request)
    if api_key is None:
        return _unauthorized()
    account = api_key.account
    return _json(
        {
            "data": {
                "account": {"id": account.id, "name": account.name},
                "token": {"name": api_key.name, "scopes": list(api_key.scopes), "expires_at": _utc(api_key.expires_at)},
            }
        }
    )


LIST_COLUMNS = ("id", "title", "teaser", "slug", "publication_status", "created_at", "updated_at")


def channel_posts(request, channel_id: int):
    api_key = _authenticate(request)
    if api_key is None:
        return _unauthorized()
    if "read:posts" not in api_key.scopes:
        return _error(403, "insufficient_scope", "This API key lacks the scope 'read:posts'.")
    params = _page_params(request)
    if params is None:
        return _error(400, "VALIDATION_ERROR", "page and per_page must be positive integers.")
    page, per_page = params
    found = _channel(api_key.account_id, channel_id)
    if found is None:
        return _error(404, "not_found", "Resource not found.")
    channel, _ = found
    posts = Post.objects.filter(channel_id=channel_id).order_by("id")
    count = channel["posts_count"]
    offset = (page - 1) * per_page
    rows = posts.values_list(*LIST_COLUMNS)[offset : offset + per_page] if offset < count else []
    data = [
        {
            "id": pk,
            "title": title,
            "teaser": teaser,
            "slug": slug,
            "publication_status": status,
            "created_at": _utc(created_at),
            "updated_at": _utc(updated_at),
            "channel": channel,
        }
        for pk, title, teaser, slug, status, created_at, updated_at in rows
    ]
    more = rows and offset + len(data) < count
    next_cursor = cursor_after(posts_list_key(channel_id, {}), data[-1]["id"]) if more else None
    meta = {"page": page, "pages": math.ceil(count / per_page), "count": count, "per_page": per_page}
    return _json({"data": data, "meta": meta | {"next_cursor": next_cursor}})


def _single_post(api_key: ApiKey, channel_id: int, post_id: int) -> dict | JsonResponse:
    """The single-post form of the post (its `data`), or the 404 the endpoint answers."""
    found = _channel(api_key.account_id, channel_id)
    if found is None:
        return _error(404, "not_found", "Resource not found.")
    channel, site = found
    post = (
        Post.objects.filter(channel_id=channel_id, pk=post_id)
        .annotate(story_id=F("story_link__story_id"))
        .values()
        .first()
    )
    if post is None:
        return _error(404, "not_found", "Post not found.")
    tags = Tag.objects.filter(posts__id=post_id).values("id", "name")
    media = Media.objects.filter(post_id=post_id).values("id", "medium", "kind", "url", "alt_text", "width", "height")
    return {
        "id": post["id"],
        "title": post["title"],
        "teaser": post["teaser"],
        "slug": post["slug"],
        "publication_status": post["publication_status"],
        "created_at": _utc(post["created_at"]),
        "updated_at": _utc(post["updated_at"]),
        "channel": channel,
        "body": post["body"],
        "published_at": _utc(post["published_at"]),
        "meta_title": post["meta_title"],
        "meta_description": post["meta_description"],
        "tags": list(tags),
        "media": list(media),
        "external_id": post["external_id"],
        "external_url": post["external_url"],
        "story": None if post["story_id"] is None else {"id": post["story_id"]},
        "scheduled_at": _utc(post["scheduled_at"]),
        "url": site.post_url(post["slug"]) if post["publication_status"] == "published" else None,
        # The benchmark's channels are blogs, which publish through no destination: no job to show.
        "publication": None,
    }


def channel_post(request, channel_id: int, post_id: int):
    api_key = _authenticate(request)
    if api_key is None:
        return _unauthorized()
    if "read:posts" not in api_key.scopes:
        return _error(403, "insufficient_scope", "This API key lacks the scope 'read:posts'.")
    data = _single_post(api_key, channel_id, post_id)
    return data if isinstance(data, JsonResponse) else _json({"data": data})


# --- the write part's floors (bench/writes.py) -------------------------------------------------
# What the cheapest hand-written Django code costs for the writes of POST and PATCH
# /v1/channels/{id}/posts[/{id}]: the same key lookup, the same rows written (the post's columns
# and its tag links, in one transaction: the database's triggers bump the channel alike), and the
# same answer (the single-post form as GET sends it, its ETag, and Location for a create).


def _writer(request) -> tuple[ApiKey | None, JsonResponse | None]:
    api_key = _authenticate(request)
    if api_key is None:
        return None, _unauthorized()
    if "write:posts" not in api_key.scopes:
        return None, _error(403, "insufficient_scope", "This API key lacks the scope 'write:posts'.")
    if Permission.ARTICLES_WRITE not in api_key.user.permissions:
        return None, _error(403, "permission_denied", "The owner of this API key lacks articles.write.")
    return api_key, None


def _fields(request) -> dict | None:
    """The body's `post` object, or None when it is not one."""
    try:
        body = json.loads(request.body)
    except ValueError:
        return None
    fields = body.get("post") if isinstance(body, dict) else None
    return fields if isinstance(fields, dict) else None


def _answer(data: dict, status: int = 200) -> JsonResponse:
    response = _json({"data": data}, status)
    set_response_etag(response)
    return response


@csrf_exempt
def create_post(request, channel_id: int):
    """POST a draft: title, body, teaser and tag names (made when new)."""
    api_key, refused = _writer(request)
    if refused:
        return refused
    fields = _fields(request)
    if fields is None or not isinstance(fields.get("title"), str) or not fields["title"].strip():
        return _error(400, "VALIDATION_ERROR", "post.title is required.")
    if _channel(api_key.account_id, channel_id) is None:
        return _error(404, "not_found", "Resource not found.")
    names = list(dict.fromkeys(fields.get("tags") or []))
    with transaction.atomic():
        tags = {tag.name: tag.pk for tag in Tag.objects.filter(account_id=api_key.account_id, name__in=names)}
        for name in names:
            if name not in tags:
                tags[name] = Tag.objects.create(account_id=api_key.account_id, name=name).pk
        post = Post.objects.create(
            channel_id=channel_id,
            title=fields["title"],
            body=fields.get("body") or "",
            teaser=fields.get("teaser") or "",
            # The service's slug rule, one query (the title's slug, or it numbered).
            slug=post_services._free_slug(channel_id=channel_id, title=fields["title"]),
        )
        Post.tags.through.objects.bulk_create(Post.tags.through(post_id=post.pk, tag_id=tags[n]) for n in names)
    response = _answer(_single_post(api_key, channel_id, post.pk), 201)
    response["Location"] = request.build_absolute_uri(f"/v1/channels/{channel_id}/posts/{post.pk}")
    return response


@csrf_exempt
def edit_post(request, channel_id: int, post_id: int):
    """PATCH a post's title (last writer wins: no precondition)."""
    api_key, refused = _writer(request)
    if refused:
        return refused
    fields = _fields(request)
    if fields is None or not isinstance(fields.get("title"), str) or not fields["title"].strip():
        return _error(400, "VALIDATION_ERROR", "post.title must be a non-empty string.")
    if _channel(api_key.account_id, channel_id) is None:
        return _error(404, "not_found", "Resource not found.")
    with transaction.atomic():
        post = Post.objects.select_for_update().filter(channel_id=channel_id, pk=post_id).first()
        if post is None:
            return _error(404, "not_found", "Post not found.")
        if post.title != fields["title"]:
            post.title = fields["title"]
            post.save(update_fields=["title", "updated_at"])
    return _answer(_single_post(api_key, channel_id, post_id))


_edits = itertools.count()


@csrf_exempt
def write(request, channel_id: int):
    """The mixed benchmark's write (one in 50 requests, for the endpoint and its floor alike): an
    editor's save of one post of the channel's first page, through the service, so the channel
    gets a new version and every cached page of it is computed again."""
    if _authenticate(request) is None:
        return _unauthorized()
    edit = next(_edits)
    ids = list(Post.objects.filter(channel_id=channel_id).order_by("id").values_list("pk", flat=True)[:20])
    post = Post.objects.get(pk=ids[edit % len(ids)])
    post_update_content(post=post, title=f"Edited by process {os.getpid()}, edit {edit}")
    return HttpResponse(status=204)


# The blog's floor is its own view code without the page cache (what apps.blog.pages.serve does with
# API_CACHE_SECONDS=0, which a threaded server cannot switch per request): the same channel query,
# queries, Markdown rendering, template and headers, so the pages are byte for byte the real ones and
# the ratio is what the cache saves.


def _blog(handle: str):
    """The blog by its handle, from the database (the service reads it from Redis while it stands)."""
    channel = blog_site._by_handle.first(handle)
    if channel is None:
        raise Http404("No such blog.")
    return channel


def blog_index(request, handle: str):
    channel = _blog(handle)
    before, after = blog_site.cursors(request)
    page = blog_site.listing(request, channel, tag=None, before=before, after=after)
    return blog_pages.public_cache_control(blog_pages._validated(page))


def blog_post(request, handle: str, slug: str):
    channel = _blog(handle)
    found = post_selectors.published_post(channel_id=channel.pk, slug=slug)
    if found is None:
        raise Http404("No such post.")
    page = blog_views._post_page(request, channel, found)
    return blog_pages.public_cache_control(blog_pages._validated(page))
