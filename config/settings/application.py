"""The Django application: its apps, middleware, sign-in backends, templates, languages and static files."""

from config.settings.environment import BASE_DIR

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
    "apps.core.apps.CoreConfig",
    "apps.api",
    "apps.users",
    "apps.accounts",
    "apps.channels",
    "apps.media",
    "apps.posts",
    "apps.webhooks",
    "apps.publishing",
    "apps.publishing.git",
    "apps.publishing.linkedin",
    "apps.publishing.bluesky",
    "apps.publishing.mastodon",
    "apps.publishing.newsletter",
    "apps.stories",
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
