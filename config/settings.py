"""Settings for the content publishing service.

Every knob is read from the environment (see the README's configuration table). The defaults
run the service on one machine with nothing installed: SQLite and a filesystem Celery transport.
Production differs only by environment variables.
"""

import ipaddress
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.dateparse import parse_duration

from apps.core.hosts import AllowedHosts

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _env_list_of_ints(name: str, default: str) -> list[int]:
    raw = env.str(name, default=default)
    try:
        values = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be comma-separated integers, got {raw!r}") from exc
    if any(value < 0 for value in values):
        raise ImproperlyConfigured(f"{name} must not contain negative numbers, got {raw!r}")
    return values


def _bool(name: str, *, default: bool) -> bool:
    """true/false, 1/0, yes/no, on/off; anything else stops the start-up (environ's own reading
    takes every unknown word as false)."""
    raw = env.str(name, default=str(default)).strip().lower()
    if raw not in {"true", "false", "1", "0", "yes", "no", "on", "off"}:
        raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")
    return raw in {"true", "1", "yes", "on"}


def _positive_int(name: str, default: int) -> int:
    value = env.int(name, default=default)
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be a positive integer, got {value}")
    return value


def _duration(name: str, default: str) -> timedelta:
    """A positive duration: seconds (`432000`), ISO 8601 (`P5D`, `PT90M`) or Django's `5 00:00:00`."""
    raw = env.str(name, default=default).strip()
    value = parse_duration(raw)
    if value is None or value <= timedelta(0):
        raise ImproperlyConfigured(f"{name} must be a positive duration (seconds, or ISO 8601 like P5D), got {raw!r}")
    return value


def _limit(name: str, default: str) -> int | None:
    """A positive integer, or None (no limit) when the variable is set but empty."""
    raw = env.str(name, default=default).strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise ImproperlyConfigured(f"{name} must be a positive integer or empty (no limit), got {raw!r}")
    return int(raw)


def _int_between(name: str, default: int, low: int, high: int) -> int:
    value = env.int(name, default=default)
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name} must be between {low} and {high}, got {value}")
    return value


def _non_negative_int(name: str, default: int) -> int:
    value = env.int(name, default=default)
    if value < 0:
        raise ImproperlyConfigured(f"{name} must not be negative, got {value}")
    return value


ENVIRONMENT = env.str("ENVIRONMENT", default="development")
if ENVIRONMENT not in {"development", "production"}:
    raise ImproperlyConfigured(f"ENVIRONMENT must be 'development' or 'production', got {ENVIRONMENT!r}")

IS_PRODUCTION = ENVIRONMENT == "production"
DEBUG = _bool("DEBUG", default=False)

# Outside development a real secret is mandatory; the development default only ever signs local
# sessions on a developer's machine.
if IS_PRODUCTION:
    SECRET_KEY = env.str("SECRET_KEY")
else:
    SECRET_KEY = env.str("SECRET_KEY", default="insecure-development-key-do-not-use-in-production")

