"""The newsletter's addresses at the root of the service's host (its `DestinationKind.urls`, which
config/urls.py includes): the pages the links of its e-mails open (pages.py), whatever the
newsletter's domain, and its e-mail providers' reports of bounces and complaints (tracking.py).
Its /v1 endpoints are in urls.py."""

from anymail.urls import urlpatterns as anymail_urlpatterns
from django.conf import settings
from django.urls import include, path

from apps.publishing.newsletter import pages

app_name = "newsletter"

urlpatterns = [
    path("newsletter/confirm/<slug:token>/", pages.confirm, name="confirm"),
    path("newsletter/unsubscribe/<slug:token>/", pages.unsubscribe, name="unsubscribe"),
]

# Where the providers check who calls (config/settings.py, NEWSLETTER_TRACKING_WEBHOOKS). Anymail's
# inbound-mail views are left out: nothing takes mail in.
if settings.NEWSLETTER_TRACKING_WEBHOOKS:
    tracking_webhooks = [pattern for pattern in anymail_urlpatterns if pattern.name.endswith("tracking_webhook")]
    urlpatterns.append(path("newsletter/anymail/", include((tracking_webhooks, "anymail"))))
