"""The accounts app's /v1 endpoints (included from config/urls.py); its web pages are in web_urls.py."""

from django.urls import path

from apps.accounts.api import MeView, SsoTokensView

urlpatterns = [
    path("me", MeView.as_view(), name="me"),
    path("sso_tokens", SsoTokensView.as_view(), name="sso-tokens"),
]
