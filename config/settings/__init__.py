"""Settings for the content publishing service (DJANGO_SETTINGS_MODULE=config.settings).

Every knob is read from the environment (docs/operations.md, "Configuration") with the typed readers
of apps/core/env.py. The defaults run the service on one machine with nothing installed: SQLite and a
filesystem Celery transport. Production differs only by environment variables.

One module per concern, in this package:

    environment  where it runs: folders, ENVIRONMENT, DEBUG, SECRET_KEY, ALLOWED_HOSTS (.env read here)
    application  installed apps, middleware, sign-in backends, templates, static files
    database     the database, Redis and the cache
    security     cookies, HTTPS, HSTS
    api          REST framework, the schema, API keys, caches, idempotency, rate limits
    sign_in      invitations, single sign-on, password links, failed sign-ins (django-axes)
    mail         the e-mail backend and django-anymail's settings
    logs         LOG_LEVEL, LOG_FORMAT, LOGGING
    webhooks     deliveries, retries, breakers
    publishing   publishing jobs and FERNET_KEYS, the keys of the destinations' credentials
    blog         the blogs' public site
    worker       Celery: broker, worker, beat's schedule
    web          the web process (BIND, WEB_*) and SITE_URL

A value that cannot be read stops the start-up where it is read (ImproperlyConfigured, naming the
variable). Whether the values fit together (production's policies: no DEBUG, a long secret, named
hosts, a backend that sends e-mail...) is a system check (config/checks.py), which every process runs
at start-up: manage.py's commands, the web process and Celery's worker and beat.

An app declares its own settings: for each app of INSTALLED_APPS under apps/ that has a `conf`
module (apps/publishing/<kind>/conf.py), that module's UPPER_CASE names are added to these settings,
read with the same helpers; the entries of a CELERY_BEAT_SCHEDULE there are added to beat's
schedule, and those of a REQUEST_BODY_LIMITS to the larger bodies some paths take. So a
destination kind's settings live in its package, and nothing here names it. A name is set once: a
module that sets one another module set already stops the start-up.
"""

from importlib import import_module
from importlib.util import find_spec
from types import ModuleType

from django.core.exceptions import ImproperlyConfigured

_concerns = (
    "environment",
    "application",
    "database",
    "security",
    "api",
    "sign_in",
    "mail",
    "logs",
    "webhooks",
    "publishing",
    "blog",
    "worker",
    "web",
)
# Settings an app's `conf` module adds entries to, instead of setting them.
_merged = {"CELERY_BEAT_SCHEDULE", "REQUEST_BODY_LIMITS"}


def _add(module: ModuleType, into: dict) -> None:
    """The module's UPPER_CASE names into `into`; a name it imported from another (the same object)
    is that one's."""
    for name, value in vars(module).items():
        if not name.isupper() or (name in into and into[name] is value):
            continue
        if name in _merged and name in into:
            into[name] = {**into[name], **value}
        elif name in into:
            raise ImproperlyConfigured(f"{name} is set twice: by {module.__name__} and by another settings module")
        else:
            into[name] = value


def _app_conf_modules(installed_apps: list[str]) -> list[ModuleType]:
    """The `conf` module of each of the service's own apps (an entry may name its AppConfig:
    apps.<name>.apps.<Config>)."""
    packages = [entry.split(".apps.")[0] for entry in installed_apps if entry.startswith("apps.")]
    return [import_module(f"{package}.conf") for package in packages if find_spec(f"{package}.conf")]


def _load() -> dict:
    loaded: dict = {}
    for concern in _concerns:
        _add(import_module(f"{__name__}.{concern}"), loaded)
    for conf in _app_conf_modules(loaded["INSTALLED_APPS"]):
        _add(conf, loaded)
    return loaded


globals().update(_load())
