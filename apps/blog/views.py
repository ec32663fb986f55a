"""The public site of the channels that have one: the index, a page per post and per tag, the
preview of an unpublished post for the account's members, and robots.txt. The feed and the sitemap
are in feeds.py; the channel, the page's look, the list of posts and what a destination kind adds
to its channels' pages, in site.py. Addresses: /blog/<handle>/… on the service's host (urls.py), or
the same pages at the root of a channel's own domain (domain_urls.py); the views take the channel
from either.

Readers see `published` posts only: a draft, scheduled or pending post, another channel's post and
an unknown slug all get the same 404 page. Pages render from the stored Markdown (apps.core.markdown)
whatever wrote it, and are cached under the channel's version (pages.py).

A kind may show a form on its channels' index (site.IndexPart) and answer its posts (`index_post`):
the index takes them, and is a 405 to a post for any other channel.
"""

import json
from functools import cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.contrib.staticfiles import finders
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render
from django.utils.cache import patch_cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_safe

from apps.blog import pages
from apps.blog.site import (
    LOOK,
    PREVIEW_FRAME_POLICY,
    blog_of_domain,
    channel_of,
    cursors,
    kind_pages,
    listing,
    not_found_page,
    page_in_look,
)
from apps.channels.models import Channel, Platform, normalize_domain, site_platforms
from apps.core.destinations import kinds
from apps.core.images import by_address
from apps.core.markdown import render_body
from apps.posts import selectors
from apps.posts.models import Post, shown_at
from apps.posts.serializers import description as post_description

# Where urls.py, feeds.py and the middleware find them.

DESCRIPTION_LENGTH = 160


def not_found(request, exception=None) -> HttpResponse:
    """404 for a path of a blog's own domain that is no page of it (domain_urls.handler404)."""
    channel = getattr(request, "blog_channel", None)
    if channel is None:
        return HttpResponse("Not found.", status=404, content_type="text/plain; charset=utf-8")
    return pages.public_cache_control(not_found_page(request, channel))


def resource_of(request, *parts: str) -> str:
    """A page's cache name: its path and the parameters it reads (other parameters change nothing)."""
    return "|".join((request.path, *parts))


def _list_page(request, channel: Channel, tag: str | None) -> HttpResponse:
    # Cached by the cursors read, so a mangled one (read as none) shares the first page's entry
    # instead of filling the cache with copies.
    before, after = cursors(request)
    resource = resource_of(request, f"before={before or ''}", f"after={after or ''}")
    return pages.serve(
        request, channel, resource, lambda: listing(request, channel, tag=tag, before=before, after=after)
    )


# No CSRF token on a form of the index: the index is one cached page for every reader (pages.py), and
# a token is per visitor. The kind that shows a form there answers its posts (`index_post`, which
# says why it needs none).
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def index(request, handle: str | None = None) -> HttpResponse:
    channel = channel_of(request, handle)
    if request.method == "POST":
        answer = getattr(kind_pages(channel.platform), "index_post", None)
        return HttpResponseNotAllowed(["GET", "HEAD"]) if answer is None else answer(request, channel, LOOK)
    return _list_page(request, channel, None)


@require_safe
def tag(request, tag: str, handle: str | None = None) -> HttpResponse:
    return _list_page(request, channel_of(request, handle), tag)


def json_ld(data: dict) -> str:
    """JSON for a <script type="application/ld+json"> block: nothing in it can close the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _media_entries(post, uploaded, shown: tuple) -> list[tuple]:
    """Each of the post's media entries with the uploaded image it names (None: an external address)
    and whether it is the page's first image, but those its body already showed (`shown`): a photo
    is on the page once."""
    by_medium = {image.medium_id: image for image in uploaded if image.attached}
    in_body = {image.medium_id for image in shown}
    first = not shown
    entries = []
    for item in post.media_items:
        medium_id = item.medium_id
        if medium_id in in_body:
            continue
        image = by_medium.get(medium_id)
        entries.append((item, image, first and image is not None))
        first = first and image is None
    return entries


def _post_page(request, channel: Channel, post, *, preview: bool = False) -> HttpResponse:
    url = channel.post_url(post.slug)
    title = post.meta_title or post.title
    description = post_description(post, limit=DESCRIPTION_LENGTH)
    # The uploaded images it shows (apps.core.destinations.Image), set by selectors.with_parts.
    uploaded = post.images
    body = render_body(post.body, images=by_address(uploaded), priority=True)
    external = [item for item in post.media_items if item.kind == "image" and item.medium_id is None]
    images = [*uploaded, *external]
    tag_links = [(name, channel.public_url("blog:tag", tag=name)) for name in post.tag_names]
    structured = {
        "@context": "https://schema.org",
        "@type": "BlogPosting",
        "headline": post.title[:110],
        "description": description,
        "url": url,
        "mainEntityOfPage": url,
        "datePublished": post.shown_at.isoformat(),
        "dateModified": post.updated_at.isoformat(),
        "inLanguage": channel.language,
        "keywords": post.tag_names,
        "isPartOf": {"@type": "Blog", "name": channel.title, "url": channel.public_url()},
        "publisher": {"@type": "Organization", "name": channel.title},
    }
    if images:
        structured["image"] = list(dict.fromkeys(item.url for item in images))
    context = {
        "post": post,
        "title": title,
        "description": description,
        "canonical": url,
        "body_html": body.html,
        "images": images,
        "media_entries": _media_entries(post, uploaded, body.images),
        "og_image": images[0] if images else None,
        "tag_links": tag_links,
        "json_ld": json_ld(structured),
        "preview": preview,
        "noindex": preview,
    }
    return page_in_look(request, channel, "blog/post.html", context)


@require_safe
def post(request, slug: str, handle: str | None = None) -> HttpResponse:
    channel = channel_of(request, handle)

    def rendered() -> HttpResponse:
        found = selectors.published_post(channel_id=channel.pk, slug=slug)
        return not_found_page(request, channel) if found is None else _post_page(request, channel, found)

    return pages.serve(request, channel, resource_of(request), rendered)


@require_safe
def preview(request, post_id: int) -> HttpResponse:
    """A post of a blog channel as its page will look, whatever its status, for the signed-in
    members of its account only (anyone else: the sign-in page, or 404). Never cached or indexed."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
    found = (
        Post.objects.select_related("channel")
        .annotate(shown_at=shown_at())
        .filter(pk=post_id, channel__account_id=request.user.account_id, channel__platform=Platform.BLOG)
        .first()
    )
    if found is None or not request.user.is_active:
        raise Http404("No such post.")
    response = _post_page(request, found.channel, selectors.with_parts(found), preview=True)
    response["Cache-Control"] = "private, no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