# The service's own host names. A blog's own domain (a channel setting) is accepted as well, for the
# requests that name it, without being listed here (apps/core/hosts.py).
ALLOWED_HOSTS = AllowedHosts(env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"]))

# Production refuses, at start-up, what would expose it: debug pages (settings, code, SQL), a
# secret short enough to guess (Django's deploy check asks for 50 characters, 5 of them different),
# and a Host header taken from anyone (password-reset and invitation links are built from it).
SECRET_KEY_MIN_LENGTH = 50
if IS_PRODUCTION:
    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be false when ENVIRONMENT=production")
    if len(SECRET_KEY) < SECRET_KEY_MIN_LENGTH or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be at least {SECRET_KEY_MIN_LENGTH} characters, at least 5 of them different, when "
            "ENVIRONMENT=production (for example: python -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    if "*" in ALLOWED_HOSTS or not ALLOWED_HOSTS:
        raise ImproperlyConfigured(
            "ALLOWED_HOSTS must name the service's host names (not '*') when ENVIRONMENT=production"
        )
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
ADMIN_URL = env.str("ADMIN_URL", default="admin/").strip("/") + "/"

INSTALLED_APPS = [
    # django.contrib.admin with the service's admin site, the Settings area (apps/settings_area).
    "apps.settings_area.apps.SettingsAreaConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sitemaps",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "apps.api",
    "apps.users",
    "apps.accounts",
    "apps.channels",
    "apps.posts",
    "apps.webhooks",
    "apps.publishing",
    "apps.publishing.git",
    "apps.publishing.linkedin",
    "apps.publishing.newsletter",
    "apps.blog",
    "apps.demo",
]

MIDDLEWARE = [
    # Outermost, so the request log times everything and every response carries X-Request-ID.
    "apps.api.observability.RequestLogMiddleware",
    # Before anything asks for the request's host: a blog's own domain is accepted here.
    "apps.blog.middleware.BlogDomainMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "apps.api.middleware.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Inside the middleware above, so its early answers (429, 411, 413) get their headers too, and
    # outside ConditionalGetMiddleware, so a 304 gets the rate-limit headers.
    "apps.api.middleware.ApiHttpMiddleware",
    "django.middleware.http.ConditionalGetMiddleware",
    # Last, as axes requires: answers a login attempt its backend refused with 429 (AXES_* below).
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    # django-axes first: it refuses a throttled address before any password is checked.
    "apps.users.sign_in_limits.LoginThrottleBackend",
    # ModelBackend's sign-in, with what a user may do in the admin from the Settings area's access table.
    "apps.settings_area.access.AccessBackend",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
# A connection dropped by the server (restart, idle timeout) is replaced before the request
# uses it, instead of failing that request.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and beat share the file (docs/operations.md, the embedded default). In WAL mode
    # readers never wait for the writer, nor it for them. A transaction takes the write lock when it
    # begins (IMMEDIATE), so a writer waits its turn (up to `timeout` seconds) instead of failing:
    # one that read first and then wrote would fail at once with "database is locked" whenever
    # another wrote in between, whatever the timeout. synchronous=NORMAL is WAL's safe pairing: a
    # crash of the machine can lose the last commits, never corrupt the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=20,
        transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    )
IS_POSTGRES = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "users.User"
# What every piece of customer data belongs to; the admin scopes each model by its path to it.
ACCOUNT_MODEL = "accounts.Account"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "config.storage.StaticFilesStorage"},
}
# The release step collects the static files (hashed names, compressed, cached for a year). A web
# process started without it still answers every page: a file missing from the manifest keeps its
# plain name and is served from the apps' own static folders, instead of a 500 for the page.
WHITENOISE_USE_FINDERS = True

# --- Redis: broker and shared cache. Empty means the embedded, server-less defaults. ---
REDIS_URL = env.str("REDIS_URL", default="")

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "cps",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery ---
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://")
# Publishing must fail fast when the broker is down (the default retries for seconds inside the
# request); the outbox's sweeper hands the deliveries over once the broker is back.
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.1,
    "interval_max": 0.2,
    "socket_connect_timeout": 2,
}
if CELERY_BROKER_URL == "filesystem://":
    # kombu's filesystem transport, its messages written whole before a worker can see them (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    _broker_dir = Path(env.str("FILESYSTEM_BROKER_DIR", default=str(VAR_DIR / "broker")))
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # kombu's exchange tables; its default is a `control/` folder in the working directory.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # The worker looks for new messages this often once its processes are busy or the folder
        # is empty (kombu's default, 1 s, let it start 2 tasks a second: a delivery per save).
        "polling_interval": 0.05,
    }
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_QUEUE", default="celery")
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
# A worker killed mid-task leaves the message unacknowledged, so another worker runs it again;
# tasks are written to be safe to run twice.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One message per worker process at a time: a delivery task (a batch of deliveries) is never
# parked behind a slow one in another process's prefetch buffer. Raise it by env for throughput.
CELERY_WORKER_PREFETCH_MULTIPLIER = _positive_int("CELERY_WORKER_PREFETCH_MULTIPLIER", 1)
# Celery's Django fixup opens a new database connection for every task unless this is set (then
# it closes them every N tasks); config/celery.py applies CONN_MAX_AGE and CONN_HEALTH_CHECKS
# around each task instead, as Django does around each request.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_SOFT_TIME_LIMIT = _positive_int("CELERY_TASK_SOFT_TIME_LIMIT", 120)
CELERY_TASK_TIME_LIMIT = _positive_int("CELERY_TASK_TIME_LIMIT", 180)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

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
    "NUM_PROXIES": _non_negative_int("NUM_PROXIES", 0),
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
    },
}

