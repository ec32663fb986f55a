"""The public site of blog and newsletter channels: the index, a page per post and per tag, the
preview of an unpublished post for the account's members, and robots.txt. The feed and the sitemap
are in feeds.py. Addresses: /blog/<handle>/… on the service's host (urls.py), or the same pages at
the root of a channel's own domain (domain_urls.py); the views take the channel from either.

Readers see `published` posts only: a draft, scheduled or pending post, another channel's post and
an unknown slug all get the same 404 page. Pages render from the stored Markdown (apps.core.markdown)
whatever wrote it, and are cached under the channel's version (pages.py).

A newsletter's index is the archive of its sent editions (its published posts) with a subscribe
form; the links of its e-mails (confirm, unsubscribe) open pages on the service's host.
"""

import base64
import hashlib
import json
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_safe

from apps.api import ratelimit
from apps.blog import pages
from apps.blog.forms import SubscribeForm
from apps.channels.models import SITE_PLATFORMS, Channel, Platform, normalize_domain
from apps.core.coherence import Columns, Entries
from apps.core.errors import InvalidInput
from apps.core.markdown import markdown_text, render_markdown
from apps.core.prepared import PreparedLookup
from apps.posts import selectors
from apps.posts.models import Post, shown_at
from apps.publishing.newsletter import services as newsletter
from apps.publishing.newsletter.message import TEST_TOKEN
from apps.publishing.newsletter.models import Subscriber, SubscriberStatus

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
DESCRIPTION_LENGTH = 160
EXCERPT_LENGTH = 280


def _blogs():
    return Channel.objects.filter(platform__in=SITE_PLATFORMS).only(*SITE_FIELDS).order_by()


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


def inline_style(channel: Channel) -> str:
    """The page's one inline style, the channel's look; the CSP names its hash."""
    return f":root{{--accent:{channel.accent_color};--image-width:{channel.image_width}px}}"


def content_security_policy(style: str, *, form: bool = False) -> str:
    """`form`: the page has a form, which posts to the page itself."""
    style_hash = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    form_action = "'self'" if form else "'none'"
    return (
        # connect-src 'self': tools that audit a page fetch its robots.txt from within it.
        "default-src 'none'; img-src 'self' https: http:; media-src https: http:; connect-src 'self'; "
        f"style-src 'self' 'sha256-{style_hash}'; base-uri 'none'; form-action {form_action}; frame-ancestors 'none'"
    )


