from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from apps.api.views import UnknownPathView

v1 = [
    path("", include("apps.api.urls")),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi"), name="docs"),
]

urlpatterns = [
    path(settings.ADMIN_URL, admin.site.urls),
    path("v1/", include(v1)),
    re_path(r"^v\d+/", UnknownPathView.as_view()),
]

handler400 = "apps.api.errors.bad_request"
handler404 = "apps.api.errors.page_not_found"
handler500 = "apps.api.errors.server_error"
