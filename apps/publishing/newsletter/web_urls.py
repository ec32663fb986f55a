"""The newsletter's addresses at the root of the service's host (its `DestinationKind.urls`, which
config/urls.py includes): its e-mail providers' reports of bounces and complaints (tracking.py).
Its /v1 endpoints are in urls.py; the pages its e-mails link to are its site's (pages.py, PAGES)."""

from anymail.urls import urlpatterns as anymail_urlpatterns
from django.conf import settings
from django.urls import include, path

app_name = "newsletter"

urlpatterns = []

# Where the providers check who calls (conf.py, NEWSLETTER_TRACKING_WEBHOOKS). Anymail's
# inbound-mail views are left out: nothing takes mail in.
if settings.NEWSLETTER_TRACKING_WEBHOOKS:
    tracking_webhooks = [pattern for pattern in anymail_urlpatterns if pattern.name.endswith("tracking_webhook")]
    urlpatterns.append(path("newsletter/anymail/", include((tracking_webhooks, "anymail"))))