def _page(
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


def _not_found(request, channel: Channel) -> HttpResponse:
    return _page(request, channel, "blog/404.html", {"title": "Page not found"}, status=404)


def not_found(request, exception=None) -> HttpResponse:
    """404 for a path of a blog's own domain that is no page of it (domain_urls.handler404)."""
    channel = getattr(request, "blog_channel", None)
    if channel is None:
        return HttpResponse("Not found.", status=404, content_type="text/plain; charset=utf-8")
    return pages.public_cache_control(_not_found(request, channel))


def _excerpt(post) -> str:
    return post.teaser or markdown_text(post.body, limit=EXCERPT_LENGTH)


def cursors(request) -> tuple[selectors.PageCursor | None, selectors.PageCursor | None]:
    """The list page's (before, after) cursors; one that is not a cursor is none (the first page)."""
    before = selectors.PageCursor.parse(request.GET.get("before"))
    return before, None if before else selectors.PageCursor.parse(request.GET.get("after"))


def _listing(
    request, channel: Channel, *, tag: str | None, before, after, form: SubscribeForm | None = None, status: int = 200
) -> HttpResponse:
    """A page of the channel's posts (a newsletter's: its sent editions, under the subscribe form)."""
    page = selectors.published_page(
        channel_id=channel.pk, size=settings.BLOG_PAGE_SIZE, before=before, after=after, tag=tag
    )
    if not page.posts and (tag is not None or before or after):
        return _not_found(request, channel)
    base = channel.public_url("blog:tag", tag=tag) if tag is not None else channel.public_url()
    for post in page.posts:
        post.url = channel.post_url(post.slug)
        post.excerpt = _excerpt(post)
        post.tag_links = [(name, channel.public_url("blog:tag", tag=name)) for name in post.tag_names]
    paged = before or after
    newsletter_index = channel.platform == Platform.NEWSLETTER and tag is None
    latest = "editions" if channel.platform == Platform.NEWSLETTER else "posts"
    context = {
        "posts": page.posts,
        "tag": tag,
        "subscribe_form": (form or SubscribeForm()) if newsletter_index else None,
        "title": f"Posts tagged “{tag}”" if tag is not None else channel.title,
        "description": channel.description or f"The latest {latest} of {channel.title}.",
        "canonical": f"{base}?{urlencode({'before' if before else 'after': str(paged)})}" if paged else base,
        "older_url": f"{base}?{urlencode({'before': str(page.older)})}" if page.older else None,
        "newer_url": (f"{base}?{urlencode({'after': str(page.newer)})}" if page.newer else base) if paged else None,
        "noindex": bool(paged),
    }
    return _page(request, channel, "blog/index.html", context, status=status, form=newsletter_index)


def resource_of(request, *parts: str) -> str:
    """A page's cache name: its path and the parameters it reads (other parameters change nothing)."""
    return "|".join((request.path, *parts))


def _list_page(request, channel: Channel, tag: str | None) -> HttpResponse:
    # Cached by the cursors read, so a mangled one (read as none) shares the first page's entry
    # instead of filling the cache with copies.
    before, after = cursors(request)
    resource = resource_of(request, f"before={before or ''}", f"after={after or ''}")
    return pages.serve(
        request, channel, resource, lambda: _listing(request, channel, tag=tag, before=before, after=after)
    )


# No CSRF token on the subscribe form: the index is one cached page for every reader (pages.py), and
# a token is per visitor. The form changes nobody's account (no session, nothing signed in): what a
# forged post could do is what a bot can do directly, which the honeypot, the per-address budget and
# the service's one confirmation e-mail per interval hold back. Browsers' posts from another site's
# page are refused all the same (_cross_site), so no site can make its visitors subscribe people.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def index(request, handle: str | None = None) -> HttpResponse:
    channel = channel_of(request, handle)
    if request.method == "POST":
        return _subscribe(request, channel)
    return _list_page(request, channel, None)


@require_safe
def tag(request, tag: str, handle: str | None = None) -> HttpResponse:
    return _list_page(request, channel_of(request, handle), tag)


def json_ld(data: dict) -> str:
    """JSON for a <script type="application/ld+json"> block: nothing in it can close the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _post_page(request, channel: Channel, post, *, preview: bool = False) -> HttpResponse:
    url = channel.post_url(post.slug)
    title = post.meta_title or post.title
    description = post.meta_description or post.teaser or markdown_text(post.body, limit=DESCRIPTION_LENGTH)
    images = [item for item in post.media_items if item.kind == "image"]
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
        structured["image"] = [item.url for item in images]
    context = {
        "post": post,
        "title": title,
        "description": description,
        "canonical": url,
        "body_html": render_markdown(post.body),
        "images": images,
        "og_image": images[0] if images else None,
        "tag_links": tag_links,
        "json_ld": json_ld(structured),
        "preview": preview,
        "noindex": preview,
    }
    return _page(request, channel, "blog/post.html", context)


@require_safe
def post(request, slug: str, handle: str | None = None) -> HttpResponse:
    channel = channel_of(request, handle)

    def rendered() -> HttpResponse:
        found = selectors.published_post(channel_id=channel.pk, slug=slug)
        return _not_found(request, channel) if found is None else _post_page(request, channel, found)

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
    """The service's own front page: where to sign in, where the API is documented."""
    return pages.public_cache_control(render(request, "blog/home.html"))


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
            f"Disallow: /{settings.ADMIN_URL}", "Disallow: /v1/", "Disallow: /preview/", "Disallow: /newsletter/",
            "Allow: /blog/", "",
        ]  # fmt: skip
        blogs = Channel.objects.filter(platform__in=SITE_PLATFORMS, domain=None).exclude(handle=None)
        for handle in blogs.order_by("id").values_list("handle", flat=True).iterator(chunk_size=1000):
            lines.append(f"Sitemap: {Channel(platform=Platform.BLOG, handle=handle).public_url('blog:sitemap')}")
    response = HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")
    return pages.public_cache_control(response)


# --- Newsletters: subscribing on the public page, and the pages the links of their e-mails open ---


def _private(response: HttpResponse) -> HttpResponse:
    """An answer for this visitor only: never cached, never indexed."""
    response["Cache-Control"] = "private, no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


def _cross_site(request) -> bool:
    """A browser's post made by another site's page (its Fetch metadata or its Origin say so)."""
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc != request.get_host()


def _subscribe_budget(request) -> ratelimit.Budget:
    """Count one subscription of the client's address against NEWSLETTER_SUBSCRIBE_RATE."""
    limit, period = settings.NEWSLETTER_SUBSCRIBE_RATE
    now = ratelimit.clock()
    reset = ratelimit.window_end(now, period)
    used = ratelimit.store.hit(f"newsletter-subscribe:{ratelimit.client_address(request)}", reset, now)
    return ratelimit.Budget(limit=limit, used=used, reset=reset)


def _notice(request, channel: Channel, title: str, message: str, *, status: int) -> HttpResponse:
    context = {"title": title, "description": message, "message": message, "noindex": True}
    return _private(_page(request, channel, "blog/notice.html", context, status=status))