# --- API keys and pagination ---
API_KEY_DEFAULT_TTL_DAYS = _positive_int("API_KEY_DEFAULT_TTL_DAYS", 365)
# last_used_at is written at most this often per key, so reads do not turn into writes.
API_KEY_LAST_USED_RESOLUTION = _positive_int("API_KEY_LAST_USED_RESOLUTION", 60)
PAGE_SIZE_DEFAULT = 20
PAGE_SIZE_MAX = 100
# The change feed (GET /v1/channels/{id}/changes) keeps deleted posts' tombstones this long; a
# cursor issued longer ago, or older than the last tombstone swept, answers 410 `cursor_expired`.
CHANGES_RETENTION = _duration("CHANGES_RETENTION", "P30D")
# Rendered channels and posts are kept this long in the default cache (Redis, or the process's
# memory without REDIS_URL), under their channel's version; 0 turns the cache off. A change makes
# a new version at once, so this bounds memory, not staleness (apps/api/representations.py).
API_CACHE_SECONDS = _non_negative_int("API_CACHE_SECONDS", 3600)
# With PostgreSQL and Redis, API keys (with their account and user) and channels' versions are read
# from Redis, deleted by the database's notifications when their rows change (apps/core/coherence.py):
# a cached read asks the database nothing. This is their time to live, which bounds staleness only
# for changes made outside the service (psql) or while Redis was unreachable; 0 reads them from the
# database on every request.
API_LOOKUP_CACHE_SECONDS = _non_negative_int("API_LOOKUP_CACHE_SECONDS", 300)
# The answer to a write sent with an Idempotency-Key is given again to the same request for this long
# (apps/api/idempotency.py); past it the key is free, and the request runs again.
IDEMPOTENCY_KEY_TTL = _duration("IDEMPOTENCY_KEY_TTL", "PT24H")
# Where those answers are kept, with the API keys they belong to: the module apps/api/idempotency.py
# asks (named here, so that the HTTP layer imports no app).
IDEMPOTENCY_STORE = "apps.users.idempotency"

# --- Rate limits: requests per account per clock hour, by plan; empty means unlimited ---
RATE_LIMITS = {
    "free": _limit("RATE_LIMIT_FREE", "1000"),
    "starter": _limit("RATE_LIMIT_STARTER", "10000"),
    "professional": _limit("RATE_LIMIT_PROFESSIONAL", "50000"),
    "enterprise": _limit("RATE_LIMIT_ENTERPRISE", ""),
}
# 401s per client address per clock hour; past it the address gets 429 for every /v1 request.
RATE_LIMIT_AUTH_FAILURES = _limit("RATE_LIMIT_AUTH_FAILURES", "100")
# Failed logins per client address per 15 minutes; past it admin-site login attempts get 429.
ADMIN_LOGIN_FAILURE_LIMIT = _limit("ADMIN_LOGIN_FAILURE_LIMIT", "10")
# Failed sign-ins per e-mail (stripped, lower-case; known to the service or not) per clock hour, from any
# address; past it, password sign-ins for that e-mail get 429 until the hour ends, and its account's
# admins (an operator's: the operators) get one e-mail. Twice the address's limit: a person mistyping
# from one address meets that one first; guessing spread over many addresses gets 20 tries an hour.
SIGN_IN_FAILURE_LIMIT_PER_EMAIL = _limit("SIGN_IN_FAILURE_LIMIT_PER_EMAIL", "20")
# django-axes counts them (apps/users/sign_in_limits.py): by client address as the API's rate limits see it
# (NUM_PROXIES), in the default cache, forgotten 15 minutes after the address's last failure. The
# attempt that reaches the limit gets the form back; later ones get 429 with Retry-After until then.
AXES_LOCKOUT_PARAMETERS = ["ip_address"]
AXES_FAILURE_LIMIT = "apps.users.sign_in_limits.admin_login_failure_limit"
AXES_COOLOFF_TIME = "apps.users.sign_in_limits.admin_login_cool_off"
AXES_CLIENT_IP_CALLABLE = "apps.api.ratelimit.client_address"
# Where the e-mail is in the credentials (for its budget): authenticate()'s keyword, the sign-in forms'
# field. axes' default, USERNAME_FIELD ("email"), is not in what user_login_failed reports.
AXES_USERNAME_FORM_FIELD = "username"
AXES_HANDLER = "apps.users.sign_in_limits.LoginFailureHandler"
AXES_LOCKOUT_CALLABLE = "apps.users.sign_in_limits.login_throttled"
AXES_HTTP_RESPONSE_CODE = 429
# Refused attempts are not counted, so they do not prolong the lockout; a success does not clear it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = False
# Nothing is stored in axes' tables, so the admin has nothing to show; no start-up banner in the logs.
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False

# Largest request body in bytes, for the API (413) and for Django's own form parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = _positive_int("MAX_REQUEST_BODY_BYTES", 1024 * 1024)

