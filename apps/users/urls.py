"""The users app's /v1 endpoints (included from config/urls.py); its web pages are in web_urls.py."""

from django.urls import path

from apps.users.api import ProfileView, UserDetailView, UsersView

urlpatterns = [
    path("users", UsersView.as_view(), name="user-list"),
    # Before users/<id>, which would otherwise take "profile" for an id.
    path("users/profile", ProfileView.as_view(), name="user-profile"),
    path("users/<str:user_id>", UserDetailView.as_view(), name="user-detail"),
]
