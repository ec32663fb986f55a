"""A blog's Atom feed (Django's syndication framework) and its sitemap (Django's sitemaps framework),
cached like its pages (pages.py).

The feed carries the newest BLOG_FEED_SIZE posts with their whole body as sanitized HTML; each
entry's id is a tag URI made of the service's host, the post's creation date and its id, so it never
changes when the title, the slug or the blog's address does. The sitemap lists every published post
with its `lastmod`, 50,000 to a file (the protocol's limit); past that, sitemap.xml is an index of
its pages (?p=1, ?p=2, …).
"""

from types import SimpleNamespace
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.sitemaps import Sitemap
from django.contrib.sitemaps import views as sitemap_views
from django.contrib.syndication.views import Feed
from django.core.paginator import Paginator
from django.template.response import TemplateResponse
from django.utils.feedgenerator import Atom1Feed
from django.utils.functional import cached_property
from django.views.decorators.http import require_safe

from apps.blog import pages
from apps.blog.site import channel_of
from apps.blog.views import resource_of
from apps.core.markdown import render_markdown
from apps.posts import selectors

SITEMAP_LIMIT = 50_000


class AtomWithContent(Atom1Feed):
    """Atom with each entry's whole body in <content type="html"> (Django's writes a summary only)."""

    def add_item_elements(self, handler, item):
        super().add_item_elements(handler, item)
        handler.addQuickElement("content", item["content"], {"type": "html"})


def tag_uri(created_at, specific: str) -> str:
    """A tag URI (RFC 4151) on the service's host: stable for as long as what it names exists."""
    host = urlsplit(settings.SITE_URL).hostname or "localhost"
    return f"tag:{host},{created_at:%Y-%m-%d}:{specific}"


class BlogFeed(Feed):
    feed_type = AtomWithContent

    def get_object(self, request, channel):
        # Django reads a feed's language (its xml:lang) from an attribute, never per object; each
        # request has an instance of its own (feed() below), so the channel's can be set on it.
        self.language = channel.language
        return channel

    def title(self, channel):
        return channel.title

    def subtitle(self, channel):
        return channel.description or None

    def link(self, channel):
        return channel.public_url()

    def feed_url(self, channel):
        return channel.public_url("blog:feed")

    def feed_guid(self, channel):
        return tag_uri(channel.created_at, f"blog-{channel.pk}")

    def author_name(self, channel):
        return channel.title

    def items(self, channel):
        self.channel = channel
        return selectors.latest_published(channel_id=channel.pk, size=settings.BLOG_FEED_SIZE)

    def item_title(self, item):
        return item.title

    def item_description(self, item):
        return item.teaser or None

    def item_link(self, item):
        return self.channel.post_url(item.slug)

    def item_guid(self, item):
        return tag_uri(item.created_at, f"post-{item.pk}")

    item_guid_is_permalink = False

    def item_pubdate(self, item):
        return item.shown_at

    def item_updateddate(self, item):
        return item.updated_at

    def item_categories(self, item):
        return item.tag_names

    def item_extra_kwargs(self, item):
        return {"content": render_markdown(item.body)}


@require_safe
def feed(request, handle: str | None = None):
    channel = channel_of(request, handle)
    return pages.serve(request, channel, resource_of(request), lambda: BlogFeed()(request, channel=channel))


class PostSitemap(Sitemap):
    limit = SITEMAP_LIMIT

    def __init__(self, channel):
        self.channel = channel
        address = urlsplit(channel.public_url())
        self.protocol = address.scheme
        self.address = address

    def get_domain(self, site=None):
        return self.address.netloc

    def items(self):
        return selectors.published_posts(self.channel.pk).only("slug", "updated_at").order_by("-shown_at", "-id")

    def location(self, item):
        return urlsplit(self.channel.post_url(item.slug)).path

    def lastmod(self, item):
        return item.updated_at

    @cached_property
    def paginator(self):
        # Django's makes a new Paginator (and counts the posts again) every time it is read.
        return Paginator(self.items(), self.limit)

    def get_latest_lastmod(self):
        # Django's reads every item for it; the page's Last-Modified is set where it is cached.
        return None


@require_safe
def sitemap(request, handle: str | None = None):
    channel = channel_of(request, handle)

    def rendered():
        maps = {"posts": PostSitemap(channel)}
        pages_count = maps["posts"].paginator.num_pages
        if "p" not in request.GET and pages_count > 1:
            here = channel.public_url("blog:sitemap")
            listed = [
                SimpleNamespace(location=f"{here}?{urlencode({'p': n})}", last_mod=None)
                for n in range(1, pages_count + 1)
            ]
            response = TemplateResponse(
                request, "sitemap_index.xml", {"sitemaps": listed}, content_type="application/xml; charset=utf-8"
            )
        else:
            response = sitemap_views.sitemap(request, maps, content_type="application/xml; charset=utf-8")
        return response.render()

    return pages.serve(request, channel, resource_of(request, request.GET.get("p", "")), rendered)
