"""The media library's /v1 endpoints (included from config/urls.py)."""

from django.urls import path

from apps.media.api import MediaView, MediumView

urlpatterns = [
    path("media", MediaView.as_view(), name="media-list"),
    path("media/<int:id>", MediumView.as_view(), name="media-detail"),
]
