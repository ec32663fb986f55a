"""Web pages (HTML) of the users app."""

from django.urls import path

from apps.users import views

urlpatterns = [
    path("account/invitation", views.accept_invitation, name="invitation-accept"),
    path("account/password/<uidb64>/<token>/", views.SetPasswordView.as_view(), name="password-set"),
    path("account/password/done/", views.password_set_done, name="password-set-done"),
]
