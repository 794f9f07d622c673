"""The answer hot path's statements, run straight on SQLite's driver connection.

SQLAlchemy Core spends about 60 to 100 us of Python per execute (compiled-cache lookup,
events, result set-up) where SQLite itself takes 10 to 20 us; an answer burst runs these
statements thousands of times a second. Each statement here is compiled once, with its bind
and result processors (datetimes, booleans) taken from the same SQLAlchemy types, so the
driver sees the text and values Core would send and the caller gets the same values back.
On other databases (PostgreSQL) `rows` is Core's own execute."""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import DBAPIError

_SQLITE = sqlite.dialect()


class Prepared:
    """One statement compiled for SQLite: its text, its parameters in order (with their
    literal values and bind processors) and a row type with its result processors."""

    def __init__(self, stmt: Any, column_keys: list[str] | None = None) -> None:
        compiled = stmt.compile(dialect=_SQLITE, column_keys=column_keys)
        self.sql: str = compiled.string
        names: tuple[str, ...] = tuple(compiled.positiontup or ())
        self.names = names
        binds = [compiled.binds[name] for name in names]
        fixed: list[Any] = [None if b.required else b.effective_value for b in binds]
        needed = [bool(b.required) for b in binds]
        self.defaults: dict[int, Callable[[Any], Any]] = {}
        if column_keys is not None:  # an INSERT: columns not given take their Python-side default
            for i, name in enumerate(names):
                default = stmt.table.c[name].default if name not in column_keys else None
                if default is None:
                    continue
                needed[i] = False
                if default.is_scalar:
                    fixed[i] = default.arg
                else:
                    self.defaults[i] = default.arg
        self.fixed: tuple[Any, ...] = tuple(fixed)
        self.needed: tuple[bool, ...] = tuple(needed)
        self.bind_procs: tuple[Callable[[Any], Any] | None, ...] = tuple(
            b.type.dialect_impl(_SQLITE).bind_processor(_SQLITE) for b in binds
        )
        columns = list(stmt.exported_columns) if hasattr(stmt, "exported_columns") else []
        self.result_procs: tuple[Callable[[Any], Any] | None, ...] = tuple(
            c.type.dialect_impl(_SQLITE).result_processor(_SQLITE, None) for c in columns
        )
        self.row: Any = namedtuple("Row", [c.key for c in columns] or ["_"], rename=True)  # type: ignore[misc]
        self.plain = all(proc is None for proc in self.result_procs)

    def params(self, values: Mapping[str, Any]) -> list[Any]:
        out = []
        for name, needed, fixed, proc in zip(self.names, self.needed, self.fixed, self.bind_procs, strict=True):
            value = values[name] if needed or name in values else fixed
            out.append(proc(value) if proc is not None else value)
        for i, make in self.defaults.items():  # a callable column default (none on the hot path yet)
            value = make(None)
            out[i] = self.bind_procs[i](value) if self.bind_procs[i] is not None else value  # type: ignore[misc]
        return out

    def make(self, raw: tuple[Any, ...]) -> Any:
        if self.plain:
            return self.row._make(raw)
        return self.row._make([v if p is None else p(v) for p, v in zip(self.result_procs, raw, strict=True)])


_prepared: dict[tuple[int, tuple[str, ...]], tuple[Any, Prepared]] = {}


def _prepare(stmt: Any, values: Mapping[str, Any]) -> Prepared:
    """The statement compiled once; keyed by the (cached, long-lived) statement object and,
    for an INSERT, the columns given."""
    key = (id(stmt), tuple(values))
    found = _prepared.get(key)
    if found is None or found[0] is not stmt:
        keys = list(values) if getattr(stmt, "is_insert", False) else None
        found = (stmt, Prepared(stmt, keys))
        _prepared[key] = found
    return found[1]


def rows(conn: Connection, stmt: Any, values: Mapping[str, Any]) -> list[Any]:
    """Run `stmt` with `values` in `conn`'s transaction (if it has begun one) and return its
    rows, each with attribute access by column key. On SQLite this bypasses Core; a driver
    error is raised as Core would raise it (a DBAPIError, invalidating a dead connection)."""
    if conn.dialect.name != "sqlite":
        result = conn.execute(stmt, dict(values))
        return list(result.all()) if result.returns_rows else []
    prepared = _prepare(stmt, values)
    driver = conn.connection.driver_connection
    params = prepared.params(values)
    try:
        fetched = driver.execute(prepared.sql, params).fetchall()  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        gone = conn.dialect.is_disconnect(exc, driver, None)  # type: ignore[arg-type]
        if gone:
            conn.invalidate(exc)
        raise DBAPIError.instance(prepared.sql, params, exc, sqlite3.Error, connection_invalidated=gone) from exc
    return [prepared.make(row) for row in fetched]


def driver_sql(conn: Connection, sql: str) -> None:
    """A statement with no parameters and no result (SAVEPOINT, RELEASE) on SQLite's driver."""
    driver = conn.connection.driver_connection
    try:
        driver.execute(sql)  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        gone = conn.dialect.is_disconnect(exc, driver, None)  # type: ignore[arg-type]
        if gone:
            conn.invalidate(exc)
        raise DBAPIError.instance(sql, (), exc, sqlite3.Error, connection_invalidated=gone) from exc
