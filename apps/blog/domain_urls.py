"""A blog on its own domain (a request whose Host is the domain of a blog channel, see
middleware.py): the blog's pages at the root, by the same names as under /blog/<handle>/."""

from django.urls import include, path

from apps.blog import feeds, views

pages = [
    path("", views.index, name="index"),
    path("robots.txt", views.robots, name="robots"),
    path("feed.xml", feeds.feed, name="feed"),
    path("sitemap.xml", feeds.sitemap, name="sitemap"),
    path("tags/<path:tag>/", views.tag, name="tag"),
    path("<slug:slug>/", views.post, name="post"),
]

# A root URLconf's app_name names no namespace; an include does, so "blog:…" reverses here too.
urlpatterns = [path("", include((pages, "blog")))]

handler404 = "apps.blog.views.not_found"
