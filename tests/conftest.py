"""Shared fixtures: a controllable clock, real SQLite files and (when available) a real
PostgreSQL server, the small test bank, engines built on them, and the CLI run as users run it.

Databases are made fast without being shared: each process (each pytest-xdist worker) migrates
one SQLite template file and one PostgreSQL template database on first use, and every test gets
its own copy (a file copy; `CREATE DATABASE ... TEMPLATE`), exactly what `upgrade` would have
left, dropped after the test. Tests of the migrations themselves still run real upgrades."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from bot.core.bank import Bank, load_bank
from bot.core.engine import StudyEngine
from bot.store.database import Database, upgrade
from bot.store.repository import SqlStore
from tests.contract import ledger

ROOT = Path(__file__).resolve().parent.parent
TEST_BANK = ROOT / "tests" / "data" / "bank"
POSTGRES_URL = os.environ.get("STUDYBOT_TEST_POSTGRES_URL")


def ci_enabled(value: str | None) -> bool:
    """Whether a CI environment variable says "this is CI": any value but unset, empty, 0,
    false, no or off (case-insensitive), so CI=1, CI=True and CI=yes all count."""
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


IN_CI = ci_enabled(os.environ.get("CI"))

# Hypothesis: `ci` draws the full number of examples (each test's own count); `dev`, the default
# on a developer's machine, a fifth of them. STUDYBOT_HYPOTHESIS_PROFILE picks one; CI=true
# (and .ci/run) picks `ci`.
FULL_EXAMPLES = 100  # Hypothesis's own default
hypothesis_settings.register_profile("ci", max_examples=FULL_EXAMPLES, deadline=None, print_blob=True)
hypothesis_settings.register_profile("dev", max_examples=FULL_EXAMPLES // 5, deadline=None)
HYPOTHESIS_PROFILE = os.environ.get("STUDYBOT_HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev")
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)


def examples(full: int) -> int:
    """A test's own example count under the loaded Hypothesis profile: `full` under `ci`, the
    same share of it as the profile's default under `dev` (at least 10)."""
    share = hypothesis_settings.default.max_examples / FULL_EXAMPLES
    return full if share >= 1 else max(10, round(full * share))


def pytest_report_header() -> str:  # pluggy passes a hook only the arguments it names
    return f"hypothesis profile: {HYPOTHESIS_PROFILE} (STUDYBOT_HYPOTHESIS_PROFILE; ci under CI=true)"


