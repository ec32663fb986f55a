"""The HTTP API: Django REST framework, the OpenAPI schema, API keys, pages, the caches of rendered
answers, idempotency and the rate limits."""

from apps.core import env

# --- Django REST framework and the OpenAPI schema ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.users.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["apps.api.permissions.HasRequiredScope"],
    "DEFAULT_RENDERER_CLASSES": ["apps.api.rendering.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "apps.api.rendering.ContentNegotiation",
    "DEFAULT_PARSER_CLASSES": ["apps.api.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "apps.api.pagination.PagePagination",
    "DEFAULT_SCHEMA_CLASS": "apps.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "apps.api.errors.exception_handler",
    # Reverse proxies in front of gunicorn; the client address is the X-Forwarded-For entry this many
    # hops from the right (0: REMOTE_ADDR, since the header can be forged).
    "NUM_PROXIES": env.non_negative_int("NUM_PROXIES", 0),
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Content Publishing Service API",
    "DESCRIPTION": (
        "Channels, posts, the publishing workflow of `api` channels, users and single sign-on "
        "tokens. Every endpoint takes `Authorization: Bearer <API key>`. Errors use the envelope "
        '`{"error": {"code", "message", "details"?}}`.'
    ),
    "VERSION": "1.0.0",
    # 3.1 for `webhooks`: every event a delivery can carry, typed (apps/api/webhook_schema.py).
    "OAS_VERSION": "3.1.0",
    "WEBHOOKS": "apps.api.webhook_schema.WEBHOOKS",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SCHEMA_PATH_PREFIX": "/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "apps.api.webhook_schema.complete_webhooks",
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.api.schema.add_http_layer",
    ],
    "ENUM_NAME_OVERRIDES": {
        "UserRoleEnum": "apps.users.models.Role",
        "UserStatusEnum": "apps.users.models.Status",
        "UserPermissionEnum": "apps.users.models.Permission",
        "UserEventKindEnum": "apps.users.serializers.USER_EVENT_KINDS",
        "LoginMethodEnum": "apps.users.models.LoginMethod",
        "MediaKindEnum": "apps.posts.models.MediaKind",
        "PlatformEnum": "apps.channels.models.Platform",
        "PublicationStatusEnum": "apps.posts.models.PublicationStatus",
        "StoryStatusEnum": "apps.stories.models.StoryStatus",
        "DestinationStateEnum": "apps.stories.models.DestinationState",
    },
}

# --- API keys and pagination ---
API_KEY_DEFAULT_TTL_DAYS = env.positive_int("API_KEY_DEFAULT_TTL_DAYS", 365)
# last_used_at is written at most this often per key, so reads do not turn into writes.
API_KEY_LAST_USED_RESOLUTION = env.positive_int("API_KEY_LAST_USED_RESOLUTION", 60)
PAGE_SIZE_DEFAULT = 20
PAGE_SIZE_MAX = 100
# The change feed (GET /v1/channels/{id}/changes) keeps deleted posts' tombstones this long; a
# cursor issued longer ago, or older than the last tombstone swept, answers 410 `cursor_expired`.
CHANGES_RETENTION = env.duration("CHANGES_RETENTION", "P30D")
# Rendered channels and posts are kept this long in the default cache (Redis, or the process's
# memory without REDIS_URL), under their channel's version; 0 turns the cache off. A change makes
# a new version at once, so this bounds memory, not staleness (apps/api/representations.py).
API_CACHE_SECONDS = env.non_negative_int("API_CACHE_SECONDS", 3600)
# With PostgreSQL and Redis, API keys (with their account and user) and channels' versions are read
# from Redis, deleted by the database's notifications when their rows change (apps/core/coherence.py):
# a cached read asks the database nothing. This is their time to live, which bounds staleness only
# for changes made outside the service (psql) or while Redis was unreachable; 0 reads them from the
# database on every request.
API_LOOKUP_CACHE_SECONDS = env.non_negative_int("API_LOOKUP_CACHE_SECONDS", 300)
# The answer to a write sent with an Idempotency-Key is given again to the same request for this long
# (apps/api/idempotency.py); past it the key is free, and the request runs again.
IDEMPOTENCY_KEY_TTL = env.duration("IDEMPOTENCY_KEY_TTL", "PT24H")
# Where those answers are kept, with the API keys they belong to: the module apps/api/idempotency.py
# asks (named here, so that the HTTP layer imports no app).
IDEMPOTENCY_STORE = "apps.users.idempotency"

# --- Rate limits: requests per account per clock hour, by plan; empty means unlimited ---
RATE_LIMITS = {
    "free": env.limit("RATE_LIMIT_FREE", "1000"),
    "starter": env.limit("RATE_LIMIT_STARTER", "10000"),
    "professional": env.limit("RATE_LIMIT_PROFESSIONAL", "50000"),
    "enterprise": env.limit("RATE_LIMIT_ENTERPRISE", ""),
}
# 401s per client address per clock hour; past it the address gets 429 for every /v1 request.
RATE_LIMIT_AUTH_FAILURES = env.limit("RATE_LIMIT_AUTH_FAILURES", "100")

# Largest request body in bytes, for the API (413) and for Django's own form parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.positive_int("MAX_REQUEST_BODY_BYTES", 1024 * 1024)
# The paths that take a larger body (an upload), POST only: {path: bytes}. Apps add theirs in
# their conf.py (the media library's MEDIA_MAX_BYTES); the web server and the API apply them.
REQUEST_BODY_LIMITS: dict[str, int] = {}
