"""A blog on its own domain (a request whose Host is the domain of a blog channel, see
middleware.py): the blog's pages at the root, by the same names as under /blog/<handle>/."""

from django.urls import include, path

from apps.blog import views
from apps.blog.urls import blog_pages

pages = [
    path("robots.txt", views.robots, name="robots"),
    path("favicon.ico", views.favicon, name="favicon"),
    *blog_pages(""),
]

# A root URLconf's app_name names no namespace; an include does, so "blog:…" reverses here too.
urlpatterns = [path("", include((pages, "blog")))]

handler404 = "apps.blog.views.not_found"