def installed_or_skip(module: str) -> ModuleType:
    """`module`, imported; without it a skip on a developer's machine (the demo extras not
    installed) but a failure under CI, where .ci/run installs every extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if IN_CI:
            pytest.fail(f"CI is set but {module} cannot be imported ({exc}): `make test` installs .[demo,dev]")
        pytest.skip(f"{module} is not installed (pip install -e '.[demo]')")


def _contract_kept(phase: str) -> None:
    found = ledger.take()
    if found:
        listed = "\n".join(f"- {v}" for v in found[:20])
        pytest.fail(f"{len(found)} contract violation(s) during {phase} (tests/contract):\n{listed}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup() -> Iterator[None]:
    ledger.take()  # a violation left by an earlier test's last moments is that test's, reported there
    yield
    _contract_kept("setup")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call() -> Iterator[None]:
    """A test fails when a fake saw a contract violation (Discord's OpenAPI document, Slack's
    Block Kit models and Web API methods) while it ran."""
    yield
    _contract_kept("the test")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown() -> Iterator[None]:
    yield
    _contract_kept("teardown")


# ------------------------------------------------------------------------------ markers

# Fixtures that start or reach a service (Chromium, Redis and a Celery worker, PostgreSQL): a
# test using one is marked `services`, so `-m "not services"` leaves it out; so is every
# PostgreSQL-parametrised test (db_url), and the tests below that start a service themselves.
SERVICE_FIXTURES = {"driver", "redis_server", "redis_url", "postgres_url", "postgres_databases"}
SERVICE_TESTS = {"tests/test_soak.py::test_three_days_under_faults_lose_nothing_and_count_once"}  # Redis, Celery
# Where PyTorch runs in the test process: `-m "not torch"`.
TORCH_FILES = ("tests/demos/", "tests/facts/", "tests/test_bank_demos.py")
# The tests that take seconds each on the 2-core CI machine (real processes: the CLI's, a demo's,
# a Celery worker's; Chromium; the soak; torch runs): `-m "not slow"` for a quick pass. A file
# name alone marks every test in it. Under pytest-xdist the files holding them are handed out
# first, and those of SPLIT_FILES test by test (no module-scoped fixture there to share).
SLOW_TESTS = {
    "tests/demos/test_checkpoint_demo.py",
    "tests/demos/test_estimate.py::test_estimate_cli_json",
    "tests/demos/test_estimate.py::test_estimate_cli_says_which_kernels_it_assumed",
    "tests/demos/test_honest_times.py",
    "tests/demos/test_plan.py",
    "tests/demos/test_transformer_demo.py",
    "tests/facts/test_compile.py::test_inductor_fuses_the_recomputed_sin_into_the_backward_kernel",
    "tests/facts/test_correctness.py::test_compiled_gradients_differ_by_the_decompositions_rounding",
    "tests/facts/test_memory_anatomy.py",
    "tests/facts/test_schedules.py::test_demo_sqrt_peak_is_above_block_for_nine_blocks",
    "tests/facts/test_selective.py::test_saving_matmuls_trades_memory_for_fewer_recomputed_mm",
    "tests/test_adaptive.py::test_simulated_population_lands_near_the_target_and_ratings_rank_abilities",
    "tests/test_bank_demos.py",
    "tests/test_cli.py::test_demo_cli_shows_each_strategy_as_it_is_measured",
    "tests/test_cli.py::test_demo_from_the_chat_runs_in_a_worker_and_posts_a_table_and_chart",
    "tests/test_console.py::test_a_demo_is_queued_then_answers_in_the_channel",
    "tests/test_demo_guards.py",
    "tests/test_discord.py::test_demo_checkpoint_and_estimate_on_the_local_back_end",
    "tests/test_fsrs_fit.py",
    "tests/test_jobs.py",
    "tests/test_leftovers_shard_demo.py::test_the_shard_holding_the_guild_runs_its_demo_and_edits_its_message",
    "tests/test_newcomer.py::test_the_one_person_console_has_no_demo_cooldown_unless_set",
    "tests/test_platform_start.py",
    "tests/test_see_it_run.py::test_console_prints_the_command_that_queues_the_questions_demo",
    "tests/test_seam_rules.py::test_a_checkpoint_result_becomes_a_card",
    "tests/test_seam_rules.py::test_the_right_answer_lands_on_every_position_evenly",
    "tests/test_shipping.py::test_doctor_checks_redis_and_a_celery_worker_taking_the_queue",
    "tests/test_slack.py::test_demo_runs_on_the_local_back_end_through_serve",
    "tests/test_soak.py::test_three_days_under_faults_lose_nothing_and_count_once",
    "tests/test_web.py::test_pages_pass_axe_accessibility_check",
}
SPLIT_FILES = {
    "tests/test_bank_demos.py",
    "tests/test_demo_guards.py",
    "tests/test_jobs.py",
    "tests/test_platform_start.py",
    "tests/test_soak.py",
    "tests/demos/test_plan.py",
}


def _relative(item: pytest.Item) -> str:
    return Path(str(item.path)).relative_to(ROOT).as_posix()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "gpu" not in (config.getoption("markexpr") or ""):  # a `-m` of one's own replaces addopts' "not gpu"
        gpu = [item for item in items if item.get_closest_marker("gpu") is not None]
        if gpu:
            config.hook.pytest_deselected(items=gpu)
            items[:] = [item for item in items if item.get_closest_marker("gpu") is None]
    slow_files: set[str] = set()
    for item in items:
        path = _relative(item)
        test = f"{path}::{getattr(item, 'originalname', item.name)}"
        if path in SLOW_TESTS or test in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
            slow_files.add(path)
        if test in SERVICE_TESTS or SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
        if path.startswith(TORCH_FILES):
            item.add_marker(pytest.mark.torch)
    if _distributed(config):  # the long files first, so that no worker is left with one at the end
        items.sort(key=lambda item: _relative(item) not in slow_files)


def _distributed(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) or "PYTEST_XDIST_WORKER" in os.environ


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, except that the tests of SPLIT_FILES go out one by one: a file stays on
    one worker (its module fixtures built once), and the slow files' tests share the workers."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # keep the collection's order: the slow files first

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPLIT_FILES else path

    return ByFile(config, log)


@dataclass
class FakeClock:
    """A clock the tests move by hand; engine and scheduler both read it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now

    def set(self, moment: datetime) -> None:
        self.now = moment


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc))  # a Monday


