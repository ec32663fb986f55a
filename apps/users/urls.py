"""The users app's /v1 endpoints: the Users endpoints, and an API key's own (`/v1/me`, `/v1/sso_tokens`).
Included from config/urls.py; its web pages are in web_urls.py."""

from django.urls import path

from apps.users.api import ProfileView, UserDetailView, UsersView
from apps.users.keys_api import MeView, SsoTokensView

urlpatterns = [
    path("me", MeView.as_view(), name="me"),
    path("sso_tokens", SsoTokensView.as_view(), name="sso-tokens"),
    path("users", UsersView.as_view(), name="user-list"),
    # Before users/<id>, which would otherwise take "profile" for an id.
    path("users/profile", ProfileView.as_view(), name="user-profile"),
    path("users/<str:user_id>", UserDetailView.as_view(), name="user-detail"),
]
