"""Shared fixtures: a controllable clock, real SQLite files and (when available) a real
PostgreSQL server, the small test bank, and engines built on them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

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


def _contract_kept(phase: str) -> None:
    found = ledger.take()
    if found:
        listed = "\n".join(f"- {v}" for v in found[:20])
        pytest.fail(f"{len(found)} contract violation(s) during {phase} (tests/contract):\n{listed}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    ledger.take()  # a violation left by an earlier test's last moments is that test's, reported there
    yield
    _contract_kept("setup")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test fails when a fake saw a contract violation (Discord's OpenAPI document, Slack's
    Block Kit models and Web API methods) while it ran."""
    yield
    _contract_kept("the test")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    _contract_kept("teardown")


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


def is_test_database_name(name: str | None) -> bool:
    """Whether a database name plainly marks a throwaway test database: "test" or "tests" as a
    word of it (studybot_test, test-studybot, tests2), not inside another word (contest, latest)."""
    return re.search(r"(?<![a-z])tests?(?![a-z])", (name or "").lower()) is not None


def _reset_postgres(url: str) -> None:
    """Drop and recreate the public schema: only ever on a database named as a test database."""
    name = make_url(url).database
    if not is_test_database_name(name):
        pytest.fail(
            f"Refusing to reset database {name!r} from STUDYBOT_TEST_POSTGRES_URL: the tests drop its "
            "public schema, so its name must mark it as a test database (contain 'test', e.g. studybot_test)."
        )
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


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database: a real SQLite file, then a real PostgreSQL server."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'studybot.db'}"
    else:
        url = postgres_url_or_skip()
        _reset_postgres(url)
    upgrade(url)
    yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'studybot.db'}"
    upgrade(url)
    return url


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    db = Database(db_url)
    yield db
    db.dispose()


@pytest.fixture
def engine(database: Database, test_bank: Bank, clock: FakeClock) -> StudyEngine:
    return StudyEngine(SqlStore(database), test_bank, clock=clock)


def run_studybot(
    tmp_path: Path, args: list[str], stdin: str = "", bank: Path = TEST_BANK, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m bot ARGS` as a user runs it: its own SQLite file and chart folder under tmp_path,
    no platform tokens."""
    env = {
        **os.environ,
        "STUDYBOT_QUESTIONS_DIR": str(bank),
        "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "STUDYBOT_DEMO_OUT_DIR": str(tmp_path / "charts"),
    }
    for token in ("DISCORD_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
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
