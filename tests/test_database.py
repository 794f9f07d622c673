"""The store's connection layer and the test harness's own guards: a dropped connection is
"unavailable" for reads as for writes, the busy timeout is the Database's own setting, the
PostgreSQL reset only touches test databases, and any truthy CI value counts as CI."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.exc import ProgrammingError

from bot.core.errors import StoreUnavailable
from bot.store.database import UNAVAILABLE, Database
from tests.conftest import _reset_postgres, ci_enabled, is_test_database_name

# ------------------------------------------------------------ dropped connections


def _drop_connection(database: Database, conn: Connection) -> None:
    """Lose the connection under an open transaction, as a restarted server or a closed
    file handle would: SQLite closes the driver's connection, PostgreSQL has its backend
    terminated from a second connection."""
    if database.is_sqlite:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.close()
        return
    pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    killer = create_engine(database.url)
    try:
        with killer.connect() as other:
            assert other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    finally:
        killer.dispose()


@pytest.mark.parametrize("mode", ["read", "write"])
def test_a_dropped_connection_is_unavailable_and_the_next_call_works(database: Database, mode: str) -> None:
    unit = database.read if mode == "read" else database.write
    with pytest.raises(StoreUnavailable) as caught:
        with unit() as conn:
            conn.execute(text("SELECT 1"))
            _drop_connection(database, conn)
            conn.execute(text("SELECT count(*) FROM community"))
    assert str(caught.value) == UNAVAILABLE
    cause = caught.value.__cause__
    assert cause is not None and getattr(cause, "connection_invalidated", False), repr(cause)
    # The pool dropped the dead connection: the next unit of work gets a fresh one.
    with unit() as conn:
        assert conn.execute(text("SELECT 1")).scalar_one() == 1


def test_a_read_on_a_closed_pooled_sqlite_connection_is_unavailable(sqlite_url: str) -> None:
    """A read that checks out a connection whose driver connection was closed while it sat in
    the pool: SQLite reports "closed database", which SQLAlchemy calls a disconnect."""
    db = Database(sqlite_url)
    try:
        with db.read() as conn:
            raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.close()
        with pytest.raises(StoreUnavailable):
            with db.read() as conn:
                conn.execute(text("SELECT 1"))
        with db.read() as conn:
            assert conn.execute(text("SELECT 1")).scalar_one() == 1
    finally:
        db.dispose()


def test_other_database_errors_are_not_hidden_as_unavailable(sqlite_url: str) -> None:
    """A bug (here, a statement missing its parameter) stays itself, for reads as for writes."""
    db = Database(sqlite_url)
    try:
        for unit in (db.read, db.write):
            with pytest.raises(ProgrammingError):
                with unit() as conn:
                    conn.exec_driver_sql("SELECT ?", ())
            with unit() as conn:  # and the connection it ran on is still good
                assert conn.execute(text("SELECT 1")).scalar_one() == 1
    finally:
        db.dispose()


# ------------------------------------------------------------ busy timeout


def test_the_busy_timeout_is_the_databases_own_setting(sqlite_url: str) -> None:
    fast, patient = Database(sqlite_url, busy_timeout_ms=100), Database(sqlite_url)
    blocker = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), timeout=0)
    try:
        assert patient.busy_timeout_ms == 5000
        with patient.read() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 5000
        blocker.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            with fast.write() as conn:
                conn.execute(text("SELECT 1"))
        assert time.monotonic() - started < 3  # gave up after about 100 ms, not 5 s
    finally:
        blocker.rollback()
        blocker.close()
        fast.dispose()
        patient.dispose()


# ------------------------------------------------------------ the harness's guards


@pytest.mark.parametrize(
    "name", ["studybot_test", "test", "tests", "test_studybot", "studybot-tests", "studybot_test2"]
)
def test_test_database_names_are_recognised(name: str) -> None:
    assert is_test_database_name(name)


@pytest.mark.parametrize("name", ["studybot", "postgres", "contest", "latest_studybot", "", None])
def test_other_database_names_are_refused(name: str | None) -> None:
    assert not is_test_database_name(name)


def test_resetting_a_database_not_named_for_tests_fails_before_connecting() -> None:
    # Port 1 has no server: the refusal must come before any connection is tried.
    with pytest.raises(pytest.fail.Exception, match="Refusing to reset database 'studybot'"):
        _reset_postgres("postgresql+psycopg://studybot:secret@127.0.0.1:1/studybot")


@pytest.mark.parametrize("value", ["1", "true", "True", "TRUE", "yes", "Yes", "on", " true ", "github-actions"])
def test_truthy_ci_values_count_as_ci(value: str) -> None:
    assert ci_enabled(value)


@pytest.mark.parametrize("value", [None, "", " ", "0", "false", "False", "FALSE", "no", "off"])
def test_unset_or_false_ci_values_do_not(value: str | None) -> None:
    assert not ci_enabled(value)


# ------------------------------------------------------------ upgrades at start


def test_the_head_read_from_file_names_is_alembics_own() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from bot.store.database import head_revision, migrations_dir

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    assert ScriptDirectory.from_config(config).get_heads() == [head_revision()]


def test_a_restart_at_the_newest_revision_skips_alembic_and_an_old_database_is_still_upgraded(tmp_path: Path) -> None:
    import subprocess
    import sys

    from bot.store.database import at_head, head_revision, upgrade

    url = f"sqlite:///{tmp_path / 'bot.db'}"
    assert not at_head(url)  # no file yet
    upgrade(url)
    assert at_head(url)
    probe = f"import sys; from bot.store.database import upgrade; upgrade({url!r}); print('alembic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

    old = f"sqlite:///{tmp_path / 'old.db'}"
    from alembic import command
    from alembic.config import Config

    from bot.store.database import migrations_dir

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", old)
    command.upgrade(config, "0009")  # as the release before weekly points left it
    assert not at_head(old)
    upgrade(old)
    assert at_head(old)
    engine = create_engine(old)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == head_revision()
        assert conn.execute(text("SELECT count(*) FROM weekly_points")).scalar_one() == 0
    engine.dispose()
