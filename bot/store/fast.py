"""The answer hot path's statements, run straight on the driver's connection.

SQLAlchemy Core spends about 60 to 100 us of Python per execute (compiled-cache lookup,
events, result set-up) where SQLite itself takes 10 to 20 us; an answer burst runs these
statements thousands of times a second. Each statement here is compiled once per dialect,
with its bind and result processors (datetimes, booleans) taken from the same SQLAlchemy
types, so the driver sees the text and values Core would send and the caller gets the same
values back. SQLite runs them on sqlite3, PostgreSQL on psycopg (whose connection prepares a
statement server-side once it has run the same text a few times); other databases through
Core's own execute."""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import psycopg as pg_psycopg
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, InvalidRequestError

_SQLITE = sqlite.dialect()
# psycopg's dialect with positional parameters (%s), so a statement's values go as a list.
_POSTGRES = pg_psycopg.dialect(paramstyle="format")  # type: ignore[no-untyped-call]
_DIALECTS: dict[str, Dialect] = {"sqlite": _SQLITE, "postgresql": _POSTGRES}


class Prepared:
    """One statement compiled for a dialect (SQLite's by default): its text, its parameters
    in order (with their literal values and bind processors) and a row type with its result
    processors."""

    def __init__(self, stmt: Any, column_keys: list[str] | None = None, dialect: Dialect = _SQLITE) -> None:
        compiled = stmt.compile(dialect=dialect, column_keys=column_keys)
        self.sql: str = compiled.string
        names: tuple[str, ...] = tuple(compiled.positiontup or ())
        self.names = names
        binds = [compiled.binds[name] for name in names]
        fixed: list[Any] = [None if b.required else b.effective_value for b in binds]
        needed = [bool(b.required) for b in binds]
        self.defaults: dict[int, Callable[[Any], Any]] = {}
        if column_keys is not None:  # an INSERT: columns not given take their Python-side default
            for i, name in enumerate(names):
                column = stmt.table.c.get(name)  # not a column: a literal or a CTE's parameter
                default = column.default if column is not None and name not in column_keys else None
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
            b.type.dialect_impl(dialect).bind_processor(dialect) for b in binds
        )
        columns = list(stmt.exported_columns) if hasattr(stmt, "exported_columns") else []
        self.result_procs: tuple[Callable[[Any], Any] | None, ...] = tuple(
            _result_processor(c.type, dialect) for c in columns
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


def _result_processor(type_: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    try:
        return type_.dialect_impl(dialect).result_processor(dialect, None)  # type: ignore[no-any-return]
    except (TypeError, InvalidRequestError):  # psycopg's Float wants the column's type oid:
        return None  # a FLOAT (double precision) column comes back as a float already


_prepared: dict[tuple[str, int, tuple[str, ...]], tuple[Any, Prepared]] = {}


def _prepare(stmt: Any, values: Mapping[str, Any], dialect: str = "sqlite") -> Prepared:
    """The statement compiled once; keyed by the dialect, the (cached, long-lived) statement
    object and, for an INSERT, the columns given."""
    key = (dialect, id(stmt), tuple(values))
    found = _prepared.get(key)
    if found is None or found[0] is not stmt:
        keys = list(values) if getattr(stmt, "is_insert", False) else None
        found = (stmt, Prepared(stmt, keys, _DIALECTS[dialect]))
        _prepared[key] = found
    return found[1]


def rows(conn: Connection, stmt: Any, values: Mapping[str, Any]) -> list[Any]:
    """Run `stmt` with `values` in `conn`'s transaction (if it has begun one) and return its
    rows, each with attribute access by column key. On SQLite and PostgreSQL this bypasses
    Core; a driver error is raised as Core would raise it (a DBAPIError, invalidating a dead
    connection)."""
    name = conn.dialect.name
    if name == "postgresql":
        return _psycopg_rows(conn, stmt, values)
    if name != "sqlite":
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


def _psycopg_rows(conn: Connection, stmt: Any, values: Mapping[str, Any]) -> list[Any]:
    import psycopg

    prepared = _prepare(stmt, values, "postgresql")
    driver: Any = conn.connection.driver_connection
    params = prepared.params(values)
    try:
        cursor = driver.execute(prepared.sql, params)
        fetched = cursor.fetchall() if cursor.description is not None else []
    except psycopg.Error as exc:
        gone = conn.dialect.is_disconnect(exc, driver, None)  # type: ignore[arg-type]
        if gone:
            conn.invalidate(exc)
        raise DBAPIError.instance(prepared.sql, params, exc, psycopg.Error, connection_invalidated=gone) from exc
    return [prepared.make(row) for row in fetched]


def driver_sql(conn: Connection, sql: str) -> None:
    """A statement with no parameters and no result (SAVEPOINT, RELEASE) on SQLite's driver;
    on other databases through Core's exec_driver_sql."""
    if conn.dialect.name != "sqlite":
        conn.exec_driver_sql(sql)
        return
    driver = conn.connection.driver_connection
    try:
        driver.execute(sql)  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        gone = conn.dialect.is_disconnect(exc, driver, None)  # type: ignore[arg-type]
        if gone:
            conn.invalidate(exc)
        raise DBAPIError.instance(sql, (), exc, sqlite3.Error, connection_invalidated=gone) from exc
