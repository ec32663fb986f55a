"""The stories app's /v1 endpoints (included from config/urls.py)."""

urlpatterns: list = []
