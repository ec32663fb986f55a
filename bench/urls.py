"""The service's URLs, plus the floor's plain Django views under /v1/floor/ and, for the blog
part, /floor/blog/ (so the same middleware stack serves both)."""

from django.urls import path

from bench import floor
from config import urls as service_urls

urlpatterns = [
    path("v1/floor/me", floor.me),
    path("v1/floor/channels/<int:channel_id>/posts", floor.channel_posts),
    path("v1/floor/channels/<int:channel_id>/posts/<int:post_id>", floor.channel_post),
    path("v1/floor/channels/<int:channel_id>/write", floor.write),
    path("v1/floor/channels/<int:channel_id>/posts/new", floor.create_post),
    path("v1/floor/channels/<int:channel_id>/posts/<int:post_id>/edit", floor.edit_post),
    path("floor/blog/<slug:handle>/", floor.blog_index),
    path("floor/blog/<slug:handle>/<slug:slug>/", floor.blog_post),
    *service_urls.urlpatterns,
]

handler400 = service_urls.handler400
handler404 = service_urls.handler404
handler500 = service_urls.handler500
