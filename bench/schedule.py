"""The scheduler at many communities (issue 23). Prints figures and ratios; asserts nothing.

N communities (Discord guilds, each with a channel, daily time the same UTC minute) are
written straight into the tables, then the scheduler is started as `studybot run` starts it
(a Runtime with a deliverer whose sender only counts) and measured:

1. start-up: the catch-up and the plan (Runtime.start), beside a bare SELECT of every
   community row on the same database;
2. a refresh with nothing changed and one after 10 settings changes, beside one SQL
   round-trip (SELECT 1);
3. the daily rounds of all N due at one moment: how late the last is claimed (its round's
   opened_at; the scheduler opens them in batches, each batch one transaction), when a poll
   every 0.5 s first saw all committed, and when the last post was sent, beside N single-row
   INSERT + COMMITs on the same database.

Run: .venv/bin/python bench/schedule.py --communities 10000 [--postgres URL]
(URL: an empty test database; the bench writes N communities into it and leaves them.)
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from bot.core.bank import load_bank  # noqa: E402
from bot.core.engine import StudyEngine  # noqa: E402
from bot.core.values import ChannelRef, CommunityRef, Posted  # noqa: E402
from bot.store.database import Database, upgrade  # noqa: E402
from bot.store.repository import SqlStore  # noqa: E402
from bot.wiring import build_runtime  # noqa: E402

log = logging.getLogger("bench.schedule")
ROOT = Path(__file__).resolve().parent.parent
GUILD_BASE = 10**17  # Discord-like snowflakes


def guild(i: int) -> str:
    return str(GUILD_BASE + (i << 22))


def seed(db: Database, n: int, daily_time: str) -> None:
    """N communities in one transaction, as if each had run `/config channel general`."""
    created = datetime.now(UTC).replace(tzinfo=None)
    rows = [
        {
            "platform": "discord",
            "external_id": guild(i),
            "name": f"guild {i}",
            "timezone": "UTC",
            "daily_time": daily_time,
            "window_hours": 12,
            "channel_id": "general",
            "topics": "",
            "paused": False,
            "created_at": created,
            "web_public": False,
            "version": i + 1,
        }
        for i in range(n)
    ]
    with db.write() as conn:
        if conn.execute(text("SELECT COUNT(*) FROM communities")).scalar_one():
            raise SystemExit("the database already holds communities: give the bench an empty one")
        conn.execute(
            text(
                "INSERT INTO communities (platform, external_id, name, timezone, daily_time, window_hours,"
                " channel_id, topics, paused, created_at, web_public, version) VALUES (:platform, :external_id,"
                " :name, :timezone, :daily_time, :window_hours, :channel_id, :topics, :paused, :created_at,"
                " :web_public, :version)"
            ),
            rows,
        )


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def baseline_inserts(db: Database, n: int) -> float:
    """N single-row INSERT + COMMIT (each its own transaction) on the same database."""
    with db.write() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS bench_rows (id INTEGER PRIMARY KEY, v INTEGER)"))
    start = time.perf_counter()
    for i in range(n):
        with db.write() as conn:
            conn.execute(text("INSERT INTO bench_rows (id, v) VALUES (:i, :i)"), {"i": i})
    elapsed = time.perf_counter() - start
    with db.write() as conn:
        conn.execute(text("DROP TABLE bench_rows"))
    return elapsed


async def run(url: str, n: int, lead_s: float) -> None:
    upgrade(url)
    db = Database(url)
    engine = StudyEngine(SqlStore(db), load_bank(ROOT / "questions"))
    now = datetime.now(UTC)
    due = (now + timedelta(seconds=lead_s + 60)).replace(second=0, microsecond=0)
    seed(db, n, f"{due:%H:%M}")
    print(f"{n} communities on {db.reader.dialect.name}; their daily rounds due at {due:%H:%M:%S} UTC")

    def bare_select() -> None:
        with db.read() as conn:
            conn.execute(text("SELECT * FROM communities")).all()

    def round_trip() -> None:
        with db.read() as conn:
            conn.execute(text("SELECT 1")).scalar()

    select_s = statistics.median(timed(bare_select) for _ in range(5))
    trip_s = statistics.median(timed(round_trip) for _ in range(51))

    sent: list[datetime] = []

    async def count(_channel: ChannelRef, _card: Posted) -> str:
        sent.append(datetime.now(UTC))
        return f"m{len(sent)}"

    runtime = build_runtime(engine, ("discord",), bridge_threads=8)
    runtime.add_sender("discord", count)
    start = time.perf_counter()
    await runtime.start()
    startup_s = time.perf_counter() - start
    scheduler = runtime.scheduler
    print(f"start-up (catch-up and plan): {startup_s:.3f} s; bare SELECT of all rows {select_s * 1000:.1f} ms;")
    print(f"  ratio {startup_s / select_s:.1f}x; target under 3 s")

    idle = [await runtime.bridge.run(lambda: timed(scheduler.refresh)) for _ in range(5)]
    for i in range(10):
        await runtime.bridge.run(engine.admin.config, CommunityRef("discord", guild(i * 7)), "window_hours", "11")
    changed_s = await runtime.bridge.run(lambda: timed(scheduler.refresh))
    idle_s = statistics.median(idle)
    print(
        f"refresh, nothing changed: {idle_s * 1000:.1f} ms (median of 5); after 10 settings changes:"
        f" {changed_s * 1000:.1f} ms; one SQL round-trip {trip_s * 1000:.3f} ms"
    )
    print(f"  ratios {idle_s / trip_s:.0f}x and {changed_s / trip_s:.0f}x; target under 0.3 s")

    wait = (due - datetime.now(UTC)).total_seconds()
    print(f"waiting {wait:.0f} s for the due moment ...")
    await asyncio.sleep(max(0.0, wait))
    deadline = time.monotonic() + 900
    last_claim: datetime | None = None
    seen_all: datetime | None = None  # when a poll (every 0.5 s) first found every round committed
    while time.monotonic() < deadline:
        with db.read() as conn:
            opened, latest = conn.execute(
                text("SELECT COUNT(*), MAX(opened_at) FROM rounds WHERE kind = 'daily'")
            ).one()
        if opened >= n and seen_all is None:
            seen_all = datetime.now(UTC)
        if opened >= n and len(sent) >= n:
            last_claim = latest if isinstance(latest, datetime) else datetime.fromisoformat(str(latest))
            break
        await asyncio.sleep(0.5)
    await runtime.stop()
    if last_claim is None:
        print(f"not all claimed or sent within 900 s: {opened} rounds, {len(sent)} posts")
        return
    claim_late = (last_claim.replace(tzinfo=UTC) - due).total_seconds()
    seen_late = ((seen_all or due) - due).total_seconds()
    post_late = (max(sent) - due).total_seconds()
    base_s = baseline_inserts(db, n)
    print(
        f"{n} rounds due at one moment: the last claimed (its opened_at) {claim_late:.1f} s after it, all"
        f" seen committed by {seen_late:.1f} s, the last post sent {post_late:.1f} s after it;"
        f" {n} single-row INSERT+COMMITs {base_s:.1f} s"
    )
    print(f"  ratio {claim_late / base_s:.1f}x of the inserts; target within 60 s")
    db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--communities", type=int, default=10_000)
    parser.add_argument("--postgres", metavar="URL", help="an empty PostgreSQL test database instead of SQLite")
    parser.add_argument("--lead-s", type=float, default=40.0, help="at least this long between start-up and due")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        url = args.postgres or f"sqlite:///{folder}/schedule.db"
        asyncio.run(run(url, args.communities, args.lead_s))


if __name__ == "__main__":
    main()
