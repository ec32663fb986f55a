"""Dates from PostgreSQL are read by psycopg's compiled loader (apps/core/dates.py), and come back
exactly as Django's own loader gives them."""

import datetime

import pytest
from django.db import connection

from apps.core import dates
from tests.conftest import requires_postgres

pytestmark = pytest.mark.django_db

# Microseconds, the ends of the range, around a DST change elsewhere, before 1970, leap seconds' day.
INSTANTS = """
select timestamptz '2026-03-29 00:59:58.123456+00' + n * interval '1.000007 second' from generate_series(0, 5000) n
union all select timestamptz '0001-01-01 00:00:00+00'
union all select timestamptz '9999-12-31 23:59:59.999999+00'
union all select timestamptz '1969-12-31 23:59:59.5+00'
union all select timestamptz '2016-12-31 23:59:59.999999-05:30'
union all select null::timestamptz
"""


def _read(cursor) -> list:
    cursor.execute(INSTANTS)
    return [value for (value,) in cursor.fetchall()]


@requires_postgres
def test_a_connection_reads_dates_with_the_compiled_loader():
    import psycopg
    from psycopg.pq import Format

    connection.ensure_connection()
    oid = psycopg.adapters.types["timestamptz"].oid
    assert connection.connection.adapters.get_loader(oid, Format.TEXT) is dates.UtcTimestamptzLoader
    # Django keeps it for every cursor: it compares the loader's zone with the connection's.
    with connection.cursor() as cursor:
        assert cursor.cursor.adapters.get_loader(oid, Format.TEXT) is dates.UtcTimestamptzLoader


@requires_postgres
def test_the_compiled_loader_gives_the_values_django_s_own_gives():
    with connection.cursor() as cursor:
        ours = _read(cursor)
    with connection.cursor() as cursor:
        from django.db.backends.postgresql.psycopg_any import register_tzloader

        register_tzloader(connection.timezone, cursor.cursor)  # Django's loader, on this cursor only
        djangos = _read(cursor)
    assert len(ours) == 5006 and ours == djangos
    assert {value.tzinfo for value in ours if value is not None} == {datetime.UTC}
    assert ours[-2] == datetime.datetime(2017, 1, 1, 5, 29, 59, 999999, tzinfo=datetime.UTC)


def test_a_model_s_dates_round_trip_through_it():
    from tests.factories import AccountFactory

    account = AccountFactory()
    stored = type(account).objects.values_list("created_at", flat=True).get(pk=account.pk)
    assert stored == account.created_at and stored.tzinfo is datetime.UTC


def test_a_session_in_another_time_zone_keeps_django_s_loader():
    # Only where the session's zone is UTC do the two loaders agree (the compiled one reads in it).
    registered = []

    class Session:
        class info:
            @staticmethod
            def parameter_status(name):
                return "Europe/Paris" if name == "TimeZone" else None

        class adapters:
            @staticmethod
            def register_loader(*args):
                registered.append(args)

    class Connection:
        vendor, timezone_name, connection = "postgresql", "UTC", Session

    dates.use_compiled_loader(sender=None, connection=Connection)
    assert registered == []
    Session.info.parameter_status = staticmethod(lambda name: "UTC")
    dates.use_compiled_loader(sender=None, connection=Connection)
    assert registered == [("timestamptz", dates.UtcTimestamptzLoader)]