# --- E-mail ---
# Development prints each e-mail (invitation links included) to the process's output and writes it
# to EMAIL_FILE_PATH as an .eml file of its own (apps/core/mail_files.py); production sends them over
# SMTP and refuses the backends that would write them, with their one-time tokens, to a log or a
# file (or keep them in memory, unsent).
EMAIL_BACKEND = env.str(
    "EMAIL_BACKEND",
    default="django.core.mail.backends.smtp.EmailBackend" if IS_PRODUCTION else "apps.core.mail_files.EmailBackend",
)
# A relative path is the checkout's, wherever the process was started from.
EMAIL_FILE_PATH = BASE_DIR / env.str("EMAIL_FILE_PATH", default=str(VAR_DIR / "mail"))
UNSENT_EMAIL_BACKENDS = {
    *(f"django.core.mail.backends.{name}.EmailBackend" for name in ("console", "filebased", "locmem")),
    "apps.core.mail_files.EmailBackend",
}
if IS_PRODUCTION and EMAIL_BACKEND in UNSENT_EMAIL_BACKENDS:
    raise ImproperlyConfigured(
        f"EMAIL_BACKEND {EMAIL_BACKEND!r} writes e-mails (and the tokens in them) where they are not sent; "
        "set a backend that sends them (for example django.core.mail.backends.smtp.EmailBackend) in production"
    )
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = _bool("EMAIL_USE_TLS", default=False)
# Seconds a mail server may take to answer: a hung one must not hold a request or a thread for ever.
EMAIL_TIMEOUT = _positive_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Content Publishing <noreply@localhost>")

# --- Users, sign-in and single sign-on ---
INVITATION_TTL_DAYS = _positive_int("INVITATION_TTL_DAYS", 7)
SSO_TOKEN_TTL = _positive_int("SSO_TOKEN_TTL", 300)
SSO_TOKEN_HISTORY_DAYS = _positive_int("SSO_TOKEN_HISTORY_DAYS", 7)
# A session started by an SSO link reaches API keys, webhook secrets, users' roles and publishing
# destinations only after its person types their password; that lasts this many seconds (apps/core/step_up.py).
STEP_UP_TTL = _positive_int("STEP_UP_TTL", 7200)
# The e-mailed link that sets a first password (for users who only ever signed in through SSO)
# works once and for this many seconds; one such e-mail per user per PASSWORD_LINK_INTERVAL seconds.
PASSWORD_RESET_TIMEOUT = _positive_int("PASSWORD_LINK_TTL", 3600)
PASSWORD_LINK_INTERVAL = _positive_int("PASSWORD_LINK_INTERVAL", 300)
LOGIN_URL = "web-login"
LOGIN_REDIRECT_URL = "web-home"

