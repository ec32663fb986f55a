"""The posts app's /v1 endpoints (included from config/urls.py)."""

from django.urls import path

from apps.posts.api import (
    ChannelPostDetailView,
    ChannelPostListView,
    PostDetailView,
    PostPublishView,
    PostUnpublishView,
)
from apps.posts.changes_api import ChannelChangesView

urlpatterns = [
    path("channels/<int:channel_id>/posts", ChannelPostListView.as_view(), name="channel-post-list"),
    path("channels/<int:channel_id>/posts/<int:id>", ChannelPostDetailView.as_view(), name="channel-post-detail"),
    path("channels/<int:channel_id>/posts/<int:id>/publish", PostPublishView.as_view(), name="channel-post-publish"),
    path(
        "channels/<int:channel_id>/posts/<int:id>/unpublish",
        PostUnpublishView.as_view(),
        name="channel-post-unpublish",
    ),
    path("posts/<int:id>", PostDetailView.as_view(), name="post-detail"),
    path("channels/<int:channel_id>/changes", ChannelChangesView.as_view(), name="channel-changes"),
]
