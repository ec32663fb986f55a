"""The stored files at MEDIA_URL's path on this site (included from config/urls.py)."""

from django.urls import path

from apps.media.views import medium_file

urlpatterns = [path("media/<str:name>", medium_file, name="medium-file")]
