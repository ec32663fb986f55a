"""The HTTP layer: rules that hold for every response, whichever view (or none) produced it."""

import logging

from django.utils.cache import patch_cache_control, patch_vary_headers

from apps.api import ratelimit
from apps.api.errors import is_api_path, json_error, payload_too_large_message
from apps.core.http import body_limit, content_length

logger = logging.getLogger(__name__)

API_VERSION = "1"

# HTML pages (the admin, the API docs) load scripts and styles from this site only; images may also
# come over HTTPS (a mailed edition's images in its preview, a srcdoc frame under this policy; a
# post body's preview has the blogs' own policy, apps/blog/site.py). The docs page has an inline
# <style> block, hence 'unsafe-inline' for styles; never for scripts.
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: https:; "
    "font-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# Everything else is data that no browser should render, load anything for, or frame.
DATA_CSP = "default-src 'none'; frame-ancestors 'none'"


class SecurityHeadersMiddleware:
    """X-API-Version and a Content-Security-Policy on every response (Django's SecurityMiddleware
    and XFrameOptionsMiddleware add HSTS, nosniff, the referrer policy and X-Frame-Options)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("X-API-Version", API_VERSION)
        if response.status_code == 304:
            # A 304's headers update those the browser stored with the page (ConditionalGetMiddleware
            # keeps the validators only): a policy here would replace the page's own.
            return response
        is_html = response.get("Content-Type", "").startswith("text/html")
        response.headers.setdefault("Content-Security-Policy", PAGE_CSP if is_html else DATA_CSP)
        return response


class ApiHttpMiddleware:
    """Every request under /v<N>/: the body limits (411, 413, 415), the failed-authentication budget
    of its address and, on the way out, the rate-limit headers, `Vary` and `Cache-Control`.

    The account budget is charged by the authentication class, which is where the account becomes
    known (see ratelimit.enforce_account_budget); a response that was not charged to an account
    reports the address's budget of failed authentications. A 401 is counted in that budget, and
    once the address has used it up its 401s become 429s: guessing slows down, while a request
    whose key verifies is served as usual, so one client's stale key never locks out the others
    behind the same address.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not is_api_path(request):
            return self.get_response(request)
        response = self.refuse_body(request) or self.get_response(request)

        budget = getattr(request, ratelimit.REQUEST_ATTRIBUTE, None)
        if budget is None:
            address = ratelimit.client_address(request)
            failed = response.status_code == 401
            budget = ratelimit.auth_failures(address, count=failed)
            if failed and budget.exceeded:
                response = json_error(
                    429,
                    f"Too many failed authentications from this address ({budget.limit} per hour).",
                    headers={"Retry-After": str(budget.retry_after())},
                )
            elif failed and budget.exhausted:
                logger.warning("Address %s reached the limit of %s failed authentications", address, budget.limit)
        for name, value in budget.headers().items():
            response[name] = value
        patch_vary_headers(response, ["Authorization"])
        if not response.has_header("Cache-Control"):
            # The representation depends on the key: only the client may keep it, and it revalidates
            # with the ETag before reuse.
            patch_cache_control(response, private=True, no_cache=True)
        return response

    @staticmethod
    def refuse_body(request):
        """411/413 from the headers alone, before anything reads the body. DRF's parsers stream the
        body straight from the request, past Django's own DATA_UPLOAD_MAX_MEMORY_SIZE check."""
        length = content_length(request)
        if "HTTP_TRANSFER_ENCODING" in request.META and not length:
            # Django reads no body without Content-Length: a chunked body would silently become empty.
            return json_error(411, "Send the request body with a Content-Length header (chunked bodies are refused).")
        limit = body_limit(request.path_info, request.method)
        if length > limit:
            return json_error(413, payload_too_large_message(limit))
        return None

    def process_view(self, request, view_func, view_args, view_kwargs):
        """415 for a body none of the view's parsers accepts, even when the view never reads it."""
        view_class = getattr(view_func, "cls", None)  # set by DRF's as_view()
        if view_class is None or not is_api_path(request) or not content_length(request):
            return None
        view = view_class(**view_func.initkwargs)
        if view.get_content_negotiator().select_parser(request, view.get_parsers()) is None:
            media_type = request.META.get("CONTENT_TYPE") or "none"
            return json_error(
                415, f"Unsupported media type {media_type!r}: send the body as JSON (Content-Type: application/json)."
            )
        return None
