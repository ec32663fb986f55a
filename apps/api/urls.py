from django.urls import path

from apps.accounts.api import MeView, SsoTokensView
from apps.channels.api import ChannelDetailView, ChannelListView
from apps.posts.api import (
    ChannelPostDetailView,
    ChannelPostListView,
    PostDetailView,
    PostPublishView,
    PostUnpublishView,
)
from apps.users.api import ProfileView, UserDetailView, UsersView

urlpatterns = [
    path("me", MeView.as_view(), name="me"),
    path("channels", ChannelListView.as_view(), name="channel-list"),
    path("channels/<int:id>", ChannelDetailView.as_view(), name="channel-detail"),
    path("channels/<int:channel_id>/posts", ChannelPostListView.as_view(), name="channel-post-list"),
    path("channels/<int:channel_id>/posts/<int:id>", ChannelPostDetailView.as_view(), name="channel-post-detail"),
    path("channels/<int:channel_id>/posts/<int:id>/publish", PostPublishView.as_view(), name="channel-post-publish"),
    path(
        "channels/<int:channel_id>/posts/<int:id>/unpublish",
        PostUnpublishView.as_view(),
        name="channel-post-unpublish",
    ),
    path("posts/<int:id>", PostDetailView.as_view(), name="post-detail"),
    path("sso_tokens", SsoTokensView.as_view(), name="sso-tokens"),
    path("users", UsersView.as_view(), name="user-list"),
    # Before users/<id>, which would otherwise take "profile" for an id.
    path("users/profile", ProfileView.as_view(), name="user-profile"),
    path("users/<str:user_id>", UserDetailView.as_view(), name="user-detail"),
]
