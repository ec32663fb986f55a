"""The error pages people see (400, 403, 404, 500). In the Settings area (the admin, at ADMIN_URL)
they are the admin's own pages, with the signed-in user's header and menu; elsewhere they are in
the look of the service's web pages (templates/web/base.html). Under /v<N>/ the API answers JSON
instead: apps/api/errors.py decides that, and hands every other path to the views here.

The 500 page renders from its template and a few plain values only: no request, so no context
processors and no database (the error may be the database's), as Django's own server_error. The
rule that no page shows a traceback is DEBUG's: with DEBUG off (always in production) Django calls
these views and they show none."""

import logging

from django.conf import settings
from django.contrib import admin
from django.http import HttpResponse, HttpResponseServerError
from django.shortcuts import render
from django.template import loader
from django.urls import get_script_prefix

logger = logging.getLogger(__name__)

# What a 500 answers when even its template fails (a broken template directory, say).
LAST_RESORT_500 = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Server error</title></head>'
    "<body><h1>Server error</h1><p>Something went wrong on our side. Please try again later.</p></body></html>"
)


def in_settings_area(request) -> bool:
    return request.path_info.startswith(f"/{settings.ADMIN_URL}")


def _page(request, template: str, status: int, context: dict | None = None) -> HttpResponse:
    context = {"home_url": get_script_prefix(), **(context or {})}
    # Without a user (an error raised before the authentication middleware ran) the admin's
    # header has nobody to show: such a request gets the plain page.
    if in_settings_area(request) and hasattr(request, "user"):
        context = {**admin.site.each_context(request), **context}
        return render(request, f"admin/{template}", context, status=status)
    return render(request, template, context, status=status)


def bad_request(request, exception) -> HttpResponse:
    return _page(request, "400.html", 400, {"title": "Bad request"})


def permission_denied(request, exception) -> HttpResponse:
    asked = "view this page" if request.method in ("GET", "HEAD") else "do this"
    return _page(request, "403.html", 403, {"title": "Permission denied", "asked": asked})


def page_not_found(request, exception) -> HttpResponse:
    return _page(request, "404.html", 404, {"title": "Page not found"})


def server_error(request) -> HttpResponse:
    in_admin = in_settings_area(request)
    context = {
        "home_url": get_script_prefix() + (settings.ADMIN_URL if in_admin else ""),
        "in_settings_area": in_admin,
        # Set by the request log's middleware; the operator finds the error's log lines by it.
        "request_id": getattr(request, "request_id", None),
    }
    try:
        return HttpResponseServerError(loader.get_template("500.html").render(context))
    except Exception:
        # Any failure here would reach the web server as its own bare 500; this one at least says so.
        logger.exception("The 500 page could not be rendered")
        return HttpResponseServerError(LAST_RESORT_500)
