"""Answer burst and leaderboard benchmark. Prints figures and ratios; asserts nothing on time.

1. A burst of 5,000 answers from 1,000 users (each user clicks five times: the first counts)
   to one daily round through StudyEngine.answer, with 8 concurrent callers as an asyncio
   platform makes them (asyncio.to_thread behind a semaphore). Baseline in the same run: the
   same 5,000 rows as raw sqlite3 single-row INSERT + COMMIT on the same kind of file.
2. The weekly and all-time leaderboard over 1,000,000 stored answers (1,000 members, seven
   daily rounds a week for 143 weeks), through the engine.

Run: .venv/bin/python bench/answers.py [--users 1000] [--clicks 5] [--stored 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.bank import load_bank  # noqa: E402
from bot.core.engine import StudyEngine  # noqa: E402
from bot.core.values import AlreadyAnswered, AnswerFeedback, ChannelRef, CommunityRef, QuestionCard, UserRef  # noqa: E402
from bot.store.database import Database, upgrade  # noqa: E402
from bot.store.repository import SqlStore

log = logging.getLogger("bench.answers")
ROOT = Path(__file__).resolve().parent.parent
CHANNEL = ChannelRef("discord", "bench-guild", "general")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def burst(
    engine: StudyEngine, round_id: int, users: int, clicks: int, callers: int
) -> tuple[float, list[float], dict[str, int]]:
    gate = asyncio.Semaphore(callers)
    latencies: list[float] = []
    outcomes = {"scored": 0, "already": 0, "other": 0}
    rng = random.Random(7)
    jobs = [(u, rng.randrange(4)) for _ in range(clicks) for u in range(users)]
    rng.shuffle(jobs)

    async def one(user_index: int, choice: int) -> None:
        who = UserRef("discord", "bench-guild", f"u{user_index}", f"User {user_index}")
        async with gate:
            started = time.perf_counter()
            result = await asyncio.to_thread(engine.answer, who, round_id, choice)
            latencies.append((time.perf_counter() - started) * 1000)
        if isinstance(result, AnswerFeedback):
            outcomes["scored"] += 1
        elif isinstance(result, AlreadyAnswered):
            outcomes["already"] += 1
        else:
            outcomes["other"] += 1

    started = time.perf_counter()
    await asyncio.gather(*(one(u, c) for u, c in jobs))
    return time.perf_counter() - started, latencies, outcomes


def raw_baseline(path: Path, rows: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, round_id INT, member_id INT, choice INT, "
        "correct INT, points INT, answered_at TEXT, UNIQUE(round_id, member_id))"
    )
    started = time.perf_counter()
    for i in range(rows):
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO t (round_id, member_id, choice, correct, points, answered_at) VALUES (1, ?, 0, 1, 10, ?)",
            (i, datetime.now(timezone.utc).isoformat()),
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


def fill_answers(path: Path, stored: int, members: int) -> tuple[str, int]:
    """Bulk-load `stored` answers straight into the schema; returns a busy week and its row count."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    now = datetime(2026, 11, 23, tzinfo=timezone.utc)
    conn.execute(
        "INSERT INTO communities (platform, external_id, name, timezone, daily_time, window_hours, "
        "topics, paused, created_at) VALUES ('discord', 'board-guild', 'board', 'UTC', '09:00', 12, '', 0, ?)",
        (now.isoformat(),),
    )
    community = conn.execute("SELECT id FROM communities WHERE external_id='board-guild'").fetchone()[0]
    conn.executemany(
        "INSERT INTO members (community_id, user_id, display_name, created_at) VALUES (?, ?, ?, ?)",
        [(community, f"m{i}", f"Member {i:04d}", now.isoformat()) for i in range(members)],
    )
    member_ids = [r[0] for r in conn.execute("SELECT id FROM members WHERE community_id=?", (community,))]
    rounds_needed = -(-stored // members)
    start = now - timedelta(days=rounds_needed)
    round_rows = []
    for d in range(rounds_needed):
        day = start + timedelta(days=d)
        round_rows.append(
            (
                community,
                "general",
                "bench-q",
                "daily",
                day.date().isoformat(),
                f"general|{day.date().isoformat()}",
                day.isoformat(),
                (day + timedelta(hours=12)).isoformat(),
                (day + timedelta(hours=12)).isoformat(),
                0,
            )
        )
    conn.executemany(
        "INSERT INTO rounds (community_id, channel_id, question_id, kind, local_date, daily_key, "
        "opened_at, closes_at, closed_at, late) VALUES (?,?,?,?,?,?,?,?,?,?)",
        round_rows,
    )
    rounds = conn.execute("SELECT id, opened_at FROM rounds WHERE community_id=? ORDER BY id", (community,)).fetchall()
    rng = random.Random(1)
    batch = []
    written = 0
    for round_id, opened in rounds:
        day = datetime.fromisoformat(opened)
        year, week, _ = day.isocalendar()
        for member in member_ids:
            if written >= stored:
                break
            correct = rng.random() < 0.6
            batch.append(
                (
                    round_id,
                    member,
                    community,
                    "daily",
                    rng.randrange(4),
                    correct,
                    10 + rng.randrange(6) if correct else 0,
                    opened,
                    f"{year}-W{week:02d}",
                )
            )
            written += 1
        if len(batch) >= 50_000:
            conn.executemany(
                "INSERT INTO answers (round_id, member_id, community_id, kind, choice, correct, points, "
                "answered_at, week) VALUES (?,?,?,?,?,?,?,?,?)",
                batch,
            )
            batch.clear()
    if batch:
        conn.executemany(
            "INSERT INTO answers (round_id, member_id, community_id, kind, choice, correct, points, "
            "answered_at, week) VALUES (?,?,?,?,?,?,?,?,?)",
            batch,
        )
    conn.commit()
    conn.execute("ANALYZE")
    week, count = conn.execute(
        "SELECT week, count(*) FROM answers WHERE community_id=? GROUP BY week ORDER BY count(*) DESC LIMIT 1",
        (community,),
    ).fetchone()
    conn.close()
    return week, count


def timed(fn: object, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--clicks", type=int, default=5)
    parser.add_argument("--callers", type=int, default=8)
    parser.add_argument("--stored", type=int, default=1_000_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    bank = load_bank(ROOT / "questions")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        engine = StudyEngine(SqlStore(Database(url)), bank)
        card = engine.open_daily(CHANNEL)
        assert isinstance(card, QuestionCard)
        total = args.users * args.clicks
        elapsed, latencies, outcomes = asyncio.run(burst(engine, card.round_id, args.users, args.clicks, args.callers))
        stored = (
            sqlite3.connect(path)
            .execute("SELECT count(*) FROM answers WHERE round_id=?", (card.round_id,))
            .fetchone()[0]
        )
        raw = raw_baseline(Path(tmp) / "raw.db", total)

        print(
            f"answer burst: {total:,} answers from {args.users:,} users, {args.callers} concurrent callers, SQLite WAL"
        )
        print(
            f"  engine: {total / elapsed:,.0f} answers/s  p50 {statistics.median(latencies):.2f} ms  "
            f"p99 {percentile(latencies, 0.99):.2f} ms  ({elapsed:.2f} s)"
        )
        print(f"  raw sqlite3 single-row commits: {total / raw:,.0f} rows/s ({raw:.2f} s)")
        print(f"  ratio engine/raw throughput: {raw / elapsed:.2f}")
        print(
            f"  scored {outcomes['scored']:,}, already answered {outcomes['already']:,}, other {outcomes['other']}; "
            f"rows stored {stored:,} (expected {args.users:,}): "
            f"{'nothing lost' if stored == args.users else 'MISMATCH'}"
        )

        week, in_week = fill_answers(path, args.stored, 1000)
        community = CommunityRef("discord", "board-guild")
        engine.leaderboard(community, week=week)
        weekly = timed(lambda: engine.leaderboard(community, week=week), 20)
        alltime = timed(lambda: engine.leaderboard(community, all_time=True), 5)
        board = engine.leaderboard(community, week=week)
        print(f"leaderboard over {args.stored:,} stored answers (1,000 members):")
        print(
            f"  weekly ({week}, {in_week:,} answers): median {statistics.median(weekly):.1f} ms, "
            f"max {max(weekly):.1f} ms, {len(board.rows)} rows"
        )
        print(f"  all-time: median {statistics.median(alltime):.1f} ms, max {max(alltime):.1f} ms")
        engine.db.dispose()


if __name__ == "__main__":
    main()
