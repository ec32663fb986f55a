"""The stories app's addresses at the root (included from config/urls.py)."""

urlpatterns: list = []
