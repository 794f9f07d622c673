"""The database connection: SQLite tuned for a chat bot (WAL, foreign keys, busy timeout,
writes that take the lock up front) or PostgreSQL through the same URL setting."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, insert, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from bot.core.errors import StoreUnavailable
from bot.store import fast
from bot.store.held import HeldReaders, after_fork

log = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_MS = 5000
UNAVAILABLE = "The database is busy or read-only right now, so nothing was saved; please try again in a moment."


def _sqlite_engine(url: str, immediate: bool, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> Engine:
    engine = create_engine(
        url,
        connect_args={"timeout": busy_timeout_ms / 1000, "check_same_thread": False},
        pool_size=16,
        max_overflow=16,
        # Every unit of work ends its transaction itself (commit, or rollback on error; a
        # lone driver-level read has none), so the pool's extra rollback on return is waste.
        pool_reset_on_return=None,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        # Let SQLAlchemy emit BEGIN itself so that writes can say IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA synchronous = NORMAL")
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as exc:  # a read-only file still serves reads
            log.warning("could not switch the database to WAL: %s", exc)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes fails at once under WAL when
        # another writer got in between; taking the write lock first waits instead.
        # Straight on the driver: exec_driver_sql's Python cost more than the BEGIN itself.
        fast.driver_sql(conn, "BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _unavailable(exc: DBAPIError, action: str) -> StoreUnavailable | None:
    """The StoreUnavailable that a database error means for the user, or None when the error
    is a bug to surface as it is. Busy, locked, read-only or unreachable databases
    (OperationalError) and dropped connections (connection_invalidated) are unavailability."""
    if isinstance(exc, OperationalError) or exc.connection_invalidated:
        log.warning("database unavailable for a %s: %s", action, exc.orig)
        return StoreUnavailable(UNAVAILABLE)
    return None


class Database:
    """Two engines on one database: one for reads, one whose transactions write.

    busy_timeout_ms: how long a SQLite connection waits for another process's lock before
    the operation fails as unavailable (ignored for PostgreSQL)."""

    def __init__(self, url: str, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self.url = url
        self.busy_timeout_ms = busy_timeout_ms
        self.is_sqlite = url.startswith("sqlite")
        # SQLite has one writer at a time. Writers of this process queue on a mutex instead of
        # in SQLite's busy handler, whose sleeps (up to 100 ms each) would set the tail latency;
        # other processes still wait through busy_timeout.
        self._write_gate: threading.Lock | None = threading.Lock() if self.is_sqlite else None
        self._held: HeldReaders | None = None  # SQLite: each reading thread keeps its connection
        if self.is_sqlite:
            self.reader = _sqlite_engine(url, immediate=False, busy_timeout_ms=busy_timeout_ms)
            self.writer = _sqlite_engine(url, immediate=True, busy_timeout_ms=busy_timeout_ms)
            self._held = HeldReaders(self.reader)
        else:
            self.reader = self.writer = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
        after_fork(self, Database._forked)

    def _forked(self) -> None:
        """In a forked child: new pools (the parent's connections are left to the parent) and
        a new write turn (another thread may have held it at the fork)."""
        self._parents = (self.reader.pool, self.writer.pool)  # never garbage-collected (closed) here
        self.reader.dispose(close=False)
        if self.writer is not self.reader:
            self.writer.dispose(close=False)
        if self._write_gate is not None:
            self._write_gate = threading.Lock()

    @contextmanager
    def write_gate(self) -> Iterator[None]:
        """This process's turn to write (SQLite has one writer; PostgreSQL needs no turn)."""
        if self._write_gate is None:
            yield
            return
        with self._write_gate:
            yield

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One unit of work: committed on success, rolled back on any error."""
        gate = self._write_gate
        try:
            if gate is not None:
                gate.acquire()
            with self.writer.begin() as conn:
                yield conn
        except DBAPIError as exc:
            unavailable = _unavailable(exc, "write")
            if unavailable is None:
                raise
            raise unavailable from exc
        finally:
            if gate is not None:
                gate.release()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        try:
            # The transaction begins with the first Core statement (so a read of several
            # statements sees one snapshot); a lone hot-path query on SQLite's driver
            # (bot/store/fast.py) needs none and skips the BEGIN and COMMIT.
            if self._held is not None:
                with self._held.read() as conn:
                    yield conn
            else:
                with self.reader.connect() as conn:
                    # PostgreSQL (READ COMMITTED: each statement its own snapshot anyway):
                    # no BEGIN and no ROLLBACK on return, two round trips fewer per read.
                    conn.execution_options(isolation_level="AUTOCOMMIT")
                    yield conn
                    if conn.in_transaction():
                        conn.commit()
        except DBAPIError as exc:
            unavailable = _unavailable(exc, "read")
            if unavailable is None:
                raise
            raise unavailable from exc

    def dispose(self) -> None:
        if self._held is not None:
            self._held.close()
        self.reader.dispose()
        if self.writer is not self.reader:
            self.writer.dispose()


def insert_ignoring(conn: Connection, table: Any, conflict: list[str]) -> Any:
    """INSERT ... ON CONFLICT (conflict) DO NOTHING for SQLite and PostgreSQL alike."""
    dialect = sqlite if conn.dialect.name == "sqlite" else postgresql
    if conn.dialect.name not in ("sqlite", "postgresql"):
        return insert(table)
    return dialect.insert(table).on_conflict_do_nothing(index_elements=conflict)


def migrations_dir() -> Path:
    return Path(__file__).with_name("migrations")


def head_revision() -> str:
    """The newest migration's revision id, read from the file names (`0015_item_stats.py` is
    revision "0015"; tests/test_shipping.py holds this to Alembic's own head)."""
    return max(path.name.split("_", 1)[0] for path in (migrations_dir() / "versions").glob("[0-9]*_*.py"))


def schema_revision(url: str) -> str | None:
    """The revision the database carries (several heads comma-joined), or None when it has no
    schema yet (no file, no alembic_version table) or cannot be read."""
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).expanduser().is_file():
        return None
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except SQLAlchemyError:
        return None
    finally:
        engine.dispose()
    return ",".join(sorted(str(f) for f in found)) or None


