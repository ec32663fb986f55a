"""The calendar feed's public address: read by calendar apps, which cannot sign in, so the secret in
the address is the credential (apps/stories/feed_services.py)."""

from django.http import Http404, HttpResponse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_safe

from apps.core.errors import NotFound
from apps.stories.feed_services import calendar_feed_read
from apps.stories.feeds import calendar_bytes


@require_safe
def calendar_feed(request, token: str):
    # The URL keyword is `token`: the request log writes the path with it left out
    # (apps/api/observability.py), so no log line gives anyone the feed.
    try:
        feed = calendar_feed_read(raw=token)
    except NotFound as exc:
        raise Http404(exc.message) from None
    response = HttpResponse(calendar_bytes(user=feed.user), content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="schedule.ics"'
    # One person's schedule: no shared cache keeps it, no search engine lists it.
    patch_cache_control(response, private=True)
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Referrer-Policy"] = "no-referrer"
    return response