# --- Logging ---
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL must be a logging level name, got {LOG_LEVEL!r}")
LOG_FORMAT = env.str("LOG_FORMAT", default="plain")
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT must be 'plain' or 'json', got {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Both escape what a record quotes (CR, LF, NUL and the other controls of a hostile path, header
    # or e-mail), so each record is one line and none can be forged (apps/api/observability.py).
    "formatters": {
        "plain": {
            "class": "apps.api.observability.EscapingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        },
        "json": {
            "()": "apps.api.observability.EscapingJsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(request_id)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {
        # Every record carries the id of the request (or of the task's enqueuing request) it was
        # logged in, "-" outside one (apps/api/observability.py, config/celery.py).
        "request_id": {"()": "apps.api.observability.RequestIdFilter"},
        # Records that carry the request keep only its method and path: query strings can hold one-time tokens.
        "request_summary": {"()": "apps.api.observability.RequestSummaryFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id", "request_summary"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# --- Security ---
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_SECURE = _bool("SESSION_COOKIE_SECURE", default=IS_PRODUCTION)
CSRF_COOKIE_SECURE = _bool("CSRF_COOKIE_SECURE", default=IS_PRODUCTION)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if _bool("BEHIND_TLS_PROXY", default=False) else None
# Plain-HTTP requests are redirected to HTTPS; health checks are exempt, since load balancers probe
# them over plain HTTP from inside the network.
SECURE_SSL_REDIRECT = _bool("SECURE_SSL_REDIRECT", default=False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# Sent on HTTPS responses only; 0 leaves HSTS off (turn it on once HTTPS works everywhere).
SECURE_HSTS_SECONDS = _non_negative_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = _bool("SECURE_HSTS_PRELOAD", default=False)

# --- Webhooks ---
WEBHOOK_TIMEOUT = _positive_int("WEBHOOK_TIMEOUT", 10)
WEBHOOK_RETRY_DELAYS = _env_list_of_ints("WEBHOOK_RETRY_DELAYS", "60,300,1800,7200")
WEBHOOK_SWEEP_INTERVAL = _positive_int("WEBHOOK_SWEEP_INTERVAL", 30)
# A delivery handed to the broker this long ago and still not attempted is handed over again
# (the broker lost it, or the worker that had it died).
WEBHOOK_REQUEUE_AFTER = _positive_int("WEBHOOK_REQUEUE_AFTER", 300)
WEBHOOK_HISTORY_DAYS = _positive_int("WEBHOOK_HISTORY_DAYS", 30)
# Deliveries handed to the broker in one task, sent one after the other by one worker process:
# one claim, one read and one write for all of them instead of for each.
WEBHOOK_BATCH_SIZE = _positive_int("WEBHOOK_BATCH_SIZE", 50)
WEBHOOK_ALLOW_PRIVATE_TARGETS = _bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=False)
# Attempts in flight at once per worker process (threads), so a receiver that hangs holds up a
# thread, not the worker; and batches in flight at once per endpoint, over all workers, so one
# endpoint's backlog or hang never takes more than that many of them.
WEBHOOK_SENDERS = _positive_int("WEBHOOK_SENDERS", 16)
WEBHOOK_ENDPOINT_CONCURRENCY = _positive_int("WEBHOOK_ENDPOINT_CONCURRENCY", 2)
# After this many failed attempts in a row an endpoint is held back: its other deliveries wait, and
# one probe goes out after each of these delays in turn (the last repeated), whatever the retry delays.
WEBHOOK_BREAKER_THRESHOLD = _positive_int("WEBHOOK_BREAKER_THRESHOLD", 5)
WEBHOOK_BREAKER_PROBE_DELAYS = _env_list_of_ints("WEBHOOK_BREAKER_PROBE_DELAYS", "60,300,1800,7200")
if not WEBHOOK_BREAKER_PROBE_DELAYS:
    raise ImproperlyConfigured("WEBHOOK_BREAKER_PROBE_DELAYS must name at least one delay (seconds), got none")
# An endpoint whose every attempt failed for this long is disabled and its account's admins told.
WEBHOOK_DISABLE_AFTER = _duration("WEBHOOK_DISABLE_AFTER", "P5D")
# After a rotation the replaced secret still signs deliveries for this long, beside the new one.
WEBHOOK_SECRET_OVERLAP = _duration("WEBHOOK_SECRET_OVERLAP", "PT24H")
# A delivery held back by its endpoint's breaker for longer than this is failed (not sent).
WEBHOOK_MAX_AGE = _duration("WEBHOOK_MAX_AGE", "P3D")


# --- Stored credentials (git tokens and deploy keys): Fernet keys, comma-separated, newest first ---
def _fernet_keys() -> list[str]:
    import base64
    import hashlib

    from cryptography.fernet import Fernet

    raw = env.str("FERNET_KEYS", default="").strip()
    if not raw:
        if IS_PRODUCTION:
            raise ImproperlyConfigured(
                "FERNET_KEYS must be set when ENVIRONMENT=production (comma-separated, newest first; make one with "
                "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
            )
        # Development: a key of this checkout's own, from its secret.
        return [base64.urlsafe_b64encode(hashlib.sha256(SECRET_KEY.encode()).digest()).decode()]
    keys = [key.strip() for key in raw.split(",") if key.strip()]
    for position, key in enumerate(keys, 1):
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                f"FERNET_KEYS: key {position} is not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from None
    return keys


FERNET_KEYS = _fernet_keys()

# --- Publishing (apps/publishing): jobs that put posts on their channel's destination ---
# Automatic retries of a job after its first attempt, in seconds (the webhook schedule by default).
PUBLISH_RETRY_DELAYS = _env_list_of_ints("PUBLISH_RETRY_DELAYS", "60,300,1800,7200")
# Seconds a destination gets for one operation (a fetch, a push); a job's whole run stops trying
# new operations after this too, so a hanging destination holds one thread for about twice it.
PUBLISH_TIMEOUT = _positive_int("PUBLISH_TIMEOUT", 30)
# Jobs in flight at once per worker process (threads); a channel's jobs run one at a time.
PUBLISH_WORKERS = _positive_int("PUBLISH_WORKERS", 8)
PUBLISH_SWEEP_INTERVAL = _positive_int("PUBLISH_SWEEP_INTERVAL", 30)
# Local repositories (a path or file://) and plain http:// remotes: development and tests only.
GIT_ALLOW_LOCAL_REPOSITORIES = _bool("GIT_ALLOW_LOCAL_REPOSITORIES", default=False)
# Each worker keeps a bare copy of the repositories it publishes to, so a job fetches only what
# is new; losing it costs one full fetch.
GIT_CACHE_DIR = Path(env.str("GIT_CACHE_DIR", default=str(VAR_DIR / "git-cache")))

# --- Newsletter channels (apps/publishing/newsletter, docs/newsletter.md) ---
# Messages per second each newsletter channel sends at most (0: as fast as the mail server takes them).
NEWSLETTER_SEND_RATE = _non_negative_int("NEWSLETTER_SEND_RATE", 50)
# Recipients a sender takes at a time (one mail-server connection each).
NEWSLETTER_BATCH_SIZE = _int_between("NEWSLETTER_BATCH_SIZE", 100, 1, 10000)
# How long the link of a confirmation e-mail confirms; past it, the person subscribes again on the form.
NEWSLETTER_CONFIRM_TTL = _duration("NEWSLETTER_CONFIRM_TTL", "P7D")


def _rate(name: str, default: str) -> tuple[int, int]:
    """A budget such as `10/h` (per second, minute, hour or day) as (count, seconds)."""
    raw = env.str(name, default=default).strip()
    match = re.fullmatch(r"([1-9][0-9]*)/([smhd])", raw)
    if not match:
        raise ImproperlyConfigured(f"{name} must be a count per unit, like 10/h (units: s, m, h, d), got {raw!r}")
    return int(match[1]), {"s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]


# Subscriptions the public form takes per client address (count, seconds); bots get the same page.
NEWSLETTER_SUBSCRIBE_RATE = _rate("NEWSLETTER_SUBSCRIBE_RATE", "10/h")


def _anymail() -> dict:
    """Every ANYMAIL_<NAME> variable as django-anymail's setting <NAME>: a provider's API key, sender
    domain or webhook signing key (ANYMAIL_POSTMARK_SERVER_TOKEN, ANYMAIL_MAILGUN_WEBHOOK_SIGNING_KEY...).
    Text, except true/false (a flag), a JSON object or list (SEND_DEFAULTS, AMAZON_SES_CLIENT_PARAMS)
    and REQUESTS_TIMEOUT (seconds). WEBHOOK_SECRET is `user:password`, several comma-separated while
    a provider's webhook moves to a new one."""
    found: dict = {}
    for name in sorted(name for name in env.ENVIRON if name.startswith("ANYMAIL_")):
        raw = env.ENVIRON[name].strip()  # as written: environ's reading takes a leading $ as a reference
        if not raw:
            continue
        key = name.removeprefix("ANYMAIL_")
        if raw.lower() in {"true", "false"}:
            found[key] = raw.lower() == "true"
        elif raw[0] in "{[":
            try:
                found[key] = env.json(name)
            except ValueError as exc:
                raise ImproperlyConfigured(f"{name} must be valid JSON, got {raw!r}: {exc}") from exc
        elif key == "REQUESTS_TIMEOUT":
            if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", raw) or float(raw) <= 0:
                raise ImproperlyConfigured(f"{name} must be a positive number of seconds, got {raw!r}")
            found[key] = float(raw)
        elif key == "WEBHOOK_SECRET":
            found[key] = [secret.strip() for secret in raw.split(",")]
            if not all(re.fullmatch(r"[^:\s]+:\S+", secret) for secret in found[key]):
                raise ImproperlyConfigured(
                    f"{name} must be user:password (several comma-separated while rotating), without spaces"
                )
        else:
            found[key] = raw
    return found


# --- E-mail providers through django-anymail (EMAIL_BACKEND=anymail.backends.<esp>.EmailBackend) ---
ANYMAIL = _anymail()
# The providers' tracking webhooks (bounces, complaints: apps/publishing/newsletter/tracking.py) take
# only calls with the basic-auth secret, or the provider's signature. Production serves them only once
# that secret is set, and a provider sending the mail needs it: unanswered bounces ruin a sender's name.
if IS_PRODUCTION and EMAIL_BACKEND.startswith("anymail.") and "WEBHOOK_SECRET" not in ANYMAIL:
    raise ImproperlyConfigured(
        "ANYMAIL_WEBHOOK_SECRET (user:password) must be set when EMAIL_BACKEND is a provider's in production: "
        "its bounce and complaint webhooks are not served without it"
    )
NEWSLETTER_TRACKING_WEBHOOKS = "WEBHOOK_SECRET" in ANYMAIL or not IS_PRODUCTION

# --- LinkedIn channels (apps/publishing/linkedin, docs/publishing.md) ---
# The LinkedIn app's credentials (developer portal → your app → Auth). Without them the Settings
# area cannot connect a channel (`manage.py connect_linkedin` still can, with a token made there).
LINKEDIN_CLIENT_ID = env.str("LINKEDIN_CLIENT_ID", default="").strip()
LINKEDIN_CLIENT_SECRET = env.str("LINKEDIN_CLIENT_SECRET", default="").strip()
# The API version every /rest/ request names (LinkedIn-Version: YYYYMM); LinkedIn retires a version
# about a year after its release, and then answers 426.
LINKEDIN_API_VERSION = env.str("LINKEDIN_API_VERSION", default="202610").strip()
if not re.fullmatch(r"20\d\d(0[1-9]|1[0-2])", LINKEDIN_API_VERSION):
    raise ImproperlyConfigured(
        f"LINKEDIN_API_VERSION must be a version like 202610 (YYYYMM), got {LINKEDIN_API_VERSION!r}"
    )


def _base_url(name: str, default: str) -> str:
    # Operator settings (tests and staging point them at a local server), not tenant input: the
    # webhook address guard does not apply to them.
    value = env.str(name, default=default).strip().rstrip("/")
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
        raise ImproperlyConfigured(f"{name} must be an http(s) address without query, got {value!r}")
    return value


LINKEDIN_AUTH_URL = _base_url("LINKEDIN_AUTH_URL", "https://www.linkedin.com/oauth/v2")
LINKEDIN_API_URL = _base_url("LINKEDIN_API_URL", "https://api.linkedin.com")
# What the Settings area asks a member to grant: sign-in (openid profile) and posting as the member
# (w_member_social). Posting as a company page needs w_organization_social and, to list the pages
# the member administers, r_organization_admin (the Community Management API product).
LINKEDIN_SCOPES = env.str("LINKEDIN_SCOPES", default="openid profile w_member_social").split()
if not {"openid", "profile"} <= set(LINKEDIN_SCOPES) or not {"w_member_social", "w_organization_social"} & set(
    LINKEDIN_SCOPES
):
    raise ImproperlyConfigured(
        "LINKEDIN_SCOPES must include openid and profile (who connected) and w_member_social or "
        f"w_organization_social (to post), got {' '.join(LINKEDIN_SCOPES)!r}"
    )
# A connection whose access ends within this many days is refreshed (where LinkedIn gave a
# refresh token) or its account's admins are e-mailed, once a day by beat.
LINKEDIN_EXPIRY_WARNING_DAYS = _positive_int("LINKEDIN_EXPIRY_WARNING_DAYS", 7)

# --- The blog channels' public site (apps/blog, docs/blog.md) ---
# Posts per page of a blog's index and tag pages.
BLOG_PAGE_SIZE = _int_between("BLOG_PAGE_SIZE", 10, 1, 100)
# Posts in a blog's Atom feed.
BLOG_FEED_SIZE = _int_between("BLOG_FEED_SIZE", 20, 1, 100)
# The scheme of addresses on blogs' own domains: TLS is ended by the proxy in front (docs/blog.md).
BLOG_DOMAIN_SCHEME = env.str("BLOG_DOMAIN_SCHEME", default="https")
if BLOG_DOMAIN_SCHEME not in {"http", "https"}:
    raise ImproperlyConfigured(f"BLOG_DOMAIN_SCHEME must be http or https, got {BLOG_DOMAIN_SCHEME!r}")
# Seconds a shared cache (a CDN) may serve a public page without asking again (s-maxage). 0: it asks
# every time (a conditional request, answered 304 while nothing changed), so an edit shows at once.
BLOG_CDN_MAX_AGE = _non_negative_int("BLOG_CDN_MAX_AGE", 0)

# --- Periodic work: the one place Celery beat's schedule is defined ---
CONTENT_PLAN_INTERVAL = _positive_int("CONTENT_PLAN_INTERVAL", 60)
CELERY_BEAT_SCHEDULE = {
    "posts.content_plan": {"task": "posts.content_plan", "schedule": float(CONTENT_PLAN_INTERVAL)},
    "posts.sweep_changes": {"task": "posts.sweep_changes", "schedule": 3600.0},
    "webhooks.sweep": {"task": "webhooks.sweep", "schedule": float(WEBHOOK_SWEEP_INTERVAL)},
    "webhooks.prune_history": {"task": "webhooks.prune_history", "schedule": 3600.0},
    "publishing.sweep": {"task": "publishing.sweep", "schedule": float(PUBLISH_SWEEP_INTERVAL)},
    "accounts.prune_sso_tokens": {"task": "accounts.prune_sso_tokens", "schedule": 3600.0},
    "users.sweep_idempotency_records": {"task": "users.sweep_idempotency_records", "schedule": 3600.0},
    "publishing.linkedin_expiry": {"task": "publishing.linkedin_expiry", "schedule": 86400.0},
}
# Where beat keeps the last run of each entry (a shelve file: a suffix such as `.db` may be added).
# `celery beat` reads it from here when no --schedule is given; its folder is made at start-up so
# beat runs from a fresh checkout. A string: celery appends the shelve suffixes to it.
CELERY_BEAT_SCHEDULE_FILENAME = env.str("BEAT_SCHEDULE_FILE", default=str(VAR_DIR / "celerybeat-schedule"))
Path(CELERY_BEAT_SCHEDULE_FILENAME).parent.mkdir(parents=True, exist_ok=True)


# --- The web process (config/web.py: granian serving config/server/) ---
def _bind() -> tuple[str, int]:
    """BIND as `address:port` (an IP address; IPv6 in brackets), by default 127.0.0.1:$PORT."""
    port = env.str("PORT", default="8000").strip()
    raw = env.str("BIND", default=f"127.0.0.1:{port}").strip()
    host, _, port = raw.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    try:
        ipaddress.ip_address(host)
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(port)
    except ValueError:
        raise ImproperlyConfigured(
            f"BIND must be an IP address and a port, like 127.0.0.1:8000 or [::1]:8000 (PORT: a port), got {raw!r}"
        ) from None
    return host, int(port)


def _networks(name: str, default: str) -> tuple:
    """Comma-separated addresses or networks, or `*` (any)."""
    raw = env.str(name, default=default)
    try:
        return tuple(
            part if part == "*" else ipaddress.ip_network(part, strict=False)
            for part in (item.strip() for item in raw.split(","))
            if part
        )
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be comma-separated IP addresses or networks, or *, got {raw!r}"
        ) from None


WEB_BIND = _bind()


def _site_url() -> str:
    """SITE_URL, by default the address the web process listens on (127.0.0.1 for one that listens
    on every address), so a trial on another PORT or BIND prints and sends links that reach it."""
    host, port = WEB_BIND
    if ipaddress.ip_address(host).is_unspecified:
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    raw = env.str("SITE_URL", default=f"http://{host}:{port}").strip().rstrip("/")
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 - a port that is not a number raises here
        if parts.scheme not in {"http", "https"} or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(raw)
    except ValueError:
        raise ImproperlyConfigured(
            f"SITE_URL must be an http or https address, like https://cps.example.com, got {raw!r}"
        ) from None
    return raw


# The service's public address: it builds every address the service prints or sends (invitation,
# sign-in and password links, blogs without a domain, the seed's hints).
SITE_URL = _site_url()
# The fastest of the API benchmark's sweep on the project's 2-core machine (bench/RESULTS.md §1): three
# processes of two threads each; docs/operations.md says how to size a bigger machine.
WEB_CONCURRENCY = _positive_int("WEB_CONCURRENCY", 3)  # worker processes
WEB_THREADS = _positive_int("WEB_THREADS", 2)  # threads per process that run the application
# granian's runtime for the sockets in each process: multi-threaded (`mt`, its default for this
# interface) or single-threaded (`st`). The API benchmark measures both beside each other.
WEB_RUNTIME_MODE = env.str("WEB_RUNTIME_MODE", default="mt").strip().lower()
if WEB_RUNTIME_MODE not in {"mt", "st"}:
    raise ImproperlyConfigured(f"WEB_RUNTIME_MODE must be mt or st, got {WEB_RUNTIME_MODE!r}")
# Seconds a client has to send a request's line and headers (counted from the connection's opening
# or the end of the previous answer, so also how long an idle kept-alive connection stays open;
# granian takes at most 60), and then its body: past either the connection is closed (a body
# answers 408 first). Neither holds a thread while it waits.
WEB_HEADER_TIMEOUT = _int_between("WEB_HEADER_TIMEOUT", 10, 1, 60)
WEB_BODY_TIMEOUT = _positive_int("WEB_BODY_TIMEOUT", 30)
# Seconds a stopping worker gets to finish its requests before it is killed.
WEB_GRACEFUL_TIMEOUT = _int_between("WEB_GRACEFUL_TIMEOUT", 30, 1, 1800)
# A worker whose memory (RSS, MiB) reaches this is replaced (a new one first, then the old one stops
# gracefully), checked every WEB_MEMORY_CHECK_INTERVAL seconds: a slow leak cannot grow without bound.
WEB_MAX_MEMORY = _limit("WEB_MAX_MEMORY", "1024")
WEB_MEMORY_CHECK_INTERVAL = _int_between("WEB_MEMORY_CHECK_INTERVAL", 30, 1, 300)
WEB_PRELOAD = _bool("WEB_PRELOAD", default=True)
# The application logs one line per request (cps.request); granian's own access log is off unless asked.
WEB_ACCESS_LOG = _bool("WEB_ACCESS_LOG", default=False)
# Proxies whose X-Forwarded-Proto (or -Protocol, -Ssl) sets the request's scheme.
FORWARDED_ALLOW_IPS = _networks("FORWARDED_ALLOW_IPS", "127.0.0.1")