def _subscribe(request, channel: Channel) -> HttpResponse:
    """The subscribe form's post. Whatever the address's state (new, waiting for its confirmation,
    subscribed, unsubscribed, bounced, complained), and for a bot that filled in the honeypot, the
    answer is the same page: it tells nobody who subscribes. What is mailed is the service's choice."""
    if channel.platform != Platform.NEWSLETTER:
        return HttpResponseNotAllowed(["GET", "HEAD"])
    if _cross_site(request):
        message = f"Subscribe on the page of {channel.title} itself: this form cannot be sent from another site."
        return _notice(request, channel, "Subscribe on the newsletter page", message, status=403)
    budget = _subscribe_budget(request)
    if budget.exceeded:
        message = "Too many subscriptions were sent from your network. Please try again later."
        response = _notice(request, channel, "Please try again later", message, status=429)
        response["Retry-After"] = str(budget.retry_after())
        return response
    form = SubscribeForm(request.POST)
    if not form.is_bot():
        if form.is_valid():
            try:
                newsletter.subscribe(channel=channel, email=form.cleaned_data["email"], name=form.cleaned_data["name"])
            except InvalidInput as error:
                form.add_error("email", error.message)
        if form.errors:
            before, after = cursors(request)
            return _private(_listing(request, channel, tag=None, before=before, after=after, form=form, status=400))
    context = {"title": "Check your inbox", "description": f"Subscribing to {channel.title}.", "noindex": True}
    return _private(_page(request, channel, "blog/subscribed.html", context))


def _subscriber_of(token: str) -> Subscriber | None:
    return Subscriber.objects.with_token(token).select_related("channel").first()


def _is_mailed(subscriber: Subscriber) -> bool:
    return (
        subscriber.status == SubscriberStatus.CONFIRMED
        and newsletter.suppression_of(subscriber.channel, subscriber.email) is None
    )


def _link_page(request, channel: Channel | None, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    """A page a link of a newsletter's e-mail opens, in the channel's look (a neutral one when the
    token is nobody's). The path holds the person's token: the page sends no Referer anywhere."""
    context = {"noindex": True, "description": context["title"], **context}
    response = _page(request, channel or Channel(title="Newsletter"), template, context, status=status, form=True)
    response["Referrer-Policy"] = "no-referrer"
    return _private(response)


# The token in the address is the secret that only the subscriber's mailbox has, which is what a
# CSRF token would prove; without a cookie, a reader whose browser keeps none can still press the
# button, and a mail client's one-click unsubscribe (RFC 8058) sends no cookie nor token at all.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def newsletter_confirm(request, token: str) -> HttpResponse:
    """The confirmation e-mail's link. GET (what a mail scanner fetches too) shows a "Confirm"
    button and changes nothing; its POST confirms."""
    posted = request.method == "POST"
    subscriber = newsletter.subscriber_confirm(token=token) if posted else _subscriber_of(token)
    if subscriber is None:
        context = {"title": "This link is not valid", "state": "invalid"}
        return _link_page(request, None, "blog/newsletter_confirm.html", context, status=404)
    # (posted, mailed from now on): a bounce or a complaint is not lifted by confirming ("refused").
    states = {(False, False): "ask", (False, True): "already", (True, True): "done", (True, False): "refused"}
    state = states[posted, _is_mailed(subscriber)]
    titles = {
        "ask": f"Confirm your subscription to {subscriber.channel.title}",
        "already": "You are subscribed",
        "done": "You are subscribed",
        "refused": "This address cannot be subscribed",
    }
    context = {"title": titles[state], "state": state}
    return _link_page(request, subscriber.channel, "blog/newsletter_confirm.html", context)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def newsletter_unsubscribe(request, token: str) -> HttpResponse:
    """Every edition's unsubscribe link (List-Unsubscribe). GET (what a mail scanner fetches too)
    shows an "Unsubscribe" button and changes nothing; a POST unsubscribes at once, the button's
    or a mail client's one-click (body `List-Unsubscribe=One-Click`). A token nobody has (a deleted
    subscriber's) answers 200 too: nothing is mailed to that address any more."""
    subscriber = None
    if token == TEST_TOKEN:  # the Settings area's "Send test" messages: nobody's
        state = "test"
    elif request.method == "POST":
        subscriber = newsletter.subscriber_unsubscribe(token=token)
        state = "gone" if subscriber is None else "done"
    else:
        subscriber = _subscriber_of(token)
        if subscriber is None:
            state = "gone"
        else:
            state = "already" if subscriber.status == SubscriberStatus.UNSUBSCRIBED else "ask"
    titles = {
        "test": "This is a test message's link",
        "gone": "You are not on the list",
        "ask": f"Unsubscribe from {subscriber.channel.title}" if subscriber else "",
        "already": "You are unsubscribed",
        "done": "You are unsubscribed",
    }
    context = {"title": titles[state], "state": state, "subscriber": subscriber}
    return _link_page(request, subscriber and subscriber.channel, "blog/newsletter_unsubscribe.html", context)
