"""Demo jobs with real components: the queue in a real database, real demo processes, a real
Redis server and a real Celery worker process. Asserts what a member would see: the queue's
answers, the progress as each strategy finishes, the result or one sentence in the channel."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bot.background.delivery import Deliverer
from bot.background.demo_runner import CeleryBackend, DemoJobRunner, LocalBackend
from bot.core.bank import Bank
from bot.core.engine import DemoPolicy, StudyEngine
from bot.core.errors import InvalidInput
from bot.core.values import (
    ChannelRef,
    DemoFailedCard,
    DemoProgressCard,
    DemoQueued,
    DemoResultCard,
    Posted,
    UserRef,
)
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.worker.demo_process import DemoFailure, run_demo_process
from tests.conftest import IN_CI, TEST_BANK, FakeClock
from tests.services import RedisServer, kill_group, redis_or_skip, start_worker

SMALL = "checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block"
CH = ChannelRef("discord", "guild", "demos")


def user(name: str, community: str = "guild") -> UserRef:
    return UserRef("discord", community, name.lower(), name)


def posted(engine: StudyEngine, platform: str = "discord") -> list[tuple[ChannelRef, Posted]]:
    out: list[tuple[ChannelRef, Posted]] = []

    def send(channel: ChannelRef, card: Posted) -> str:
        out.append((channel, card))
        return f"m{len(out)}"

    Deliverer(engine, platform).deliver_due(send)
    return out


async def run_one(runner: DemoJobRunner) -> None:
    """Start the runner, let it claim and finish every claimable job, then stop."""
    await runner.start()
    running: set[asyncio.Task[None]] = set()
    while await runner._claim_and_start(running):  # noqa: SLF001 - drive one pass deterministically
        pass
    if running:
        await asyncio.gather(*running)


# ---------------------------------------------------------------- the queue's rules


def test_queue_positions_cooldown_and_limit(engine: StudyEngine, clock: FakeClock) -> None:
    engine.demos.policy = DemoPolicy(cooldown_s=600, max_waiting=2)
    first = engine.demos.request_demo(user("Ann"), CH, SMALL)
    assert isinstance(first, DemoQueued) and first.position == 1 and first.module == "demos.checkpoint"
    second = engine.demos.request_demo(user("Bob"), CH, SMALL)
    assert second.position == 2
    with pytest.raises(InvalidInput, match=r"2 demos are already waiting here"):
        engine.demos.request_demo(user("Cy"), CH, SMALL)
    clock.advance(minutes=3)
    with pytest.raises(
        InvalidInput,
        match=r"You asked for a demo 3 min ago; one per member every 10 min, so the next one is possible in 7 min",
    ):
        engine.demos.request_demo(user("Ann"), CH, SMALL)
    # another community has its own queue
    assert engine.demos.request_demo(user("Cy", "other"), ChannelRef("discord", "other", "x"), SMALL).position == 1
    with pytest.raises(InvalidInput, match="Unknown strategy"):
        engine.demos.request_demo(user("Dee"), CH, "checkpoint strategies=warp")


def test_one_demo_runs_at_a_time_per_community(engine: StudyEngine) -> None:
    engine.demos.policy = DemoPolicy(cooldown_s=0)
    a = engine.demos.request_demo(user("Ann"), CH, SMALL)
    b = engine.demos.request_demo(user("Bob"), CH, SMALL)
    c = engine.demos.request_demo(user("Cy", "other"), ChannelRef("discord", "other", "x"), SMALL)
    first = engine.demos.claim_demo("w1", "local")
    assert first is not None and first.id == a.job_id and first.state == "running"
    nxt = engine.demos.claim_demo("w2", "local")
    assert nxt is not None and nxt.id == c.job_id  # guild is busy: the other community's job runs
    assert engine.demos.claim_demo("w3", "local") is None  # Bob waits for Ann's to end
    engine.demos.demo_finished(a.job_id, {"results": []}, None)
    third = engine.demos.claim_demo("w3", "local")
    assert third is not None and third.id == b.job_id


def test_a_restart_fails_running_demos_and_says_so_in_their_channel(engine: StudyEngine, tmp_path: Path) -> None:
    queued = engine.demos.request_demo(user("Ann"), CH, SMALL)
    engine.demos.demo_message(queued.job_id, "msg-1")
    assert engine.demos.claim_demo("old-process", "local") is not None  # then the process died
    runner = DemoJobRunner(engine, LocalBackend(), tmp_path)
    asyncio.run(runner.start())
    [(channel, card)] = posted(engine)
    assert channel == CH and isinstance(card, DemoFailedCard) and card.message_ref == "msg-1"
    assert "the bot restarted" in card.text
    [job] = engine.demos.demo_jobs()
    assert job.state == "failed" and "restarted" in (job.error or "")


# ------------------------------------------------------------- the local back end


@pytest.fixture
def sqlite_engine(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> Iterator[StudyEngine]:
    """The back-end tests run real demos: one database kind is enough (the queue's rules above
    run on both)."""
    db = Database(sqlite_url)
    yield StudyEngine(SqlStore(db), test_bank, clock=clock)
    db.dispose()


def test_a_local_demo_reports_each_strategy_then_posts_its_result(sqlite_engine: StudyEngine, tmp_path: Path) -> None:
    queued = sqlite_engine.demos.request_demo(user("Ann"), CH, SMALL)
    shown: list[DemoProgressCard] = []

    async def show(card: DemoProgressCard) -> None:
        shown.append(card)

    runner = DemoJobRunner(sqlite_engine, LocalBackend(timeout_s=300), tmp_path / "charts", on_progress=show)
    asyncio.run(run_one(runner))
    assert [(c.done, c.total) for c in shown] == [(0, 2), (1, 2), (2, 2)]
    assert [row[0] for row in shown[1].rows] == ["none"]  # the first figure, before block ran
    [(channel, card)] = posted(sqlite_engine)
    assert channel == CH and isinstance(card, DemoResultCard) and card.job_id == queued.job_id
    assert [row[0] for row in card.rows] == ["none", "block"] and card.rows[1][-1] == "identical"
    assert card.where and "torch" in card.where and "CPU threads" in card.where
    assert card.chart and Path(card.chart).read_bytes()[:4] == b"\x89PNG"
    assert [Path(c.path).name for c in card.pictures()] == [
        f"demo-{queued.job_id}.png",
        f"demo-{queued.job_id}-memory.png",
    ]
    assert sqlite_engine.demos.demo_jobs()[0].state == "done"


def test_a_demo_that_overruns_its_limit_is_killed_and_reported(sqlite_engine: StudyEngine, tmp_path: Path) -> None:
    # A demo that never finishes, whatever the machine's speed: it reports its start, then hangs.
    pid_file = tmp_path / "demo.pid"
    hanger = tmp_path / "python"
    hanger.write_text(
        f'#!/usr/bin/env bash\necho $$ > {pid_file}\necho \'{{"event": "start", "total": 2}}\'\nexec sleep 600\n'
    )
    hanger.chmod(0o755)
    sqlite_engine.demos.request_demo(user("Ann"), CH, SMALL)
    asyncio.run(run_one(DemoJobRunner(sqlite_engine, LocalBackend(timeout_s=1, python=str(hanger)), tmp_path)))
    [(_, card)] = posted(sqlite_engine)
    assert isinstance(card, DemoFailedCard) and card.text == "The demo did not finish within 1 s and was stopped."
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(int(pid_file.read_text()), 0)
    [job] = sqlite_engine.demos.demo_jobs()
    assert job.state == "failed" and job.error == card.text


def test_a_demo_process_that_crashes_gives_one_sentence(sqlite_engine: StudyEngine, tmp_path: Path) -> None:
    crasher = tmp_path / "python"
    crasher.write_text(
        "#!/usr/bin/env bash\n"
        'echo \'{"event": "start", "total": 2}\'\n'
        "echo 'USDT: profiler_start probe noise' >&2\n"
        "echo 'RuntimeError: the GPU fell off the bus' >&2\n"
        "kill -9 $$\n"
    )
    crasher.chmod(0o755)
    sqlite_engine.demos.request_demo(user("Ann"), CH, SMALL)
    asyncio.run(run_one(DemoJobRunner(sqlite_engine, LocalBackend(python=str(crasher)), tmp_path)))
    [(_, card)] = posted(sqlite_engine)
    assert isinstance(card, DemoFailedCard)
    assert card.text == "The demo refused or failed: RuntimeError: the GPU fell off the bus"  # no USDT noise
    # the bot goes on: the next member's demo runs
    sqlite_engine.demos.request_demo(user("Bob"), CH, SMALL)
    asyncio.run(run_one(DemoJobRunner(sqlite_engine, LocalBackend(timeout_s=300), tmp_path)))
    [(_, result)] = posted(sqlite_engine)
    assert isinstance(result, DemoResultCard)


def test_the_demo_refuses_what_does_not_fit_before_allocating() -> None:
    # the demo's own estimate says no, with the numbers, before allocating anything
    with pytest.raises(DemoFailure, match=r"The demo refused or failed: Refused: the estimated peak of [\d,]+ MiB"):
        run_demo_process("demos.checkpoint", ("--layers", "512", "--tokens", "65536", "--width", "4096"), 120)


# ------------------------------------------------------------ Redis and Celery


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    yield from redis_or_skip(IN_CI, "run the Celery tests")


def test_a_celery_worker_runs_the_demo_and_reports_progress(
    sqlite_engine: StudyEngine, redis_server: RedisServer, tmp_path: Path
) -> None:
    worker = start_worker(redis_server.url, tmp_path)
    try:
        sqlite_engine.demos.request_demo(user("Ann"), CH, SMALL)
        shown: list[DemoProgressCard] = []

        async def show(card: DemoProgressCard) -> None:
            shown.append(card)

        backend = CeleryBackend(redis_server.url, "demos", timeout_s=120)
        asyncio.run(run_one(DemoJobRunner(sqlite_engine, backend, tmp_path / "charts", on_progress=show)))
    finally:
        kill_group(worker)
    assert shown and shown[-1].done == 2 and [r[0] for r in shown[-1].rows] == ["none", "block"]
    [(channel, card)] = posted(sqlite_engine)
    assert channel == CH and isinstance(card, DemoResultCard) and [r[0] for r in card.rows] == ["none", "block"]
    assert card.chart and Path(card.chart).read_bytes()[:4] == b"\x89PNG"  # the chart came back through Redis
    # every chart came back, the memory timeline first (its path is the job's chart)
    assert [c.kind for c in card.pictures()] == ["timeline", "memory"] and card.pictures()[0].path == card.chart
    assert all(Path(c.path).read_bytes()[:4] == b"\x89PNG" for c in card.pictures())
    assert sqlite_engine.demos.demo_jobs()[0].backend == "celery"


def test_a_worker_killed_mid_demo_gives_a_clear_failure(
    sqlite_engine: StudyEngine, redis_server: RedisServer, tmp_path: Path
) -> None:
    # about 8 s of work by the demo's estimate: inside the 10.5 s budget a 14 s limit gives it
    worker = start_worker(redis_server.url, tmp_path, timeout_s=14)
    sqlite_engine.demos.request_demo(
        user("Ann"), CH, "checkpoint layers=16 tokens=2048 width=128 repeat=1 strategies=none,block"
    )
    backend = CeleryBackend(redis_server.url, "demos", timeout_s=14, grace_s=2)
    killed = False

    async def kill_on_first_row(_card: DemoProgressCard) -> None:
        nonlocal killed
        if not killed:
            killed = True
            kill_group(worker)

    try:
        asyncio.run(run_one(DemoJobRunner(sqlite_engine, backend, tmp_path, on_progress=kill_on_first_row)))
    finally:
        kill_group(worker)
    assert killed
    [(_, card)] = posted(sqlite_engine)
    assert isinstance(card, DemoFailedCard)
    assert "the worker running it stopped answering" in card.text
    assert sqlite_engine.demos.demo_jobs()[0].state == "failed"


def test_redis_down_keeps_quizzes_working_and_demos_return_with_it(
    sqlite_engine: StudyEngine, redis_server: RedisServer, tmp_path: Path
) -> None:
    backend = CeleryBackend(redis_server.url, "demos", timeout_s=120)
    redis_server.stop()
    runner = DemoJobRunner(sqlite_engine, backend, tmp_path)
    sqlite_engine.demos.request_demo(user("Ann"), CH, SMALL)
    asyncio.run(run_one(runner))
    assert runner.unavailable_reason == "Demos are unavailable right now: the demo queue (Redis) cannot be reached."
    [(_, card)] = posted(sqlite_engine)
    assert isinstance(card, DemoFailedCard) and card.text == runner.unavailable_reason
    # everything else works without Redis
    quiz = sqlite_engine.practice.quiz(user("Ann"), CH)
    assert quiz.kind == "practice"
    # Redis comes back: the same runner, no restart, runs the next demo
    redis_server.start()
    worker = start_worker(redis_server.url, tmp_path)
    try:
        sqlite_engine.demos.policy = DemoPolicy(cooldown_s=0)
        sqlite_engine.demos.request_demo(user("Ann"), CH, SMALL)
        asyncio.run(run_one(runner))
    finally:
        kill_group(worker)
    assert runner.unavailable_reason is None
    [(_, result)] = posted(sqlite_engine)
    assert isinstance(result, DemoResultCard)


def test_the_console_demo_runs_on_a_celery_worker_end_to_end(redis_server: RedisServer, tmp_path: Path) -> None:
    import json

    worker = start_worker(redis_server.url, tmp_path)
    try:
        env = {
            **os.environ,
            "STUDYBOT_WORKER": "celery",
            "STUDYBOT_REDIS_URL": redis_server.url,
            "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK),
            "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'console.db'}",
            "STUDYBOT_DEMO_OUT_DIR": str(tmp_path / "charts"),
        }
        for token in ("DISCORD_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
            env.pop(token, None)
        done = subprocess.run(
            [sys.executable, "-m", "bot", "console", "--jsonl", "--no-schedule"],
            input=f"/demo {SMALL}\n",
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
    finally:
        kill_group(worker)
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    assert messages[0]["kind"] == "demo_queued" and messages[-1]["kind"] == "demo"
    assert [r["strategy"] for r in messages[-1]["data"]["result"]["results"]] == ["none", "block"]


def test_workers_claiming_at_once_take_each_job_exactly_once(db_url: str, test_bank: Bank, clock: FakeClock) -> None:
    """Several bot processes on one database (shards), each with its own connections, claiming
    at the same moment: every job is claimed by exactly one of them."""
    jobs, workers = 12, 4
    setup_db = Database(db_url)
    setup = StudyEngine(SqlStore(setup_db), test_bank, clock=clock)
    queued = [
        setup.demos.request_demo(user("Ann", f"c{n}"), ChannelRef("discord", f"c{n}", "demos"), SMALL).job_id
        for n in range(jobs)
    ]
    databases = [Database(db_url) for _ in range(workers)]
    engines = [StudyEngine(SqlStore(db), test_bank, clock=clock) for db in databases]
    start = threading.Barrier(workers)
    claimed: list[list[int]] = [[] for _ in range(workers)]

    def claim_all(n: int) -> None:
        start.wait(timeout=30)
        while (job := engines[n].demos.claim_demo(f"w{n}", "local")) is not None:
            claimed[n].append(job.id)

    try:
        with ThreadPoolExecutor(workers) as pool:
            for future in [pool.submit(claim_all, n) for n in range(workers)]:
                future.result(timeout=120)
        assert sorted(job_id for mine in claimed for job_id in mine) == sorted(queued)
        assert {job.id: job.state for job in setup.demos.demo_jobs()} == {job_id: "running" for job_id in queued}
    finally:
        for db in [setup_db, *databases]:
            db.dispose()


def test_workers_claiming_at_once_run_one_demo_per_community(db_url: str, test_bank: Bank, clock: FakeClock) -> None:
    """Shards claiming at the same moment still run one demo at a time in a community."""
    workers = 4
    setup_db = Database(db_url)
    setup = StudyEngine(SqlStore(setup_db), test_bank, clock=clock, demos=DemoPolicy(cooldown_s=0, max_waiting=50))
    for n in range(workers * 2):
        setup.demos.request_demo(user(f"Member{n}"), CH, SMALL)
    databases = [Database(db_url) for _ in range(workers)]
    engines = [StudyEngine(SqlStore(db), test_bank, clock=clock) for db in databases]
    start = threading.Barrier(workers)

    def claim(n: int) -> int | None:
        start.wait(timeout=30)
        job = engines[n].demos.claim_demo(f"w{n}", "local")
        return None if job is None else job.id

    try:
        with ThreadPoolExecutor(workers) as pool:
            claimed = [job_id for job_id in pool.map(claim, range(workers), timeout=120) if job_id is not None]
        running = [job.id for job in setup.demos.demo_jobs() if job.state == "running"]
        assert len(claimed) == 1 and running == claimed
    finally:
        for db in [setup_db, *databases]:
            db.dispose()
