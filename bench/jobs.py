"""Demo jobs benchmark. Prints figures and ratios; asserts nothing on time.

1. The queue's overhead: from `request_demo` to the result posted in the channel, for the
   local back end and for Celery through a real Redis and a `studybot worker`, beside the
   demo process's whole life (interpreter and torch import included) measured by the worker
   in the same run: the overhead is the rest (claiming, progress, the result, the post).
2. The bot's answer latency while a demo runs on the same machine, beside idle: 1,000 users
   answering through the bridge (64 async callers), p50 and p99.

Run: .venv/bin/python bench/jobs.py [--demo "checkpoint layers=8 tokens=512 width=64 repeat=1"]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.background.bridge import Bridge  # noqa: E402
from bot.background.delivery import Deliverer  # noqa: E402
from bot.background.demo_runner import Backend, CeleryBackend, DemoJobRunner, LocalBackend  # noqa: E402
from bot.core.bank import load_bank  # noqa: E402
from bot.core.engine import DemoPolicy, StudyEngine  # noqa: E402
from bot.core.values import ChannelRef, DemoResultCard, Posted, QuestionCard, UserRef  # noqa: E402
from bot.store.database import Database, upgrade  # noqa: E402
from bot.store.repository import SqlStore  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHANNEL = ChannelRef("console", "bench", "demos")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def make_engine(tmp: Path, name: str) -> StudyEngine:
    url = f"sqlite:///{tmp / name}"
    upgrade(url)
    return StudyEngine(SqlStore(Database(url)), load_bank(ROOT / "questions"), demos=DemoPolicy(cooldown_s=0))


async def one_demo(engine: StudyEngine, backend: Backend, demo: str, out: Path) -> tuple[float, float, float]:
    """(seconds from request to the result posted, the demo process's whole life, first figure)."""
    posted: list[Posted] = []
    first_row: list[float] = []

    async def progress(card: object) -> None:
        if getattr(card, "done", 0) >= 1 and not first_row:
            first_row.append(time.perf_counter())

    def deliver() -> None:
        Deliverer(engine, "console").deliver_due(lambda _c, card: posted.append(card) or "ref")

    runner = DemoJobRunner(engine, backend, out, on_progress=progress, on_finished=deliver, poll_s=0.05)
    await runner.start()
    started = time.perf_counter()
    engine.demos.request_demo(UserRef("console", "bench", "ann", "Ann"), CHANNEL, demo)
    runner.wake()
    task = asyncio.create_task(runner.run_forever())
    while not posted:
        await asyncio.sleep(0.01)
    total = time.perf_counter() - started
    task.cancel()
    card = posted[0]
    assert isinstance(card, DemoResultCard), card
    own = float(card.data.get("process_s") or 0.0)
    return total, own, (first_row[0] - started) if first_row else float("nan")


async def answer_burst(engine: StudyEngine, users: int, callers: int) -> list[float]:
    card = engine.rounds.open_daily(ChannelRef("console", "bench", f"answers-{time.monotonic_ns()}"))
    assert isinstance(card, QuestionCard)
    bridge = Bridge(8)
    gate = asyncio.Semaphore(callers)
    latencies: list[float] = []

    async def one(i: int) -> None:
        async with gate:
            t = time.perf_counter()
            await bridge.call(engine.rounds.answer, UserRef("console", "bench", f"u{i}", f"U{i}"), card.round_id, i % 4)
            latencies.append((time.perf_counter() - t) * 1000)

    await asyncio.gather(*(one(i) for i in range(users)))
    bridge.close()
    return latencies


def start_redis_and_worker(tmp: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    log = (tmp / "worker.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--concurrency", "1"],
        cwd=ROOT,
        env={**os.environ, "STUDYBOT_REDIS_URL": url},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while "ready." not in (tmp / "worker.log").read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise SystemExit("the Celery worker did not start")
        time.sleep(0.2)
    return url, [redis, worker]


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        print(f"demo: /demo {args.demo}")
        local = make_engine(tmp, "local.db")
        total, own, first = await one_demo(local, LocalBackend(timeout_s=600), args.demo, tmp / "charts")
        print(
            f"  local:  request -> result posted {total:.2f} s; the demo process ran {own:.2f} s; "
            f"queue overhead {total - own:.2f} s; first strategy's figure after {first:.2f} s"
        )
        if shutil.which("redis-server") and not args.no_celery:
            url, procs = start_redis_and_worker(tmp)
            try:
                engine = make_engine(tmp, "celery.db")
                backend = CeleryBackend(url, "demos", timeout_s=600, poll_s=0.05)
                total, own, first = await one_demo(engine, backend, args.demo, tmp / "charts")
                print(
                    f"  celery: request -> result posted {total:.2f} s; the demo process ran {own:.2f} s; "
                    f"queue overhead {total - own:.2f} s; first strategy's figure after {first:.2f} s"
                )
            finally:
                os.killpg(procs[1].pid, signal.SIGTERM)
                procs[0].terminate()
        else:
            print("  celery: skipped (no redis-server, or --no-celery)")

        engine = make_engine(tmp, "answers.db")
        idle = await answer_burst(engine, args.users, 64)
        runner_engine = engine
        backend = LocalBackend(timeout_s=600)
        posted: list[Posted] = []
        runner = DemoJobRunner(
            runner_engine,
            backend,
            tmp / "charts",
            on_finished=lambda: Deliverer(runner_engine, "console").deliver_due(
                lambda _c, card: posted.append(card) or "ref"
            ),
            poll_s=0.05,
        )
        await runner.start()
        runner_engine.demos.request_demo(UserRef("console", "bench", "bob", "Bob"), CHANNEL, args.demo)
        task = asyncio.create_task(runner.run_forever())
        await asyncio.sleep(3.0)  # the demo process is past torch's import and measuring
        busy = await answer_burst(engine, args.users, 64)
        still_running = not posted
        while not posted:
            await asyncio.sleep(0.05)
        task.cancel()
        print(f"answers through the bridge ({args.users:,} users, 64 callers):")
        print(f"  idle:          p50 {statistics.median(idle):.1f} ms  p99 {percentile(idle, 0.99):.1f} ms")
        print(
            f"  demo running:  p50 {statistics.median(busy):.1f} ms  p99 {percentile(busy, 0.99):.1f} ms"
            f"{'' if still_running else '  (the demo ended before the burst did)'}"
        )
        print(f"  p99 ratio running/idle: {percentile(busy, 0.99) / percentile(idle, 0.99):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo", default="checkpoint")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--no-celery", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
