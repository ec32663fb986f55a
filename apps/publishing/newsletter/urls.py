"""The newsletter's /v1 endpoints (its `DestinationKind.api_urls`, included by config/urls.py); its public
pages are in pages.py, routed by web_urls.py."""

from django.urls import path

from apps.publishing.newsletter.api import SubscriberDetailView, SubscriberListView

urlpatterns = [
    path("channels/<int:channel_id>/subscribers", SubscriberListView.as_view(), name="channel-subscriber-list"),
    path(
        "channels/<int:channel_id>/subscribers/<int:subscriber_id>",
        SubscriberDetailView.as_view(),
        name="channel-subscriber-detail",
    ),
]
