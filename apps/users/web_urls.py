"""Web pages (HTML) of the users app."""

from django.contrib.auth.views import LogoutView
from django.urls import path

from apps.users import views

urlpatterns = [
    path("sso/login", views.sso_login, name="sso-login"),
    path("account/", views.home, name="web-home"),
    path("account/login/", views.SignInView.as_view(), name="web-login"),
    path("account/logout/", LogoutView.as_view(next_page="web-login"), name="web-logout"),
    path("account/invitation", views.accept_invitation, name="invitation-accept"),
    path("account/password/<uidb64>/<token>/", views.SetPasswordView.as_view(), name="password-set"),
    path("account/password/done/", views.password_set_done, name="password-set-done"),
]