@require_safe
def domain_check(request) -> HttpResponse:
    """200 for a host name that is a blog's own domain, 404 for any other: the question a proxy that
    gets TLS certificates on demand asks before it asks for one (Caddy's `on_demand_tls ask`)."""
    domain = normalize_domain(request.GET.get("domain"))
    known = domain is not None and len(domain) <= 253 and blog_of_domain(domain) is not None
    return HttpResponse("ok" if known else "unknown", status=200 if known else 404, content_type="text/plain")


@require_safe
def home(request) -> HttpResponse:
    """The service's own front page: what it publishes to (blogs, and each destination kind by its
    label), where to sign in, where the API is documented."""
    publishes_to = ", ".join(["blogs", *(kind.label for kind in kinds() if kind.label)])
    return pages.public_cache_control(render(request, "blog/home.html", {"publishes_to": publishes_to}))


def _kinds_disallowed() -> list[str]:
    """The paths of the service's host the destination kinds' pages ask crawlers to keep out of."""
    return [path for kind in kinds() if kind.site for path in getattr(kind_pages(kind.platform), "ROBOTS_DISALLOW", ())]


@require_safe
def robots(request) -> HttpResponse:
    """Crawlers may read the blogs, not the Settings area or the API; the sitemaps are named. On a
    blog's own domain: its sitemap. On the service's host: every blog's that has no domain."""
    channel = getattr(request, "blog_channel", None)
    lines = ["User-agent: *"]
    if channel is not None:
        lines += ["Allow: /", "", f"Sitemap: {channel.public_url('blog:sitemap')}"]
    else:
        lines += [
            f"Disallow: /{settings.ADMIN_URL}",
            "Disallow: /v1/",
            "Disallow: /preview/",
            *(f"Disallow: {path}" for path in _kinds_disallowed()),
            "Allow: /blog/",
            "",
        ]
        blogs = Channel.objects.filter(platform__in=site_platforms(), domain=None).exclude(handle=None)
        for handle in blogs.order_by("id").values_list("handle", flat=True).iterator(chunk_size=1000):
            lines.append(f"Sitemap: {Channel(platform=Platform.BLOG, handle=handle).public_url('blog:sitemap')}")
    response = HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")
    return pages.public_cache_control(response)


@require_safe
def preview_frame(request) -> HttpResponse:
    """The empty page the post form's live Markdown preview is shown in (posts/markdown_preview.js
    puts the sanitized body into it): a page of its own, so the preview looks like the blog page,
    with the blogs' stylesheet rather than the admin's (where a heading became an admin header bar
    and a list sat far to the right) and the blogs' policy, under which a body's http: images show
    (the admin's takes https: ones only). It holds nothing of anyone's."""
    response = pages.public_cache_control(render(request, "blog/markdown_preview_frame.html"))
    response["Content-Security-Policy"] = PREVIEW_FRAME_POLICY
    # Django's clickjacking middleware leaves a header that is set alone (the service's is DENY).
    response["X-Frame-Options"] = "SAMEORIGIN"
    return response


# A day: the icon changes with a release at most, and browsers ask for it on every page without one.
ICON_MAX_AGE = 24 * 60 * 60


@cache
def _icon() -> bytes:
    # From the apps' static folders, so it answers before collectstatic too.
    return Path(finders.find("blog/icon.svg")).read_bytes()


@require_safe
def favicon(request) -> HttpResponse:
    """/favicon.ico, which browsers ask for on every page that names no icon (the admin, the API's
    docs): the blogs' icon, instead of a 404 each time."""
    response = HttpResponse(_icon(), content_type="image/svg+xml")
    patch_cache_control(response, public=True, max_age=ICON_MAX_AGE)
    return response
