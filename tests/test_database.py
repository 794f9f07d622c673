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
from tests.conftest import (
    PostgresDatabases,
    _reset_postgres,
    ci_enabled,
    is_test_database_name,
    migrated_sqlite,
    run_studybot,
)

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
    with pytest.raises(StoreUnavailable) as caught, unit() as conn:
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
        with pytest.raises(StoreUnavailable), db.read() as conn:
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
            with pytest.raises(ProgrammingError), unit() as conn:
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
        with pytest.raises(StoreUnavailable), fast.write() as conn:
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


def test_every_test_the_markers_name_is_still_there(request: pytest.FixtureRequest) -> None:
    """tests/conftest.py marks tests slow or services by name: a renamed or moved test must not
    lose its mark quietly. Checked when the whole suite was collected."""
    from tests.conftest import ROOT, SERVICE_TESTS, SLOW_TESTS, SPLIT_FILES

    config = request.config
    if config.args != [str(ROOT / "tests")] and config.args != ["tests"] or config.option.keyword:
        pytest.skip("checked when the whole suite runs")
    if "slow" in (config.getoption("markexpr") or "") or "services" in (config.getoption("markexpr") or ""):
        pytest.skip("checked when the whole suite runs")
    collected = set()
    for item in request.session.items:
        path = Path(str(item.path)).relative_to(ROOT).as_posix()
        collected |= {path, f"{path}::{getattr(item, 'originalname', item.name)}"}
    assert sorted((SLOW_TESTS | SERVICE_TESTS | SPLIT_FILES) - collected) == []


def test_hypothesis_draws_every_example_under_ci_and_a_share_of_them_by_default() -> None:
    from hypothesis import settings

    from tests.conftest import HYPOTHESIS_PROFILE, IN_CI, examples

    assert settings.get_profile("ci").max_examples == 100 and settings.get_profile("dev").max_examples == 20
    if IN_CI:
        assert HYPOTHESIS_PROFILE == "ci" and settings.default.max_examples == 100 and examples(700) == 700
    if HYPOTHESIS_PROFILE == "dev":
        assert settings.default.max_examples == 20 and examples(700) == 140 and examples(30) == 10


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


# ------------------------------------------------------------ the tests' template databases


def _schema(url: str) -> list[tuple[str, str, list[str]]]:
    """Every table, index and trigger with its definition's lines in order: the clauses of a
    CREATE TABLE as a sorted list (Alembic's batch mode writes the foreign keys of a rebuilt
    table in a different order from one run to the next)."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    conn.close()
    return [
        (kind, name, sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())) for kind, name, sql in rows
    ]


def test_a_migrated_copy_is_what_upgrade_makes_and_start_up_migrates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests' databases are copies of one migrated template (tests/conftest.py): the same
    schema, revision and journal mode as a fresh `upgrade`; the bot's start-up paths (the CLI's
    `db upgrade`, an engine built by the wiring) find a copy at the head and run no migration."""
    from alembic import command

    from bot.store.database import at_head, head_revision, schema_revision, upgrade

    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(fresh)
    copy = migrated_sqlite(tmp_path / "cli.db")  # the file run_studybot's CLI opens
    assert _schema(copy) == _schema(fresh) and len(_schema(copy)) > 20
    assert schema_revision(copy) == head_revision() and at_head(copy)
    with sqlite3.connect(tmp_path / "cli.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with pytest.raises(FileExistsError):
        migrated_sqlite(tmp_path / "cli.db")  # never over a database a test already has

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a migration ran on a database already at the head")

    monkeypatch.setattr(command, "upgrade", refuse)
    done = run_studybot(tmp_path, ["db", "upgrade"])
    assert done.returncode == 0 and "is up to date" in done.stdout, done.stdout + done.stderr
    jobs = run_studybot(tmp_path, ["jobs"])  # the engine, built by bot/wiring.py on the copy
    assert jobs.returncode == 0, jobs.stderr


def test_each_postgres_test_gets_its_own_copy_of_the_migrated_template(postgres_databases: PostgresDatabases) -> None:
    from bot.store.database import at_head

    with postgres_databases.fresh() as first, postgres_databases.fresh() as second:
        assert first != second and at_head(first) and at_head(second)
        for url in (first, second):
            assert is_test_database_name(url.rsplit("/", 1)[1])
        one = create_engine(first)
        with one.begin() as conn:
            conn.execute(text("CREATE TABLE only_here (id INTEGER)"))
        one.dispose()
        other = create_engine(second)
        with other.connect() as conn:  # the other copy, and so the template, did not get it
            assert conn.execute(text("SELECT to_regclass('only_here')")).scalar() is None
        other.dispose()
    with postgres_databases.fresh(migrated=False) as empty:
        assert not at_head(empty)
    with postgres_databases.admin.connect() as conn:  # each dropped after its test
        names = set(conn.execute(text("SELECT datname FROM pg_database")).scalars())
    assert postgres_databases.template in names
    assert not {first.rsplit("/", 1)[1], second.rsplit("/", 1)[1], empty.rsplit("/", 1)[1]} & names
