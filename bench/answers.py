"""Answer burst and leaderboard benchmark. Prints figures and ratios; asserts nothing on time.

1. A burst of 5,000 clicks from 1,000 users (each user clicks five times: the first counts)
   on a daily round through StudyEngine.answer, twice: with 8 callers through
   asyncio.to_thread (the sync path) and with 64 async callers through the platforms' Bridge.
   First clicks (scored writes) and repeat clicks (reads) are timed apart. Baseline in the
   same run: 5,000 rows as raw sqlite3 single-row INSERT + COMMIT on the same kind of file.
2. The weekly and all-time leaderboard over 1,000,000 stored answers (1,000 members, seven
   daily rounds a week for 143 weeks), through the engine.

3. With --postgres URL --processes N: the same burst spread over N bot processes (each its
   own engine and bridge, serving one guild of its own, as Discord shards would) on one
   PostgreSQL, beside raw psycopg single-row INSERT + COMMIT in the same run (one connection,
   and N processes at once); rows stored are checked against answers acknowledged. The
   URL's schema is dropped and rebuilt: give it a database of its own.

Run: .venv/bin/python bench/answers.py [--users 1000] [--clicks 5] [--stored 1000000]
     .venv/bin/python bench/answers.py --postgres URL [--processes 4]
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
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.background.bridge import Bridge  # noqa: E402
from bot.core.bank import load_bank  # noqa: E402
from bot.core.engine import StudyEngine  # noqa: E402
from bot.core.values import AlreadyAnswered, AnswerFeedback, ChannelRef, CommunityRef, QuestionCard, UserRef  # noqa: E402
from bot.store.database import Database, upgrade  # noqa: E402
from bot.store.repository import SqlStore  # noqa: E402

log = logging.getLogger("bench.answers")
ROOT = Path(__file__).resolve().parent.parent
CHANNEL = ChannelRef("discord", "bench-guild", "general")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


Outcomes = dict[str, int]


async def clicks_through(
    call: Callable[[UserRef, int, int], Awaitable[object]],
    round_id: int,
    jobs: list[tuple[int, int]],
    callers: int,
    guild: str = "bench-guild",
) -> tuple[float, dict[str, list[float]], Outcomes]:
    """Send `jobs` (user, choice) as `callers` concurrent async callers; latencies by outcome."""
    gate = asyncio.Semaphore(callers)
    latencies: dict[str, list[float]] = {"scored": [], "already": [], "other": []}
    outcomes = {"scored": 0, "already": 0, "other": 0}

    async def one(user_index: int, choice: int) -> None:
        who = UserRef("discord", guild, f"u{user_index}", f"User {user_index}")
        async with gate:
            started = time.perf_counter()
            result = await call(who, round_id, choice)
            elapsed = (time.perf_counter() - started) * 1000
        kind = (
            "scored"
            if isinstance(result, AnswerFeedback)
            else "already"
            if isinstance(result, AlreadyAnswered)
            else "other"
        )
        outcomes[kind] += 1
        latencies[kind].append(elapsed)

    started = time.perf_counter()
    await asyncio.gather(*(one(u, c) for u, c in jobs))
    return time.perf_counter() - started, latencies, outcomes


async def burst(
    engine: StudyEngine,
    round_id: int,
    users: int,
    clicks: int,
    callers: int,
    bridge: Bridge | None,
    guild: str = "bench-guild",
) -> dict[str, tuple[float, dict[str, list[float]], Outcomes]]:
    """First clicks (one per user: each a scored write), then the repeats (each user clicks
    `clicks - 1` more times: each read-only). Through the bridge, or as the old path did:
    asyncio.to_thread behind a semaphore."""
    rng = random.Random(7)
    first = [(u, rng.randrange(4)) for u in range(users)]
    repeats = [(u, rng.randrange(4)) for _ in range(clicks - 1) for u in range(users)]
    rng.shuffle(first)
    rng.shuffle(repeats)

    async def call(who: UserRef, rid: int, choice: int) -> object:
        if bridge is not None:
            return await bridge.call(engine.rounds.answer, who, rid, choice)
        return await asyncio.to_thread(engine.rounds.answer, who, rid, choice)

    return {
        "first": await clicks_through(call, round_id, first, callers, guild),
        "repeat": await clicks_through(call, round_id, repeats, callers, guild),
    }


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
    conn.execute(  # what the answers' transactions keep beside points_total
        "INSERT INTO weekly_points (member_id, week, community_id, points) SELECT member_id, week, community_id, "
        "SUM(points) FROM answers WHERE community_id = ? GROUP BY member_id, week HAVING SUM(points) > 0",
        (community,),
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


# ------------------------------------------------------------------ PostgreSQL, N processes


def psycopg_url(url: str) -> str:
    """SQLAlchemy's URL as psycopg's own connection string."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def pg_reset(url: str) -> None:
    """An empty schema at the newest revision (the bench refuses nothing: use a database of
    its own, never one that holds a community's data)."""
    import psycopg

    with psycopg.connect(psycopg_url(url), autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
        conn.execute(
            "CREATE TABLE bench_raw (id BIGSERIAL PRIMARY KEY, round_id INT, member_id INT, choice INT, "
            "correct BOOLEAN, points INT, answered_at TIMESTAMPTZ, UNIQUE (round_id, member_id))"
        )
    upgrade(url)


def pg_raw_child(url: str, first: int, rows: int, barrier: Any, results: Any) -> None:
    """`rows` single-row INSERT + COMMIT on one psycopg connection, started with the others."""
    import psycopg

    with psycopg.connect(psycopg_url(url)) as conn:
        conn.execute("SELECT 1")
        conn.commit()
        barrier.wait()
        started = time.time()
        for i in range(first, first + rows):
            conn.execute(
                "INSERT INTO bench_raw (round_id, member_id, choice, correct, points, answered_at) "
                "VALUES (1, %s, 0, true, 10, %s)",
                (i, datetime.now(timezone.utc)),
            )
            conn.commit()
        results.put({"start": started, "end": time.time()})


def pg_bot_child(
    url: str, guild: str, users: int, clicks: int, callers: int, threads: int, barrier: Any, results: Any
) -> None:
    """One bot process: its own engine and bridge on the shared database, serving one guild
    (as a shard would); the burst starts when every process is ready."""
    logging.basicConfig(level=logging.WARNING)
    bank = load_bank(ROOT / "questions")
    database = Database(url)
    engine = StudyEngine(SqlStore(database), bank)
    card = engine.rounds.open_daily(ChannelRef("discord", guild, "general"))
    assert isinstance(card, QuestionCard)
    bridge = Bridge(threads)
    barrier.wait()
    started = time.time()
    phases = asyncio.run(burst(engine, card.round_id, users, clicks, callers, bridge, guild))
    bridge.close()
    database.dispose()
    results.put(
        {
            "start": started,
            "first_seconds": phases["first"][0],
            "end": time.time(),
            "round_id": card.round_id,
            "latencies": {name: phase[1] for name, phase in phases.items()},
            "outcomes": {name: phase[2] for name, phase in phases.items()},
        }
    )


def run_processes(target: Callable[..., None], argsets: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Each argument set in its own (spawned) process, all released together; their reports."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(argsets))
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, barrier, results)) for a in argsets]
    for proc in procs:
        proc.start()
    reports = [results.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join(60)
        if proc.exitcode != 0:
            raise SystemExit(f"a bench process failed (exit code {proc.exitcode})")
    return reports


def postgres_main(args: argparse.Namespace) -> None:
    import psycopg

    url: str = args.postgres
    n = args.processes
    total = args.users * args.clicks
    pg_reset(url)
    with psycopg.connect(psycopg_url(url)) as conn:  # one connection, as in the SQLite baseline
        started = time.perf_counter()
        for i in range(total):
            conn.execute(
                "INSERT INTO bench_raw (round_id, member_id, choice, correct, points, answered_at) "
                "VALUES (0, %s, 0, true, 10, %s)",
                (i, datetime.now(timezone.utc)),
            )
            conn.commit()
        raw_one = total / (time.perf_counter() - started)
    raw = run_processes(pg_raw_child, [(url, i * total, total // n) for i in range(n)])
    raw_n = (total // n * n) / (max(r["end"] for r in raw) - min(r["start"] for r in raw))
    per = args.users // n
    bots = run_processes(
        pg_bot_child,
        [(url, f"shard-{i}", per, args.clicks, args.async_callers, args.bridge_threads) for i in range(n)],
    )
    start, end = min(b["start"] for b in bots), max(b["end"] for b in bots)
    clicks = per * n * args.clicks
    rate = clicks / (end - start)
    first_rate = per * n / max(b["start"] + b["first_seconds"] - start for b in bots)
    every = [ms for b in bots for phase in b["latencies"].values() for v in phase.values() for ms in v]
    firsts = [ms for b in bots for v in b["latencies"]["first"].values() for ms in v]
    acknowledged = sum(b["outcomes"]["first"]["scored"] + b["outcomes"]["repeat"]["scored"] for b in bots)
    other = sum(b["outcomes"][p]["other"] for b in bots for p in ("first", "repeat"))
    with psycopg.connect(psycopg_url(url)) as conn:
        stored = conn.execute(
            "SELECT count(*) FROM answers WHERE round_id = ANY(%s)", ([b["round_id"] for b in bots],)
        ).fetchone()[0]  # type: ignore[index]
    print(
        f"answer burst on PostgreSQL: {clicks:,} clicks from {per * n:,} users ({args.clicks} each: the first "
        f"scores) over {n} bot processes (one guild each, Bridge of {args.bridge_threads} threads, "
        f"{args.async_callers} async callers per process)"
    )
    print(
        f"  raw psycopg single-row commits in the same run: {raw_one:,.0f} rows/s on one connection, "
        f"{raw_n:,.0f} rows/s from {n} processes at once"
    )
    print(
        f"  first clicks {first_rate:>8,.0f}/s  ratio to raw ({n} processes) {first_rate / raw_n:.3f}  "
        f"p50 {statistics.median(firsts):.2f} ms  p99 {percentile(firsts, 0.99):.2f} ms"
    )
    print(
        f"  all clicks   {rate:>8,.0f}/s  ratio to raw ({n} processes) {rate / raw_n:.3f}, to one connection "
        f"{rate / raw_one:.3f}  p50 {statistics.median(every):.2f} ms  p99 {percentile(every, 0.99):.2f} ms"
    )
    lost = acknowledged - stored
    print(
        f"  answers acknowledged {acknowledged:,}, rows stored {stored:,} (expected {per * n:,}), "
        f"refused or failed {other}: {'zero lost' if lost == 0 and stored == per * n else 'MISMATCH'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--clicks", type=int, default=5)
    parser.add_argument("--callers", type=int, default=8, help="to_thread callers (the old path)")
    parser.add_argument("--async-callers", type=int, default=64, help="concurrent async callers on the bridge")
    parser.add_argument("--bridge-threads", type=int, default=8)
    parser.add_argument("--stored", type=int, default=1_000_000)
    parser.add_argument("--postgres", metavar="URL", help="run the burst on this PostgreSQL (its schema is reset)")
    parser.add_argument("--processes", type=int, default=4, help="bot processes sharing the PostgreSQL")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.postgres:
        postgres_main(args)
        return

    bank = load_bank(ROOT / "questions")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        upgrade(url)
        engine = StudyEngine(SqlStore(Database(url)), bank)
        total = args.users * args.clicks
        raw = raw_baseline(Path(tmp) / "raw.db", total)
        raw_rate = total / raw
        print(
            f"answer burst: {total:,} clicks from {args.users:,} users ({args.clicks} each: the first scores), "
            f"SQLite WAL; raw sqlite3 single-row commits in the same run: {raw_rate:,.0f} rows/s"
        )
        modes = [
            ("to_thread", f"asyncio.to_thread, {args.callers} callers", None),
            (
                "bridge",
                f"Bridge ({args.bridge_threads} threads), {args.async_callers} async callers",
                Bridge(args.bridge_threads),
            ),
        ]
        rates: dict[str, float] = {}
        group = engine.store.group  # type: ignore[attr-defined]
        for index, (name, label, bridge) in enumerate(modes):
            group_before = (group.units, group.transactions) if group is not None else (0, 0)
            card = engine.rounds.open_daily(ChannelRef("discord", "bench-guild", f"general-{index}"))
            assert isinstance(card, QuestionCard)
            callers = args.callers if bridge is None else args.async_callers
            phases = asyncio.run(burst(engine, card.round_id, args.users, args.clicks, callers, bridge))
            stored = (
                sqlite3.connect(path)
                .execute("SELECT count(*) FROM answers WHERE round_id=?", (card.round_id,))
                .fetchone()[0]
            )
            elapsed = sum(phase[0] for phase in phases.values())
            every = [ms for phase in phases.values() for values in phase[1].values() for ms in values]
            rates[name] = total / elapsed
            print(f"  {label}:")
            for phase_name, (seconds, latencies, outcomes) in phases.items():
                count = sum(outcomes.values())
                values = [ms for v in latencies.values() for ms in v]
                print(
                    f"    {phase_name + ' clicks':<14} {count / seconds:>8,.0f}/s  "
                    f"ratio to raw {count / seconds / raw_rate:.3f}"
                    f"  p50 {statistics.median(values):.2f} ms  p99 {percentile(values, 0.99):.2f} ms  "
                    f"(scored {outcomes['scored']:,}, already {outcomes['already']:,}, other {outcomes['other']})"
                )
            print(
                f"    all clicks     {rates[name]:>8,.0f}/s  ratio to raw {rates[name] / raw_rate:.3f}  "
                f"p99 {percentile(every, 0.99):.2f} ms; rows stored {stored:,} (expected {args.users:,}): "
                f"{'nothing lost' if stored == args.users else 'MISMATCH'}"
            )
            if group is not None:
                units, transactions = group.units - group_before[0], group.transactions - group_before[1]
                print(
                    f"    group commit: {units:,} first answers written in {transactions:,} transactions "
                    f"({units / max(1, transactions):.1f} per commit)"
                )
            if bridge is not None:
                bridge.close()
        print(f"  bridge / to_thread throughput: {rates['bridge'] / rates['to_thread']:.2f}")

        if args.stored <= 0:  # the answer burst only
            engine.store.db.dispose()  # type: ignore[attr-defined]
            return
        week, in_week = fill_answers(path, args.stored, 1000)
        community = CommunityRef("discord", "board-guild")
        engine.boards.leaderboard(community, week=week)
        weekly = timed(lambda: engine.boards.leaderboard(community, week=week), 20)
        alltime = timed(lambda: engine.boards.leaderboard(community, all_time=True), 5)
        board = engine.boards.leaderboard(community, week=week)
        print(f"leaderboard over {args.stored:,} stored answers (1,000 members):")
        print(
            f"  weekly ({week}, {in_week:,} answers): median {statistics.median(weekly):.1f} ms, "
            f"max {max(weekly):.1f} ms, {len(board.rows)} rows"
        )
        print(f"  all-time: median {statistics.median(alltime):.1f} ms, max {max(alltime):.1f} ms")
        engine.store.db.dispose()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
