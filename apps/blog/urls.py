"""The public site on the service's host: each channel that has one (a blog, or a destination kind
with a `site`) under /blog/<handle>/, the previews of the Settings area, robots.txt and favicon.ico.
A channel's own domain has its pages at its root (domain_urls.py). A kind's other pages (what its
e-mails link to) are routed by its own URL module (config/urls.py includes it)."""

from django.urls import path

from apps.blog import feeds, views

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


urlpatterns = [
    path("", views.home, name="home"),
    path("robots.txt", views.robots, name="robots"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("blog-domains/check", views.domain_check, name="domain_check"),
    path("preview/<int:post_id>/", views.preview, name="preview"),
    path("preview/markdown-frame/", views.preview_frame, name="preview_frame"),
    *blog_pages("blog/<slug:handle>/"),
]
