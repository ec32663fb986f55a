"""How an API request signs in: `Authorization: Bearer <API key>` (REST_FRAMEWORK's
DEFAULT_AUTHENTICATION_CLASSES), and how the OpenAPI schema names that scheme."""

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from apps.api.ratelimit import enforce_account_budget
from apps.users.credentials import api_key_touch
from apps.users.selectors import api_key_find

INVALID_KEY_MESSAGE = "Invalid API key provided."


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <key>`: one indexed lookup by the key's prefix, one SHA-256, one
    constant-time comparison. Sets request.user to the key's owner and request.auth to the key."""

    keyword = "Bearer"

    def authenticate(self, request):
        # What DRF's get_authorization_header reads, without building a map of every header of the
        # request first. A WSGI header is text decoded as latin-1, as DRF decodes it.
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "bearer" or not raw or " " in raw:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: expected 'Bearer <API key>'.")
        api_key = api_key_find(raw)
        if api_key is None:
            raise exceptions.AuthenticationFailed(INVALID_KEY_MESSAGE)
        if api_key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        if not api_key.is_usable(timezone.now()):
            raise exceptions.AuthenticationFailed("This API key has expired.")
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed("The user who owns this API key is not active.")
        # Charged here, the moment the account is known and before any view's permission classes,
        # so every authenticated request counts once (403s and 404s too) whatever the view declares.
        enforce_account_budget(request._request, api_key.account)
        api_key_touch(api_key=api_key)
        return api_key.user, api_key

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    # drf-spectacular finds it by its target, the class above, whenever that class is in use.
    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer cps_xxxxxxxx_...`.",
        }
