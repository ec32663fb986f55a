"""Reading the environment: one typed reader per kind of value, for config/settings/ and for the
apps' own `conf.py` modules (a destination kind's settings).

A value that cannot be read at all stops the start-up here, as ImproperlyConfigured naming the
variable. Whether values fit together (production's policies) is the system checks' question
(config/checks.py), not this module's.
"""

import re
from collections.abc import Callable, Collection
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.dateparse import parse_duration

ENV = environ.Env()

# The checkout (beside manage.py), and its var/ folder where the defaults keep local state (the
# embedded broker, caches, e-mail files) on one machine.
BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = BASE_DIR / "var"

TRUE = {"true", "1", "yes", "on"}
FALSE = {"false", "0", "no", "off"}
RATE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def read_dotenv(path: Path) -> None:
    """The `.env` file beside manage.py, if any, under the variables the process was given."""
    environ.Env.read_env(path, overwrite=False)


def text(name: str, default: str | None = None) -> str:
    """The variable as written; without a default it must be set."""
    return ENV.str(name) if default is None else ENV.str(name, default=default)


def admin_url() -> str:
    """ADMIN_URL, the Settings area's path ("admin/"), for the settings and for an app's conf.py,
    which is read before the settings are built."""
    return text("ADMIN_URL", "admin/").strip("/") + "/"


def database(name: str, default: str) -> dict:
    """A database URL (postgres://user@host:5432/name, sqlite:///path) as Django's DATABASES entry;
    set but empty is the default, as an empty REDIS_URL is the embedded one (environ's reading gave
    an entry without an engine, a KeyError further on)."""
    if not text(name, "").strip():
        return ENV.db_url_config(default)
    return ENV.db(name, default=default)


def words(name: str, default: list[str]) -> list[str]:
    """Comma-separated values."""
    return ENV.list(name, default=default)


def starting_with(prefix: str) -> dict[str, str]:
    """Every variable whose name starts with `prefix`, as written (environ's reading takes a leading
    $ as a reference to another variable)."""
    return {name: value for name, value in ENV.ENVIRON.items() if name.startswith(prefix)}


def one_of(name: str, value: str, choices: Collection[str], described: str) -> str:
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be {described}, got {value!r}")
    return value


def environment() -> str:
    """ENVIRONMENT: `development` (the default) or `production`, which the checks hold to more."""
    value = text("ENVIRONMENT", "development")
    return one_of("ENVIRONMENT", value, {"development", "production"}, "'development' or 'production'")


def boolean(name: str, *, default: bool) -> bool:
    """true/false, 1/0, yes/no, on/off; anything else stops the start-up (environ's own reading
    takes every unknown word as false)."""
    raw = text(name, str(default)).strip().lower()
    if raw not in TRUE | FALSE:
        raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")
    return raw in TRUE


def integer(name: str, default: int) -> int:
    return ENV.int(name, default=default)


def _bounded(name: str, default: int, fits: Callable[[int], bool], must: str) -> int:
    value = integer(name, default)
    if not fits(value):
        raise ImproperlyConfigured(f"{name} must {must}, got {value}")
    return value


def positive_int(name: str, default: int) -> int:
    return _bounded(name, default, lambda value: value > 0, "be a positive integer")


def non_negative_int(name: str, default: int) -> int:
    return _bounded(name, default, lambda value: value >= 0, "not be negative")


def int_between(name: str, default: int, low: int, high: int) -> int:
    return _bounded(name, default, lambda value: low <= value <= high, f"be between {low} and {high}")


def int_list(name: str, default: str, *, at_least_one: bool = False) -> list[int]:
    """Comma-separated integers, none negative (`60,300,1800`)."""
    raw = text(name, default)
    try:
        values = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be comma-separated integers, got {raw!r}") from exc
    if any(value < 0 for value in values):
        raise ImproperlyConfigured(f"{name} must not contain negative numbers, got {raw!r}")
    if at_least_one and not values:
        raise ImproperlyConfigured(f"{name} must name at least one delay (seconds), got none")
    return values


def duration(name: str, default: str) -> timedelta:
    """A positive duration: seconds (`432000`), ISO 8601 (`P5D`, `PT90M`) or Django's `5 00:00:00`."""
    raw = text(name, default).strip()
    value = parse_duration(raw)
    if value is None or value <= timedelta(0):
        raise ImproperlyConfigured(f"{name} must be a positive duration (seconds, or ISO 8601 like P5D), got {raw!r}")
    return value


def limit(name: str, default: str) -> int | None:
    """A positive integer, or None (no limit) when the variable is set but empty."""
    raw = text(name, default).strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise ImproperlyConfigured(f"{name} must be a positive integer or empty (no limit), got {raw!r}")
    return int(raw)


def rate(name: str, default: str) -> tuple[int, int]:
    """A budget such as `10/h` (per second, minute, hour or day) as (count, seconds)."""
    raw = text(name, default).strip()
    match = re.fullmatch(r"([1-9][0-9]*)/([smhd])", raw)
    if not match:
        raise ImproperlyConfigured(f"{name} must be a count per unit, like 10/h (units: s, m, h, d), got {raw!r}")
    return int(match[1]), RATE_UNITS[match[2]]


def base_url(name: str, default: str) -> str:
    """An http(s) address without query or trailing slash, which paths are appended to."""
    # Operator settings (tests and staging point them at a local server), not tenant input: the
    # webhook address guard does not apply to them.
    value = text(name, default).strip().rstrip("/")
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", value):
        raise ImproperlyConfigured(f"{name} must be an http(s) address without query, got {value!r}")
    return value
