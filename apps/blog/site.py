"""What every page of a blog shows: its channel (found by handle or by domain, from the shared
cache), the page in the channel's look with its Content-Security-Policy, and the list of its posts
(the index and a tag's page, with what the channel's destination kind adds to its index).

A destination kind whose channels have a public site (`DestinationKind.site` in the registry,
apps/core/destinations.py) names the module of what it adds to it (`kind_pages`). The blog asks
that module, by name, for each of these, all optional:

- `POSTS`: what the index's description calls the channel's posts (default "posts").
- `NOTHING_YET`: what an index with no post says (default "Nothing published yet.").
- `ROBOTS_DISALLOW`: paths of the service's host that robots.txt asks crawlers to keep out of.
- `index_part(channel) -> IndexPart`: what the index shows above its posts (not a tag's page).
- `index_post(request, channel, look) -> HttpResponse`: the answer to a POST on the index (405 without).
- `PAGES`: its own pages on the service's host (what its e-mails link to), as (route, view, name):
  apps/blog/urls.py routes each as `blog:<platform>_<name>`, calling `view(request, look=..., **kwargs)`.

Its functions get the pages in the channel's look as an argument (`LOOK`, an
apps.core.destinations.Look), so the kind's package imports nothing of the blog, which sits above it.
"""

import base64
import hashlib
from importlib import import_module
from types import ModuleType
from urllib.parse import urlencode

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from apps.channels.models import Channel, site_platforms
from apps.core.coherence import Columns, Entries, Stored
from apps.core.destinations import IndexPart, kind_for
from apps.core.prepared import PreparedLookup
from apps.posts import selectors
from apps.posts.serializers import excerpt

# What a page shows of its channel (and its version, read in the same query).
SITE_FIELDS = (
    "account",
    "version",
    "title",
    "platform",
    "handle",
    "domain",
    "description",
    "language",
    "time_zone",
    "accent_color",
    "logo_url",
    "image_width",
    "created_at",
    "updated_at",
)
EXCERPT_LENGTH = 280


def _blogs():
    return Channel.objects.filter(platform__in=site_platforms()).only(*SITE_FIELDS).order_by()


_by_handle = PreparedLookup(Channel, "handle", ("a", "b"), lambda handle: _blogs().filter(handle=handle)[:1])
_by_domain = PreparedLookup(
    Channel, "domain", ("a.example", "b.example"), lambda domain: _blogs().filter(domain=domain)[:1]
)


# What the shared cache keeps of a blog's channel: the columns its pages show.
_SITE = Columns(Channel, lambda field: field.primary_key or field.name in SITE_FIELDS)


def _site_values(channel: Channel | None) -> tuple | None:
    return None if channel is None else _SITE.values(channel)


def _site(values: tuple | None) -> Channel | None:
    return None if values is None else _SITE.instance(values)


# Blogs by handle and by domain in the shared cache (apps/core/coherence.py), forgotten by channels
# 0007's triggers whenever the channel changes or gets a new version: a page served from the cache
# asks the database nothing.
_handles = Entries("h", lambda handle: _site_values(_by_handle.first(handle)))
_domains = Entries("d", lambda domain: _site_values(_by_domain.first(domain)))


def blog_of_domain(domain: str) -> Channel | None:
    return _site(_domains.get(domain))


def channel_of(request, handle: str | None) -> Channel:
    """The blog the request is for: its own domain's (found by the middleware) or the handle's."""
    channel = getattr(request, "blog_channel", None) if handle is None else _site(_handles.get(handle))
    if channel is None:
        raise Http404("No such blog.")
    return channel


def found_by_domain(request) -> str | None:
    """The domain the request's blog was found by (its own domain's), or None (by its handle)."""
    channel = getattr(request, "blog_channel", None)
    return None if channel is None else channel.domain


def channel_entry(channel: Channel, *, domain: str | None) -> Stored | None:
    """The shared cache's entry the channel was found by (its domain's, else its handle's) when it
    holds that very channel (the same columns, so the same version); None otherwise."""
    stored = _domains.stored(domain) if domain else _handles.stored(channel.handle)
    return stored if stored is not None and stored.value == _site_values(channel) else None


def inline_style(channel: Channel) -> str:
    """The page's one inline style, the channel's look; the CSP names its hash."""
    return f":root{{--accent:{channel.accent_color};--image-width:{channel.image_width}px}}"


# What a post's body may show: images and media from anywhere, over http: too, as bodies have them.
MEDIA_SOURCES = "img-src 'self' https: http:; media-src https: http:"
# The Settings area's Markdown preview frame: the blogs' stylesheet and media, framed by the service's
# own pages only; nothing else, as the admin's page puts the (sanitized) body into it.
PREVIEW_FRAME_POLICY = (
    f"default-src 'none'; {MEDIA_SOURCES}; style-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'"
)


