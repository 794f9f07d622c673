"""Study web page benchmark. Prints figures and ratios; asserts nothing on time.

A community of 10,000 members and 1,000,000 answers (100 daily rounds of the real bank, each
answered by every member; 14 ISO weeks), bulk-loaded with sqlite3 into the migrated schema.
Each page is fetched over HTTP from the app served on 127.0.0.1 (one keep-alive connection,
sequential requests: the time of one page, not throughput), and beside it, in the same run,
the store queries that page makes, run bare through SqlStore (no engine, no template).

Target (issue 13): p99 under 50 ms and under 3x the bare query. Issue 23: the admin page and
the weekly post (its board and the item analysis's flags) p99 under 50 ms at a million answers:
both read the item figures kept with every answer, and the members' picks of the questions few
get right (--hard-share of the rounds ask a question 30% get right: those are read).

Run: .venv/bin/python bench/web.py [--members 10000] [--answers 1000000] [--repeat 200]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import logging
import random
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.bank import load_bank  # noqa: E402
from bot.core.engine import StudyEngine  # noqa: E402
from bot.core.rules import scoring  # noqa: E402
from bot.core.rules.item_analysis import wanted_picks  # noqa: E402
from bot.core.values import CommunityRef  # noqa: E402
from bot.store import item_stats  # noqa: E402
from bot.store.database import Database, upgrade  # noqa: E402
from bot.store.repository import SqlStore, SqlTx  # noqa: E402
from bot.web.app import WebServer, build_app  # noqa: E402
from bot.web.links import WebLinks  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
COMMUNITY = CommunityRef("discord", "web-guild")
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)  # a Thursday, W48


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def fill(
    path: Path, members: int, answers: int, question_ids: list[str], hard_share: float, confident_share: float
) -> int:
    """Bulk-load the community; returns its id. Every round is closed (its question revealed).
    One round in 1/hard_share asks a hard question (30% right, not 60%); confident_share of the
    answers say how sure (sure 60% of those), which the admin page's calibration counts."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    created = NOW - timedelta(days=200)
    conn.execute(
        "INSERT INTO communities (platform, external_id, name, timezone, daily_time, window_hours, topics, "
        "paused, created_at, channel_id, web_public) VALUES (?, ?, 'web bench', 'UTC', '09:00', 12, '', 0, ?, "
        "'general', 0)",
        (COMMUNITY.platform, COMMUNITY.community_id, created.isoformat()),
    )
    community = conn.execute("SELECT id FROM communities WHERE external_id=?", (COMMUNITY.community_id,)).fetchone()[0]
    conn.executemany(
        "INSERT INTO members (community_id, user_id, display_name, created_at) VALUES (?, ?, ?, ?)",
        [(community, f"m{i}", f"Member {i:05d}", created.isoformat()) for i in range(members)],
    )
    member_ids = [r[0] for r in conn.execute("SELECT id FROM members WHERE community_id=? ORDER BY id", (community,))]
    days = -(-answers // members)
    start = NOW.replace(hour=9) - timedelta(days=days)
    rounds = []
    for d in range(days):
        day = start + timedelta(days=d)
        rounds.append(
            (
                community,
                "general",
                question_ids[d % len(question_ids)],
                "daily",
                day.date().isoformat(),
                f"{community}|general|{day.date().isoformat()}",
                day.isoformat(),
                (day + timedelta(hours=12)).isoformat(),
                (day + timedelta(hours=12)).isoformat(),
                0,
            )
        )
    conn.executemany(
        "INSERT INTO rounds (community_id, channel_id, question_id, kind, local_date, daily_key, opened_at, "
        "closes_at, closed_at, late) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rounds,
    )
    rng = random.Random(13)
    every = round(1 / hard_share) if hard_share > 0 else 0
    written = 0
    batch: list[tuple[Any, ...]] = []
    said = random.Random(14)  # who said how sure: its own stream, so the answers are as before
    insert = (
        "INSERT INTO answers (round_id, member_id, community_id, kind, choice, correct, points, answered_at, week, "
        "confidence) VALUES (?,?,?,?,?,?,?,?,?,?)"
    )
    for round_id, opened in conn.execute(
        "SELECT id, opened_at FROM rounds WHERE community_id=? ORDER BY id", (community,)
    ):
        moment = datetime.fromisoformat(opened)
        week = scoring.iso_week(moment, "UTC")
        share = 0.3 if every and round_id % every == 0 else 0.6
        for member in member_ids:
            if written >= answers:
                break
            correct = rng.random() < share
            confidence = None
            if said.random() < confident_share:
                confidence = "sure" if said.random() < 0.6 else "unsure"
            batch.append(
                (
                    round_id,
                    member,
                    community,
                    "daily",
                    rng.randrange(4),
                    correct,
                    10 if correct else 0,
                    opened,
                    week,
                    confidence,
                )
            )
            written += 1
        if len(batch) >= 100_000:
            conn.executemany(insert, batch)
            batch.clear()
    conn.executemany(insert, batch)
    conn.execute(
        "UPDATE members SET points_total = (SELECT COALESCE(SUM(points), 0) FROM answers "
        "WHERE answers.member_id = members.id) WHERE community_id = ?",
        (community,),
    )
    conn.execute(  # what the answers' transactions keep beside points_total
        "INSERT INTO weekly_points (member_id, week, community_id, points) SELECT member_id, week, community_id, "
        "SUM(points) FROM answers WHERE community_id = ? GROUP BY member_id, week HAVING SUM(points) > 0",
        (community,),
    )
    # ... and the item analysis's figures (bot/store/item_stats.py; these rounds show the file order).
    joined = "FROM answers a JOIN rounds r ON r.id = a.round_id WHERE a.community_id = ?"
    conn.execute(
        "INSERT INTO item_counts (community_id, question_id, choice, slot, answers, correct) SELECT a.community_id, "
        f"r.question_id, a.choice, a.member_id % {item_stats.SLOTS}, COUNT(*), SUM(a.correct) {joined} "
        f"GROUP BY r.question_id, a.choice, a.member_id % {item_stats.SLOTS}",
        (community,),
    )
    conn.execute(
        "INSERT INTO item_picks (member_id, question_id, choice, community_id, answers, correct) SELECT a.member_id, "
        f"r.question_id, a.choice, a.community_id, COUNT(*), SUM(a.correct) {joined} "
        "GROUP BY a.member_id, r.question_id, a.choice",
        (community,),
    )
    conn.execute(
        "INSERT INTO item_members (member_id, community_id, answers, correct) SELECT member_id, community_id, "
        "COUNT(*), SUM(correct) FROM answers WHERE community_id = ? GROUP BY member_id",
        (community,),
    )
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()
    return int(community)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # warm
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _one(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--hard-share", type=float, default=0.1, help="share of rounds whose question few get right")
    parser.add_argument("--confident-share", type=float, default=0.5, help="share of answers saying how sure")
    parser.add_argument("--weeks", type=int, default=100, help="weekly posts timed (one per ISO week)")
    parser.add_argument("--db", type=Path, help="keep the loaded database here and reuse it on the next run")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    bank = load_bank(ROOT / "questions")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "web.db"
        url = f"sqlite:///{path}"
        t0 = time.perf_counter()
        if path.exists():
            upgrade(url)  # a database kept by an earlier run gets the newer migrations (and their backfill)
            community_id = sqlite3.connect(path).execute("SELECT id FROM communities").fetchone()[0]
        else:
            upgrade(url)
            community_id = fill(
                path, args.members, args.answers, [q.id for q in bank.questions], args.hard_share, args.confident_share
            )
        print(
            f"web page: {args.members:,} members, {args.answers:,} answers in one community "
            f"(loaded in {time.perf_counter() - t0:.1f} s), SQLite WAL, one keep-alive HTTP connection"
        )
        database = Database(url)
        store = SqlStore(database)
        links = WebLinks("http://127.0.0.1", "bench-secret", 3600)
        engine = StudyEngine(store, bank, clock=lambda: NOW, links=links)
        server = WebServer(build_app(engine, links), "127.0.0.1", 0)
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(server.start())
            started.set()
            loop.run_forever()

        threading.Thread(target=serve, daemon=True).start()
        started.wait(30)
        member = f"m{args.members // 2}"
        member_token = links.token(COMMUNITY, member)
        admin_token = links.token(COMMUNITY, None, admin=True)
        week = scoring.iso_week(NOW, "UTC")
        with store.read() as tx:
            member_id = tx.members.find_member(community_id, member)
        assert member_id is not None

        def bare(work: Callable[[SqlTx], object]) -> Callable[[], object]:
            def run() -> object:
                with store.read() as tx:
                    return work(tx)

            return run

        def member_queries(tx: SqlTx) -> object:
            tx.members.member_named(community_id, member)
            tx.boards.week_points(member_id)
            tx.answers.question_outcomes(member_id)
            tx.answers.missed_answers(member_id, 100)
            tx.reviews.reviews(member_id)
            tx.answers.answer_stats(member_id)
            tx.members.points_total(member_id)
            tx.boards.week_rank(community_id, week, member_id)  # the member's rank this week
            tx.streaks.daily_history(community_id, member_id)  # the streaks
            tx.ratings.member_ratings(member_id)
            return tx.reviews.reviews_due(member_id, NOW)

        pages: list[tuple[str, str, Callable[[SqlTx], object], int]] = [
            (
                "leaderboard, this week",
                f"/s/{member_token}/board",
                lambda tx: (
                    tx.boards.board_size(community_id, week),
                    tx.boards.board_slice(community_id, week, 0, 100),
                ),
                args.repeat,
            ),
            (
                "leaderboard, all time",
                f"/s/{member_token}/board?week=all",
                lambda tx: (
                    tx.boards.board_size(community_id, None),
                    tx.boards.board_slice(community_id, None, 0, 100),
                ),
                args.repeat,
            ),
            ("member page", f"/s/{member_token}/me", member_queries, args.repeat),
            ("bank", f"/s/{member_token}/bank", lambda tx: tx.rounds.daily_questions(community_id), args.repeat),
            ("demos", f"/s/{member_token}/demos", lambda tx: tx.demos.community_demos(community_id, 20), args.repeat),
            (
                "admin",
                f"/s/{admin_token}/admin",
                lambda tx: (
                    tx.outbox.undelivered(community_id),
                    tx.demos.community_demos(community_id, 20),
                    tx.rounds.next_close(community_id),
                ),
                args.repeat,
            ),
        ]
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)

        def fetch(target: str) -> Callable[[], object]:
            def get() -> object:
                conn.request("GET", target)
                response = conn.getresponse()
                body = response.read()
                assert response.status == 200, (target, response.status, body[:300])
                return body

            return get

        # The admin page's first view: the item analysis from the kept figures (nothing is memoized).
        t0 = time.perf_counter()
        fetch(f"/s/{admin_token}/admin")()
        cold = (time.perf_counter() - t0) * 1000
        with store.read() as tx:
            counts = tx.item_stats.item_counts(community_id)
            questions = engine._pool(tx, community_id)
            flagged = engine._flagged(tx, community_id)
        read = wanted_picks(questions, counts)
        print(
            f"admin page, first view: {cold:,.1f} ms (kept figures: {len(counts)} question-choice rows; the picks "
            f"of {len(read)} questions few get right read, {len(read) * args.members:,} rows at most; "
            f"{len(flagged)} flagged)"
        )
        print(f"{'page':28} {'p50 ms':>8} {'p99 ms':>8} {'bare p50':>9} {'bare p99':>9} {'p99 ratio':>9}  size")
        for name, target, work, repeat in pages:
            page_ms = timed(fetch(target), repeat)
            bare_ms = timed(bare(work), repeat)
            size = len(fetch(target)())  # type: ignore[arg-type]
            p99, bare99 = percentile(page_ms, 0.99), percentile(bare_ms, 0.99)
            print(
                f"{name:28} {percentile(page_ms, 0.5):8.1f} {p99:8.1f} {percentile(bare_ms, 0.5):9.1f} "
                f"{bare99:9.1f} {p99 / bare99:8.1f}x  {size / 1024:.0f} KiB"
            )
        # The admin page again after answers since the last view: each answer's kept figures written as
        # the store writes them (one member, a question few get right); the engine reads the top thirds
        # again where those answers could have changed the verdict.
        rng = random.Random(23)
        with store.read() as tx:
            member_ids = [tx.members.find_member(community_id, f"m{i}") for i in range(args.members)]
        for since in (1, 100):
            after_ms = []
            for _ in range(max(1, args.repeat // 5)):
                with store.write() as tx:
                    for _ in range(since):
                        member_key = rng.choice(member_ids)
                        assert member_key is not None
                        item_stats.count_answer(
                            tx.conn, community_id, member_key, rng.choice(read), rng.randrange(4), False
                        )
                after_ms.append(_one(fetch(f"/s/{admin_token}/admin")))
            print(
                f"{f'admin, {since} answer(s) since':28} {percentile(after_ms, 0.5):8.1f} "
                f"{percentile(after_ms, 0.99):8.1f}"
                f"{'':20}  ({len(after_ms)} views)"
            )
        # The weekly post: each call claims a week not posted before, ranks its board and reads the flags.
        weeks = [f"{2000 + i // 50}-W{1 + i % 50:02d}" for i in range(args.weeks)]
        post_ms = []
        for i, post_week in enumerate([week, *weeks]):
            t0 = time.perf_counter()
            card = engine.boards.weekly_post(COMMUNITY, post_week)
            if i:  # the first (this week's board) warms
                post_ms.append((time.perf_counter() - t0) * 1000)
            assert card is not None
        bare_post = timed(
            bare(lambda tx: (tx.boards.board(community_id, week), engine._flagged(tx, community_id))), args.repeat
        )
        p99, bare99 = percentile(post_ms, 0.99), percentile(bare_post, 0.99)
        print(
            f"{'weekly post (engine)':28} {percentile(post_ms, 0.5):8.1f} {p99:8.1f} {percentile(bare_post, 0.5):9.1f} "
            f"{bare99:9.1f} {p99 / bare99:8.1f}x  ({len(post_ms)} weeks; bare: this week's board and the flags)"
        )
        conn.close()
        loop.call_soon_threadsafe(loop.stop)
        database.dispose()


if __name__ == "__main__":
    main()
