"""The public site on the service's host: each channel that has one (a blog, or a destination kind
with a `site`) under /blog/<handle>/, the previews of the Settings area, robots.txt and favicon.ico,
and the pages of the kinds' sites on this host (what their e-mails link to, whatever the channel's
domain). A channel's own domain has its pages at its root (domain_urls.py)."""

from functools import wraps

from django.urls import path

from apps.blog import feeds, views
from apps.blog.site import LOOK, kind_pages
from apps.core.destinations import kinds

app_name = "blog"


def blog_pages(prefix: str) -> list:
    """A blog's pages under `prefix` ("" on its own domain), by the names Channel.public_url uses
    (the index takes the posts of a form its kind shows there, apps/blog/site.py)."""
    return [
        path(f"{prefix}", views.index, name="index"),
        path(f"{prefix}feed.xml", feeds.feed, name="feed"),
        path(f"{prefix}sitemap.xml", feeds.sitemap, name="sitemap"),
        path(f"{prefix}tags/<path:tag>/", views.tag, name="tag"),
        path(f"{prefix}<slug:slug>/", views.post, name="post"),
    ]


def _in_look(view):
    """The kind's page, given the pages in the channel's look."""

    @wraps(view)
    def page(request, **kwargs):
        return view(request, look=LOOK, **kwargs)

    return page


def kinds_pages() -> list:
    """Each kind's own pages (its site module's PAGES), named `<platform>_<name>`."""
    return [
        path(route, _in_look(view), name=f"{kind.platform}_{name}")
        for kind in kinds()
        if kind.site
        for route, view, name in getattr(kind_pages(kind.platform), "PAGES", ())
    ]


urlpatterns = [
    path("", views.home, name="home"),
    path("robots.txt", views.robots, name="robots"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("blog-domains/check", views.domain_check, name="domain_check"),
    path("preview/<int:post_id>/", views.preview, name="preview"),
    path("preview/markdown-frame/", views.preview_frame, name="preview_frame"),
    *kinds_pages(),
    *blog_pages("blog/<slug:handle>/"),
]