def content_security_policy(style: str, *, form: bool = False) -> str:
    """`form`: the page has a form, which posts to the page itself."""
    style_hash = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    form_action = "'self'" if form else "'none'"
    return (
        # connect-src 'self': tools that audit a page fetch its robots.txt from within it.
        f"default-src 'none'; {MEDIA_SOURCES}; connect-src 'self'; "
        f"style-src 'self' 'sha256-{style_hash}'; base-uri 'none'; form-action {form_action}; frame-ancestors 'none'"
    )


def page_in_look(
    request, channel: Channel, template: str, context: dict, *, status: int = 200, form: bool = False
) -> HttpResponse:
    """`form`: the page has a form (the policy lets it post to the page's origin)."""
    style = inline_style(channel)
    context = {
        "channel": channel,
        "blog_url": channel.public_url(),
        "feed_url": channel.public_url("blog:feed"),
        "inline_style": style,
        "time_zone": channel.time_zone,
        **context,
    }
    # An operator may give one blog templates of its own (docs/blog.md): blog/channels/<handle>/post.html
    # comes before blog/post.html.
    names = (
        [f"blog/channels/{channel.handle}/{template.removeprefix('blog/')}", template] if channel.handle else template
    )
    with timezone.override(channel.time_zone):
        response = render(request, names, context, status=status)
    response["Content-Security-Policy"] = content_security_policy(style, form=form)
    # Readers who follow a link leave with the blog's origin (not the page), as blogs expect.
    response["Referrer-Policy"] = "strict-origin-when-cross-origin"
    return response


def not_found_page(request, channel: Channel) -> HttpResponse:
    return page_in_look(request, channel, "blog/404.html", {"title": "Page not found"}, status=404)


def cursors(request) -> tuple[selectors.PageCursor | None, selectors.PageCursor | None]:
    """The list page's (before, after) cursors; one that is not a cursor is none (the first page)."""
    before = selectors.PageCursor.parse(request.GET.get("before"))
    return before, None if before else selectors.PageCursor.parse(request.GET.get("after"))


def kind_pages(platform: str) -> ModuleType | None:
    """The module of what the platform's destination kind adds to the public site (see above);
    None for a platform without one (a blog)."""
    kind = kind_for(platform)
    return import_module(kind.site) if kind is not None and kind.site else None


def listing(
    request, channel: Channel, *, tag: str | None, before, after, part: IndexPart | None = None, status: int = 200
) -> HttpResponse:
    """A page of the channel's posts; the index has its kind's part above them (`part`: one to show
    instead, such as a form sent back with its errors)."""
    page = selectors.published_page(
        channel_id=channel.pk, size=settings.BLOG_PAGE_SIZE, before=before, after=after, tag=tag
    )
    if not page.posts and (tag is not None or before or after):
        return not_found_page(request, channel)
    for post in page.posts:
        post.url = channel.post_url(post.slug)
        post.excerpt = excerpt(post, limit=EXCERPT_LENGTH)
        post.tag_links = [(name, channel.public_url("blog:tag", tag=name)) for name in post.tag_names]
    added = kind_pages(channel.platform)
    if part is None and tag is None and hasattr(added, "index_part"):
        part = added.index_part(channel)
    base = channel.public_url("blog:tag", tag=tag) if tag is not None else channel.public_url()
    context = {
        **(part.context if part else {}),
        "posts": page.posts,
        "tag": tag,
        "index_part": part,
        "nothing_yet": getattr(added, "NOTHING_YET", "Nothing published yet."),
        "title": f"Posts tagged “{tag}”" if tag is not None else channel.title,
        "description": channel.description or f"The latest {getattr(added, 'POSTS', 'posts')} of {channel.title}.",
        **_paging_links(base, page, before, after),
    }
    form = part is not None and part.form
    return page_in_look(request, channel, "blog/index.html", context, status=status, form=form)


def _paging_links(base: str, page, before, after) -> dict:
    """The list page's canonical address and its links to older and newer posts; a page past the
    first is not for search engines."""
    paged = before or after
    return {
        "canonical": f"{base}?{urlencode({'before' if before else 'after': str(paged)})}" if paged else base,
        "older_url": f"{base}?{urlencode({'before': str(page.older)})}" if page.older else None,
        "newer_url": (f"{base}?{urlencode({'after': str(page.newer)})}" if page.newer else base) if paged else None,
        "noindex": bool(paged),
    }


def private(response: HttpResponse) -> HttpResponse:
    """An answer for this visitor only: never cached, never indexed."""
    response["Cache-Control"] = "private, no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


class PublicLook:
    """The pages in a channel's look, as a kind's page functions get them (apps.core.destinations.Look)."""

    page = staticmethod(page_in_look)
    private = staticmethod(private)

    @staticmethod
    def index(request, channel: Channel, *, part: IndexPart, status: int) -> HttpResponse:
        before, after = cursors(request)
        return listing(request, channel, tag=None, before=before, after=after, part=part, status=status)


LOOK = PublicLook()