def at_head(url: str) -> bool:
    """Whether the database already carries the newest revision: a restart then needs no
    Alembic (importing it is a fifth of the bot's start-up)."""
    return schema_revision(url) == head_revision()


# The SQLite files whose folder the bot creates when it is missing: the documented defaults
# (docs/configuration.md's `sqlite:///studybot.db`, the Docker image's `sqlite:////data/studybot.db`).
# Any other URL's folder must exist: a mistyped URL must not create folders anywhere.
DEFAULT_SQLITE_PATHS = ("studybot.db", "/data/studybot.db")


def sqlite_folder(url: str) -> None:
    """The folder of a SQLite URL's file: created only for a documented default path; any other
    missing folder is one sentence (StoreUnavailable), and nothing is created."""
    path = url.removeprefix("sqlite:///").split("?", 1)[0]
    folder = Path(path).expanduser().parent
    if folder.is_dir():
        return
    if path in DEFAULT_SQLITE_PATHS:
        folder.mkdir(parents=True, exist_ok=True)
        return
    raise StoreUnavailable(
        f"The folder {folder} of the database at {safe_url(url)} does not exist: create it, "
        "or correct STUDYBOT_DATABASE_URL (the bot creates a folder only for its default path)."
    )


def upgrade(url: str, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
    """Create or upgrade the schema to the newest Alembic revision."""
    if url != "sqlite:///:memory:" and at_head(url):
        return
    from alembic import command
    from alembic.config import Config

    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        sqlite_folder(url)
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    try:
        command.upgrade(config, "head")
        if url.startswith("sqlite"):  # WAL is a property of the file: set it once it exists
            engine = _sqlite_engine(url, immediate=False, busy_timeout_ms=busy_timeout_ms)
            with engine.connect():
                pass
            engine.dispose()
    except OperationalError as exc:
        raise StoreUnavailable(f"The database at {safe_url(url)} cannot be upgraded: {exc.orig}") from exc


def safe_url(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
