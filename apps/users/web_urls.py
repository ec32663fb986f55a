"""Web pages (HTML) of the users app."""

from django.urls import path

from apps.users import views

urlpatterns = [
    path("account/invitation", views.accept_invitation, name="invitation-accept"),
]
