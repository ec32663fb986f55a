"""Querysets compiled once per process, run many times with a new parameter value.

Django compiles a queryset's SQL anew every time it is evaluated. For the lookup that every API
request makes (the key with its account and user, three tables) the compiling cost about four
times the CPU of running the query; a PreparedLookup pays it once per process and database, and
builds the model instances (with their select_related objects) exactly as the ORM does.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections, router
from django.db.models import IntegerField, QuerySet
from django.db.models.query import get_related_populators


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple
    position: int
    model: type
    init_list: list[str]
    start: int
    end: int
    populators: list
    converters: dict
    annotations: dict
    value_range: tuple[int | None, int | None] | None


class PreparedLookup:
    """`build(value)` returns the queryset of `model` that filters `field` (a field of `model`)
    on `value` with `exact`; `first(value)` runs it and returns the first model instance or None.

    The queryset should be sliced to the rows wanted. `samples` are two different valid values of
    the field, used once per database to compile the SQL and to find the parameter in it.
    """

    def __init__(self, model: type, field: str, samples: tuple[Any, Any], build: Callable[[Any], QuerySet]) -> None:
        self.model = model
        self.field = model._meta.get_field(field)
        self.samples = samples
        self.build = build
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _db_value(self, value, connection):
        return self.field.get_db_prep_value(value, connection, prepared=False)

    def _compile(self, alias: str) -> _Compiled:
        connection = connections[alias]
        first, second = (self.build(sample).using(alias) for sample in self.samples)
        compiler = first.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        other_sql, other_params = second.query.get_compiler(using=alias).as_sql()
        positions = [index for index, (a, b) in enumerate(zip(params, other_params, strict=True)) if a != b]
        if (
            sql != other_sql
            or len(positions) != 1
            or params[positions[0]] != self._db_value(self.samples[0], connection)
        ):
            raise ValueError("a PreparedLookup's queryset must use its value exactly once, as an exact match")
        select, klass_info = compiler.select, compiler.klass_info
        fields = klass_info["select_fields"]
        start, end = fields[0], fields[-1] + 1
        return _Compiled(
            sql=sql,
            params=tuple(params),
            position=positions[0],
            model=klass_info["model"],
            init_list=[column[0].target.attname for column in select[start:end]],
            start=start,
            end=end,
            populators=get_related_populators(klass_info, select, alias),
            converters=compiler.get_converters([column[0] for column in select[: compiler.col_count]]),
            annotations=dict(compiler.annotation_col_map or {}),
            value_range=(
                connection.ops.integer_field_range(self.field.get_internal_type())
                if isinstance(self.field, IntegerField)
                else None
            ),
        )

    def compiled(self) -> tuple[str, _Compiled]:
        alias = router.db_for_read(self.model)
        compiled = self._compiled.get(alias)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(alias) or self._compile(alias)
                self._compiled[alias] = compiled
        return alias, compiled

    def first(self, value):
        alias, compiled = self.compiled()
        if compiled.value_range is not None and not _within(value, *compiled.value_range):
            # As the ORM answers since Django 5.0: no row, rather than the database's overflow error.
            return None
        connection = connections[alias]
        params = list(compiled.params)
        params[compiled.position] = self._db_value(value, connection)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        if compiled.converters:
            row = list(row)
            for position, (converters, expression) in compiled.converters.items():
                for converter in converters:
                    row[position] = converter(row[position], expression, connection)
        obj = compiled.model.from_db(alias, compiled.init_list, row[compiled.start : compiled.end])
        for populator in compiled.populators:
            populator.populate(row, obj)
        for name, position in compiled.annotations.items():
            setattr(obj, name, row[position])
        return obj


def _within(value, low: int | None, high: int | None) -> bool:
    value = int(value)
    return (low is None or value >= low) and (high is None or value <= high)
