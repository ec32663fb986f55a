"""The public site on the service's host: each blog under /blog/<handle>/, the previews of the
Settings area, robots.txt. The same page names as on a blog's own domain (domain_urls.py)."""

from django.urls import path

from apps.blog import feeds, views

app_name = "blog"

urlpatterns = [
    path("", views.home, name="home"),
    path("robots.txt", views.robots, name="robots"),
    path("blog-domains/check", views.domain_check, name="domain_check"),
    path("preview/<int:post_id>/", views.preview, name="preview"),
    path("blog/<slug:handle>/", views.index, name="index"),
    path("blog/<slug:handle>/feed.xml", feeds.feed, name="feed"),
    path("blog/<slug:handle>/sitemap.xml", feeds.sitemap, name="sitemap"),
    path("blog/<slug:handle>/tags/<path:tag>/", views.tag, name="tag"),
    path("blog/<slug:handle>/<slug:slug>/", views.post, name="post"),
]
