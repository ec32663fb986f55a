"""The stored files at MEDIA_URL's path on this site (included from config/urls.py)."""

from django.urls import path

from apps.media.storage import SERVED_AT
from apps.media.views import medium_file

urlpatterns = [path(f"{SERVED_AT.strip('/')}/<str:name>", medium_file, name="medium-file")]
