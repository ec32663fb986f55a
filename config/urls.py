from anymail.urls import urlpatterns as anymail_urlpatterns
from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from apps.api import health
from apps.api.views import UnknownPathView

v1 = [
    path("", include("apps.channels.urls")),
    path("", include("apps.posts.urls")),
    path("", include("apps.publishing.newsletter.urls")),
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
    # The blog channels' public site (and the Settings area's previews).
    path("", include("apps.blog.urls")),
    re_path(r"^v\d+/", UnknownPathView.as_view()),
]

# E-mail providers' reports of bounces and complaints (apps/publishing/newsletter/tracking.py), where
# they check who calls (config/settings.py). Anymail's inbound-mail views are left out: nothing takes mail in.
if settings.NEWSLETTER_TRACKING_WEBHOOKS:
    tracking_webhooks = [pattern for pattern in anymail_urlpatterns if pattern.name.endswith("tracking_webhook")]
    urlpatterns.append(path("newsletter/anymail/", include((tracking_webhooks, "anymail"))))

handler400 = "apps.api.errors.bad_request"
handler403 = "apps.api.errors.permission_denied"
handler404 = "apps.api.errors.page_not_found"
handler500 = "apps.api.errors.server_error"
