"""The database and Redis (the shared cache, and the broker by default: config/settings/worker.py).
Without DATABASE_URL and REDIS_URL the service runs on SQLite and the process's memory."""

from apps.core import env
from config.settings.environment import BASE_DIR

DATABASES = {
    "default": env.database("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DATABASES["default"]["CONN_MAX_AGE"] = env.integer("CONN_MAX_AGE", 60)
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


# --- Redis: broker and shared cache. Empty means the embedded, server-less defaults. ---
REDIS_URL = env.text("REDIS_URL", "")

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
