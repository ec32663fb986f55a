"""The stories app's /v1 endpoints (included from config/urls.py)."""

from django.urls import path

from apps.stories.api import StoryDetailView, StoryListView, StoryRetryView

urlpatterns = [
    path("stories", StoryListView.as_view(), name="story-list"),
    path("stories/<int:id>", StoryDetailView.as_view(), name="story-detail"),
    path("stories/<int:id>/retry", StoryRetryView.as_view(), name="story-retry"),
]
