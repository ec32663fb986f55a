"""The stories app's addresses at the root (included from config/urls.py): the calendar feeds."""

from django.urls import path

from apps.stories.views import calendar_feed

urlpatterns = [path("calendar/<str:token>.ics", calendar_feed, name="calendar-feed")]
