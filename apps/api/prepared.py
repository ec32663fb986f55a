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
from django.db.models import QuerySet
from django.db.models.query import get_related_populators

# Stands for the parameter while the SQL is compiled; it never reaches a database.
_PLACEHOLDER = "\x00prepared-lookup-parameter\x00"


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


class PreparedLookup:
    """`build(value)` returns the queryset of `model` for one parameter value (used once per
    database, to compile it); `first(value)` runs it for `value` and returns the first model
    instance or None.

    The queryset must use `value` exactly once as a plain parameter (an `exact` filter, say) and
    should be sliced to the rows wanted.
    """

    def __init__(self, model: type, build: Callable[[Any], QuerySet]) -> None:
        self.model = model
        self.build = build
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _compile(self, queryset: QuerySet) -> _Compiled:
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        positions = [index for index, param in enumerate(params) if param == _PLACEHOLDER]
        if len(positions) != 1:
            raise ValueError("a PreparedLookup's queryset must use its parameter exactly once, unchanged")
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
            populators=get_related_populators(klass_info, select, queryset.db),
            converters=compiler.get_converters([column[0] for column in select[: compiler.col_count]]),
            annotations=dict(compiler.annotation_col_map or {}),
        )

    def compiled(self) -> tuple[str, _Compiled]:
        alias = router.db_for_read(self.model)
        compiled = self._compiled.get(alias)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(alias) or self._compile(self.build(_PLACEHOLDER).using(alias))
                self._compiled[alias] = compiled
        return alias, compiled

    def first(self, value):
        alias, compiled = self.compiled()
        params = list(compiled.params)
        params[compiled.position] = value
        connection = connections[alias]
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
