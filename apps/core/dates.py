"""psycopg's compiled loader for `timestamptz` on every PostgreSQL connection whose time zone is UTC.

Django registers a loader of its own for `timestamptz` (django/db/backends/postgresql/psycopg_any.py):
a subclass of psycopg's pure-Python loader that sets each value's tzinfo to the connection's zone.
psycopg's compiled loader cannot be subclassed, so Django's Python one read every date, at 2.6 µs
a value: a tenth of a content plan run (three dates a post in its payloads, a scan and a lock).
Where the session's time zone is UTC, as Django sets it with USE_TZ and TIME_ZONE "UTC", the
compiled loader gives the same datetimes (tzinfo `datetime.timezone.utc`) ten times faster, so
each new connection gets it here (tests/core/test_timestamptz_loader.py holds the values equal).
Django compares the loader's `timezone` with its connection's on every cursor and registers its
own again where they differ: this loader says it is UTC's.
"""

import datetime

from django.db.backends.signals import connection_created


def _compiled_loader() -> type | None:
    """psycopg's compiled text loader for timestamptz (psycopg-binary or psycopg-c), if installed."""
    try:
        import psycopg
        from psycopg.pq import Format
    except ImportError:  # psycopg2, or no PostgreSQL driver at all
        return None
    loader = psycopg.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, Format.TEXT)
    return loader if loader is not None and not loader.__module__.startswith("psycopg.") else None


COMPILED = _compiled_loader()

if COMPILED is not None:
    from psycopg.adapt import Loader

    class UtcTimestamptzLoader(Loader):
        # What Django's create_cursor compares with its connection's zone before registering its own.
        timezone = datetime.UTC

        def __init__(self, oid: int, context=None) -> None:
            super().__init__(oid, context)
            # The compiled loader's own method: psycopg calls it for each value with no Python
            # frame in between.
            self.load = COMPILED(oid, context).load

        def load(self, data):  # replaced on each instance (above)
            raise NotImplementedError


def use_compiled_loader(sender, connection, **kwargs) -> None:
    """On a new PostgreSQL connection whose zone, Django's and the session's, is UTC."""
    if connection.vendor != "postgresql" or COMPILED is None or connection.timezone_name != "UTC":
        return
    raw = connection.connection
    if raw.info.parameter_status("TimeZone") != "UTC":
        return
    raw.adapters.register_loader("timestamptz", UtcTimestamptzLoader)


def connect() -> None:
    connection_created.connect(use_compiled_loader, dispatch_uid="apps.core.dates.use_compiled_loader")
