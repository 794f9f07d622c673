"""One composition root: bot/wiring.py is the only module of bot/ that constructs the
process's long-lived objects (a Database, the store, the engine, the scheduler, the demo-job
runner, the Runtime); the platforms and the CLI are handed them. Read from the source with
the ast module, so a new `Database(...)` anywhere else fails here with its file and line."""

from __future__ import annotations

import ast
from pathlib import Path

from bot.core.engine import StudyEngine
from bot.platforms.runtime import Runtime
from bot.store.repository import SqlStore
from bot.wiring import build_engine, build_runtime
from tests.conftest import FakeClock

ROOT = Path(__file__).resolve().parent.parent
BUILT_ONCE = ("Database", "SqlStore", "StudyEngine", "StudyScheduler", "DemoJobRunner", "Runtime", "WeeklyFits")
ROOT_MODULE = Path("bot/wiring.py")


def constructions(source: str) -> list[tuple[int, str]]:
    """(line, class) of each call of a BUILT_ONCE class by its plain or dotted name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in BUILT_ONCE:
                found.append((node.lineno, name))
    return found


def test_only_the_composition_root_builds_the_process_objects() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{line}: {name}(...)"
        for path in sorted((ROOT / "bot").rglob("*.py"))
        if path.relative_to(ROOT) != ROOT_MODULE and "migrations" not in path.parts
        for line, name in constructions(path.read_text())
    ]
    assert outside == [], "built outside bot/wiring.py:\n" + "\n".join(outside)
    built = {name for _, name in constructions((ROOT / ROOT_MODULE).read_text())}
    assert {"Database", "SqlStore", "StudyEngine", "StudyScheduler", "DemoJobRunner", "Runtime", "WeeklyFits"} <= built


def test_the_check_finds_a_construction_where_it_does_not_belong() -> None:
    stray = "from bot.store.database import Database\n\n\ndef f(url):\n    return Database(url)\n"
    assert constructions(stray) == [(5, "Database")]


def test_the_runtime_shares_the_engine_and_its_one_database(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A running bot's pieces meet in one place: the runtime's scheduler and demo runner use its
    engine, and the database it hands the platforms (Slack's installation store) is the
    engine's own, not a second one on the same URL."""
    from bot.config import Settings

    monkeypatch.setenv("STUDYBOT_DATABASE_URL", f"sqlite:///{tmp_path / 'bot.db'}")
    monkeypatch.setenv("STUDYBOT_WORKER", "local")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = build_engine(settings)
    runtime = build_runtime(engine, ("console",), settings)
    try:
        assert isinstance(runtime, Runtime) and isinstance(engine, StudyEngine)
        store = engine.store
        assert isinstance(store, SqlStore) and runtime.database is store.db
        assert runtime.scheduler.engine is engine and runtime.demo_runner is not None
        assert runtime.demo_runner.engine is engine
        # the runtime connected the pieces' callbacks to itself
        assert runtime.scheduler.on_claimed == runtime.wake
        assert runtime.demo_runner.on_finished == runtime.wake
    finally:
        runtime.bridge.close()
        store.db.dispose()


def test_a_test_engine_clock_reaches_every_service(tmp_path: Path) -> None:
    """The services share one clock and one store: moving the test clock moves every service."""
    from datetime import datetime, timezone

    from bot.core.bank import load_bank
    from bot.store.database import Database, upgrade
    from tests.conftest import TEST_BANK

    url = f"sqlite:///{tmp_path / 'bot.db'}"
    upgrade(url)
    clock = FakeClock(datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc))
    engine = StudyEngine(SqlStore(Database(url)), load_bank(TEST_BANK), clock=clock)
    clock.advance(hours=30)
    moments = {engine.now(), engine.rounds.now(), engine.boards.now(), engine.outbox.now(), engine.web.now()}
    assert moments == {datetime(2026, 12, 2, 15, 0, tzinfo=timezone.utc)}
    assert engine.rounds.store is engine.boards.store is engine.store
