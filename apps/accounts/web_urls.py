"""Web pages (HTML, sessions) of the accounts app; its /v1 endpoints are in urls.py."""

from django.contrib.auth.views import LogoutView
from django.urls import path

from apps.accounts import views

urlpatterns = [
    path("sso/login", views.sso_login, name="sso-login"),
    path("account/", views.home, name="web-home"),
    path("account/login/", views.SignInView.as_view(), name="web-login"),
    path("account/logout/", LogoutView.as_view(next_page="web-login"), name="web-logout"),
]
