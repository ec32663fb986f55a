"""The Settings area's page of the signed-in member's own calendar feed: whether they have one, and
buttons (POST, CSRF) to create, replace and revoke it. The feed's address is shown once, on the answer
to the POST that made it, as an API key is: only its digest is stored, so no later page can show it.
Its URLs are the site's own (apps/settings_area/site.py get_urls): the page is the user's, of no
model, so every member who enters the Settings area reaches it."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_http_methods

from apps.core.admin import ShownOnce, first_message
from apps.core.errors import DomainError
from apps.stories.feed_services import (
    calendar_feed_create,
    calendar_feed_replace,
    calendar_feed_revoke,
    may_have_feed,
)
from apps.stories.feeds import AHEAD, PAST, calendar_feed_of

TEMPLATE = "admin/stories/calendar_feed.html"
# What each button does: its service, and the words of the page that shows the new address.
MAKES = {
    "create": (calendar_feed_create, "Your calendar feed is ready"),
    "replace": (calendar_feed_replace, "Your calendar feed has a new address"),
}


def feed_urls(site) -> list:
    @require_http_methods(["GET", "HEAD", "POST"])
    def page(request):
        return calendar_feed_page(site, request)

    return [path("calendar-feed/", site.admin_view(page), name="calendar_feed")]


def _context(site, request, **extra) -> dict:
    user = request.user
    return {
        **site.each_context(request),
        "title": "Calendar feed",
        "feed": calendar_feed_of(user=user),
        "may_have_feed": may_have_feed(user),
        "days_back": PAST.days,
        "days_ahead": AHEAD.days,
        **extra,
    }


def calendar_feed_page(site, request):
    if request.method != "POST":
        return TemplateResponse(request, TEMPLATE, _context(site, request))
    here = reverse("admin:calendar_feed", current_app=site.name)
    action = request.POST.get("action", "")
    try:
        if action == "revoke":
            revoked = calendar_feed_revoke(user=request.user)
            messages.success(
                request,
                "Your calendar feed is revoked: its address shows nothing any more."
                if revoked
                else "You had no calendar feed.",
            )
            return HttpResponseRedirect(here)
        if action not in MAKES:
            messages.error(request, "Choose one of the page's buttons.")
            return HttpResponseRedirect(here)
        make, heading = MAKES[action]
        _feed, raw = make(user=request.user)
    except DomainError as exc:
        messages.error(request, f"Nothing was changed: {first_message(exc)}")
        return HttpResponseRedirect(here)
    # The address, on this answer only: a redirect could carry it only in the session or a cookie.
    # The site's admin_view sends every page of it with Cache-Control: no-store.
    address = ShownOnce(f"{settings.SITE_URL}{reverse('calendar-feed', args=[raw])}")
    return TemplateResponse(request, TEMPLATE, _context(site, request, heading=heading, address=address))