@pytest.fixture(scope="session")
def test_bank() -> Bank:
    return load_bank(TEST_BANK)


# ------------------------------------------------------------------------------ SQLite

_sqlite_template_path: Path | None = None
_template_lock = threading.Lock()


def sqlite_template() -> Path:
    """This process's migrated SQLite file: `upgrade` run once on first use, its WAL folded back
    into the file, so that a copy of the one file is the whole database."""
    global _sqlite_template_path
    with _template_lock:
        if _sqlite_template_path is None:
            folder = Path(tempfile.mkdtemp(prefix="studybot-template-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            path = folder / "template.db"
            upgrade(f"sqlite:///{path}")
            conn = sqlite3.connect(path)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.close()
            wal = path.with_name(path.name + "-wal")
            assert not wal.exists() or wal.stat().st_size == 0, "the template's WAL was not folded back"
            _sqlite_template_path = path
        return _sqlite_template_path


def migrated_sqlite(path: Path) -> str:
    """A migrated SQLite database at `path`, as `upgrade` leaves one (at the head revision, in
    WAL mode), copied from this process's template; its URL."""
    if path.exists():
        raise FileExistsError(f"{path} exists: a migrated copy goes to a new file")
    shutil.copyfile(sqlite_template(), path)
    return f"sqlite:///{path}"


# ------------------------------------------------------------------------------ PostgreSQL


def is_test_database_name(name: str | None) -> bool:
    """Whether a database name plainly marks a throwaway test database: "test" or "tests" as a
    word of it (studybot_test, test-studybot, tests2), not inside another word (contest, latest)."""
    return re.search(r"(?<![a-z])tests?(?![a-z])", (name or "").lower()) is not None


def _refuse_unless_test_database(name: str | None) -> None:
    if not is_test_database_name(name):
        pytest.fail(
            f"Refusing to reset database {name!r} from STUDYBOT_TEST_POSTGRES_URL: the tests drop its "
            "public schema, so its name must mark it as a test database (contain 'test', e.g. studybot_test)."
        )


def _reset_postgres(url: str) -> None:
    """Drop and recreate the public schema: only ever on a database named as a test database."""
    _refuse_unless_test_database(make_url(url).database)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def postgres_url_or_skip() -> str:
    if POSTGRES_URL:
        return POSTGRES_URL
    if IN_CI:
        pytest.fail(
            f"CI={os.environ.get('CI')} but STUDYBOT_TEST_POSTGRES_URL is not set: .ci/run must start PostgreSQL"
        )
    pytest.skip("PostgreSQL not available: set STUDYBOT_TEST_POSTGRES_URL to run the store tests on it")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PostgresDatabases:
    """Databases of their own on the server of STUDYBOT_TEST_POSTGRES_URL, named after its test
    database (studybot_test_gw0_4242_7: the xdist worker, this process, a count): a template
    migrated once per process, and per test a copy of it (CREATE DATABASE ... TEMPLATE), or an
    empty one, dropped after. The role needs CREATEDB (.ci/run grants it)."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        _refuse_unless_test_database(self.url.database)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.family = f"{self.url.database}_"
        self.prefix = f"{self.family}{worker}_{os.getpid()}_"
        self.template = f"{self.prefix}template"
        self.count = 0
        self._admin: Engine | None = None
        self._migrated = False

    @property
    def admin(self) -> Engine:
        """Connected to the configured test database itself, never to a copy or the template."""
        if self._admin is None:
            self._admin = create_engine(self.url, isolation_level="AUTOCOMMIT", pool_size=1)
        return self._admin

    def _execute(self, sql: str) -> None:
        try:
            with self.admin.connect() as conn:
                conn.execute(text(sql))
        except DBAPIError as exc:
            if "permission denied to create database" in str(exc.orig):
                pytest.fail(
                    f"The role {self.url.username!r} may not create databases: the tests give each test a copy "
                    f"of a migrated template. Run: ALTER ROLE {self.url.username} CREATEDB",
                    pytrace=False,
                )
            raise

    def drop(self, name: str) -> None:
        """Drop a database of this family: its connections (this role's) ended first, then a plain
        DROP DATABASE, which also stops an autovacuum worker there (WITH (FORCE) may not end
        that one: it is not this role's)."""
        _refuse_unless_test_database(name)
        for attempt in range(50):
            with self.admin.connect() as conn:
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :name AND usename = current_user AND pid <> pg_backend_pid()"
                    ),
                    {"name": name},
                )
                try:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
                    return
                except DBAPIError as exc:
                    if "is being accessed by other users" not in str(exc.orig) or attempt == 49:
                        raise
            time.sleep(0.1)

    def url_of(self, name: str) -> str:
        return self.url.set(database=name).render_as_string(hide_password=False)

    def _drop_leftovers(self) -> None:
        """Databases an earlier run of this family left behind when it was killed: those whose
        process is gone from this machine."""
        with self.admin.connect() as conn:
            names = conn.execute(text("SELECT datname FROM pg_database")).scalars().all()
        for name in names:
            parts = name.removeprefix(self.family).split("_")
            if name.startswith(self.family) and len(parts) == 3 and parts[1].isdigit() and not _alive(int(parts[1])):
                self.drop(name)

    def _migrate_template(self) -> None:
        if not self._migrated:
            self._drop_leftovers()
            self.drop(self.template)
            self._execute(f'CREATE DATABASE "{self.template}"')
            upgrade(self.url_of(self.template))  # its engines use no pool: nothing stays connected
            self._migrated = True

    @contextlib.contextmanager
    def fresh(self, migrated: bool = True) -> Iterator[str]:
        """The URL of a new database: a copy of the migrated template, or empty."""
        if migrated:
            self._migrate_template()
        self.count += 1
        name = f"{self.prefix}{self.count}"
        _refuse_unless_test_database(name)
        source = f' TEMPLATE "{self.template}"' if migrated else ""
        self._execute(f'CREATE DATABASE "{name}"{source}')
        try:
            yield self.url_of(name)
        finally:
            self.drop(name)

    def close(self) -> None:
        if self._migrated:
            self.drop(self.template)
        if self._admin is not None:
            self._admin.dispose()


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[PostgresDatabases]:
    databases = PostgresDatabases(postgres_url_or_skip())
    yield databases
    databases.close()


@pytest.fixture
def postgres_url(postgres_databases: PostgresDatabases) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database of this test's own."""
    with postgres_databases.fresh() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.services])])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database: a real SQLite file, then a real PostgreSQL server."""
    if request.param == "sqlite":
        yield migrated_sqlite(tmp_path / "studybot.db")
    else:
        yield request.getfixturevalue("postgres_url")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return migrated_sqlite(tmp_path / "studybot.db")


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    db = Database(db_url)
    yield db
    db.dispose()


@pytest.fixture
def engine(database: Database, test_bank: Bank, clock: FakeClock) -> StudyEngine:
    return StudyEngine(SqlStore(database), test_bank, clock=clock)


# ------------------------------------------------------------------------------ the CLI

TOKENS = ("DISCORD_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")


def _cli_environment(tmp_path: Path, bank: Path) -> dict[str, str]:
    return {
        "STUDYBOT_QUESTIONS_DIR": str(bank),
        "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "STUDYBOT_DEMO_OUT_DIR": str(tmp_path / "charts"),
    }


def run_studybot_process(
    tmp_path: Path, args: list[str], stdin: str = "", bank: Path = TEST_BANK, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m bot ARGS` as a real process, as a user runs it: its own SQLite file and chart
    folder under tmp_path, no platform tokens. Each command group keeps one test on this path
    (the entry point, the exit codes); the rest use run_studybot, the same in this process."""
    env = {**os.environ, **_cli_environment(tmp_path, bank)}
    for token in TOKENS:
        env.pop(token, None)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout,
    )


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    """Logging as it was: the CLI configures logging for its process (basicConfig(force=True)
    on the stream it was given, levels of the libraries' loggers)."""
    manager = logging.Logger.manager
    loggers = [logging.getLogger(), *(lg for lg in manager.loggerDict.values() if isinstance(lg, logging.Logger))]
    kept = [(lg, lg.level, list(lg.handlers), list(lg.filters), lg.propagate, lg.disabled) for lg in loggers]
    disabled = logging.root.manager.disable
    try:
        yield
    finally:
        logging.disable(disabled)
        for lg, level, handlers, filters, propagate, was_disabled in kept:
            lg.setLevel(level)
            lg.handlers[:] = handlers
            lg.filters[:] = filters
            lg.propagate, lg.disabled = propagate, was_disabled
        known = {id(lg) for lg, *_ in kept}
        for lg in list(manager.loggerDict.values()):  # loggers born during the run: quiet again
            if isinstance(lg, logging.Logger) and id(lg) not in known:
                lg.handlers.clear()
                lg.filters.clear()
                lg.setLevel(logging.NOTSET)


