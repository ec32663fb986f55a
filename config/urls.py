from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from apps.api import health
from apps.api.views import UnknownPathView
from apps.core.destinations import kinds

v1 = [
    path("", include("apps.channels.urls")),
    path("", include("apps.posts.urls")),
    path("", include("apps.media.urls")),
    path("", include("apps.stories.urls")),
    # Each destination kind's own endpoints (the registry, apps/core/destinations.py).
    *(path("", include(kind.api_urls)) for kind in kinds() if kind.api_urls),
    path("", include("apps.users.urls")),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    # The split view serves its start-up script as a file, so the page needs no inline script (CSP).
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="openapi"), name="docs"),
]

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path(settings.ADMIN_URL, admin.site.urls),
    path("v1/", include(v1)),
    # Web pages: single sign-on, sign-in and invitations.
    path("", include("apps.users.web_urls")),
    # Uploaded images, where the web process serves them (the embedded default).
    path("", include("apps.media.web_urls")),
    # The calendar feeds of the schedule (a calendar app reads them with a secret address).
    path("", include("apps.stories.web_urls")),
    # The blog channels' public site (and the Settings area's previews).
    path("", include("apps.blog.urls")),
    # Each destination kind's addresses at the root, after the blog's so that none hides a page of
    # it: the pages its e-mails link to, its providers' webhooks.
    *(path("", include(kind.urls)) for kind in kinds() if kind.urls),
    re_path(r"^v\d+/", UnknownPathView.as_view()),
]

handler400 = "apps.api.errors.bad_request"
handler403 = "apps.api.errors.permission_denied"
handler404 = "apps.api.errors.page_not_found"
handler500 = "apps.api.errors.server_error"
