"""The channels app's /v1 endpoints (included from config/urls.py)."""

from django.urls import path

from apps.channels.api import ChannelDetailView, ChannelListView

urlpatterns = [
    path("channels", ChannelListView.as_view(), name="channel-list"),
    path("channels/<int:id>", ChannelDetailView.as_view(), name="channel-detail"),
]