def invoke_studybot(
    args: list[str], cwd: Path, env: dict[str, str | None] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`python -m bot ARGS` in this process (Typer's CliRunner) from the folder `cwd`, with this
    process's environment plus `env` (None unsets a variable): exit code, stdout and stderr as a
    process's. Called from a synchronous test (run_studybot also serves coroutines)."""
    from typer.testing import CliRunner

    from bot.cli import app

    before = Path.cwd()
    os.chdir(cwd)
    try:
        with _logging_kept():
            # Exceptions propagate: where a real process would print a traceback and exit 1, the
            # test fails with the traceback.
            done = CliRunner().invoke(
                app, args, input=stdin, env=env or {}, catch_exceptions=False, prog_name="python -m bot"
            )
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(
        ["python", "-m", "bot", *args], done.exit_code, stdout=done.stdout, stderr=done.stderr
    )


def run_studybot(
    tmp_path: Path,
    args: list[str],
    stdin: str = "",
    bank: Path = TEST_BANK,
    timeout: float = 300,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`studybot ARGS` in this process, through Typer's CliRunner, as run_studybot_process runs
    it in its own (same folder, settings, database, stdin; exit code, stdout and stderr apart);
    `process=True` runs the real process. The timeout holds for a process only (in this one,
    pytest-timeout's)."""
    if process:
        return run_studybot_process(tmp_path, args, stdin, bank, timeout)
    env: dict[str, str | None] = {**_cli_environment(tmp_path, bank), **dict.fromkeys(TOKENS)}
    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return invoke_studybot(args, tmp_path, env, stdin)
    # Called from a coroutine: the command runs its own event loop, so it runs in a thread (the
    # caller's loop waits, as it waited for the process).
    result: list[subprocess.CompletedProcess[str]] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(invoke_studybot(args, tmp_path, env, stdin))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread, which raises it
            failure.append(exc)

    worker = threading.Thread(target=work, name="studybot-cli")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return result[0]
