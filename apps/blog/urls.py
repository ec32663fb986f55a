"""The public site on the service's host: each blog and newsletter under /blog/<handle>/, the
previews of the Settings area, robots.txt and favicon.ico, and the pages the links of newsletters' e-mails open
(on this host only, whatever the newsletter's domain). A channel's own domain has its pages at its
root (domain_urls.py)."""

from django.urls import path

from apps.blog import feeds, newsletter_pages, views

app_name = "blog"


def blog_pages(prefix: str) -> list:
    """A blog's pages under `prefix` ("" on its own domain), by the names Channel.public_url uses
    (a newsletter's index takes its subscribe form's posts too)."""
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
    path("newsletter/confirm/<slug:token>/", newsletter_pages.newsletter_confirm, name="newsletter_confirm"),
    path(
        "newsletter/unsubscribe/<slug:token>/", newsletter_pages.newsletter_unsubscribe, name="newsletter_unsubscribe"
    ),
    *blog_pages("blog/<slug:handle>/"),
]
