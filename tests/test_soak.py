"""The soak, short: three simulated days, three communities, three dozen members, every fault
of bench/soak.py at seeded moments, on SQLite and on PostgreSQL; and the one bug the full
soak found, alone: a post the platform took while the database was away for longer than its
busy timeout was sent again once its lease lapsed. The short soak's demo phase (members' demos
through a real Celery worker and Redis, Redis killed and started under them) needs Debian's
redis-server: without it, locally, the soak runs without demos."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bot.background.delivery import Deliverer
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, CommunityRef, Posted, QuestionCard
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import IN_CI, ROOT, FakeClock, migrated_sqlite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import soak  # noqa: E402  (bench/soak.py: a script, not a package)


def test_three_days_under_faults_lose_nothing_and_count_once(db_url: str, tmp_path: Path) -> None:
    demos = shutil.which("redis-server") is not None
    if not demos and IN_CI:
        pytest.fail("CI is set but redis-server is not installed: .ci/run must install it")
    report = soak.soak(db_url, tmp_path, seed=20, days=3, members=36, demos=demos)
    figures = report.figures
    assert report.problems == []
    assert figures["lost"] == 0 and figures["doubled"] == 0
    assert figures["recounts off (points, weeks, bonus, streaks)"] == "0/0/0/0"
    assert figures["outbox rows stuck"] == 0
    # the faults really happened, and so did the traffic they hit
    assert figures["restarts after SIGKILL"] == 3
    assert figures["faults: SIGKILL (between/in-send/after-answer)"] == "1/1/1"
    assert figures["faults: 429 bursts"] >= 1 and figures["faults: 5xx bursts"] >= 1
    assert figures["faults: channel deleted"] == 2
    assert figures["posts given up, shown to admins"] >= 2  # the deleted channels' posts
    # activity happened (a floor, not a count: how many clicks land in their windows varies with
    # the real time the faults take; 45 to 56 seen on the 2-core machine); lost and doubled are exact
    assert figures["daily rounds"] >= 9 and figures["answers stored"] >= 40
    assert figures["repeat clicks answered 'already'"] >= 1 and figures["late answers refused (closed)"] >= 1
    assert figures["forget-me"] == 3
    sent, given_up = map(int, str(figures["decisions told to authors (sent/given up)"]).split("/"))
    assert sent + given_up == int(str(figures["members' questions (sent/refused)"]).split("/")[0]) >= 3
    assert figures["demo jobs stuck"] == 0
    if demos:  # every demo ended, its result or its one sentence posted once, Redis taken away under them
        assert figures["demos asked (queued/refused)"] == "4/0"
        assert figures["demos finished"] + figures["demos failed, said in their channel"] == 4
        once, given_up_demos = str(figures["demo posts once (given up, shown to admins)"]).replace(")", "").split(" (")
        assert int(once) + int(given_up_demos) == 4
        assert figures["faults: Redis killed and restarted (queued/running)"] == "1/0"


def test_the_plan_is_drawn_from_the_seed_alone() -> None:
    """Seeded and repeatable: members, habits and fault moments come from the seed only, the
    same in other processes with other hash seeds (the soak's parent and its restarted children
    each draw the plan; a set's order or a str hash in it would differ between them)."""
    here = repr(soak.make_plan(7, 14, 300, True))
    probe = "import sys; sys.path.insert(0, 'bench'); import soak; print(repr(soak.make_plan(7, 14, 300, True)))"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", probe],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in ("1", "2")
    ]
    drawn = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0], [err for _, err in drawn]
    assert [out.strip() for out, _ in drawn] == [here, here]
    assert soak.make_plan(7, 14, 300, True) == soak.make_plan(7, 14, 300, True)
    assert soak.make_plan(7, 14, 300, True) != soak.make_plan(8, 14, 300, True)


def test_a_post_taken_while_the_database_is_locked_is_recorded_not_sent_again(
    tmp_path: Path, test_bank: Bank, clock: FakeClock
) -> None:
    url = migrated_sqlite(tmp_path / "locked.db")
    database = Database(url, busy_timeout_ms=100)  # a lock longer than this fails a write
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock)
    engine.admin.configure(CommunityRef("console", "club"), "channel", "lobby")
    opened = engine.rounds.open_daily(ChannelRef("console", "club", "lobby"))
    assert isinstance(opened, QuestionCard)
    retried = threading.Event()
    taken = threading.Event()
    released = threading.Event()

    class Retried(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "recording it again" in record.getMessage():
                retried.set()

    handler = Retried()
    logging.getLogger("bot.background.delivery").addHandler(handler)
    sent: list[Posted] = []

    def hold_the_lock() -> None:
        holder = sqlite3.connect(tmp_path / "locked.db", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        taken.set()
        retried.wait(30)  # until the deliverer has failed to record at least once
        holder.execute("ROLLBACK")
        holder.close()
        released.set()

    def send(_channel: ChannelRef, card: Posted) -> str:
        sent.append(card)
        threading.Thread(target=hold_the_lock, daemon=True).start()
        assert taken.wait(10)
        return "lobby:1"

    try:
        deliverer = Deliverer(engine, "console")
        assert deliverer.deliver_due(send) == 1
        assert released.is_set()
        clock.advance(seconds=engine.delivery.lease_s + 60)  # past the lease: nothing is due again
        assert deliverer.deliver_due(send) == 0
    finally:
        logging.getLogger("bot.background.delivery").removeHandler(handler)
        database.dispose()
    assert [type(card).__name__ for card in sent] == ["QuestionCard"]
    assert engine.outbox.undelivered() == []
    with engine.store.read() as tx:
        assert tx.rounds.get_round(opened.round_id).message_ref == "lobby:1"
