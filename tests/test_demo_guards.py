"""Issue 27, the demo worker's guards, with real components: a real database, the real runner
and local back end, real demo processes (real torch, or a stand-in `python` script where the
child's behaviour is the point), a real Redis client and server.

- the cooldown charges every attempt a member caused (refused, timed out, out of memory,
  failed) and exempts only the bot's own failures (a restart, Redis down, a lost worker);
- the bot's time limit is the demo's `--time-budget`;
- the child is held to its memory share (RLIMIT_AS) and a run past it fails with a sentence;
- parallel demos never share the same memory, and communities take turns;
- a demo's progress only moves forward."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest

from bot.background.demo_runner import CeleryBackend, DemoJobRunner, LocalBackend
from bot.core.engine import DemoPolicy, StudyEngine
from bot.core.errors import InvalidInput
from bot.core.values import ChannelRef, DemoFailedCard, DemoProgressCard, DemoResultCard, UserRef
from bot.worker.demo_process import DemoFailure, address_space_limit, run_demo_process, time_budget
from tests.conftest import IN_CI
from tests.services import RedisServer, redis_or_skip
from tests.test_jobs import SMALL, posted, run_one

MIB = 1024**2
CH = ChannelRef("discord", "guild", "demos")
ANN = UserRef("discord", "guild", "ann", "Ann")
COOLDOWN = r"You asked for a demo \d+ s ago; one per member every 10 min"
# By the demo's own estimate about 26 s of work on a CPU: inside its default 120 s budget,
# outside a 6 s one.
MEDIUM = "checkpoint layers=32 tokens=1024 width=128"


def fake_python(tmp_path: Path, body: str, name: str = "python") -> str:
    """A stand-in for the worker's python: a shell script that gets the demo's command line."""
    path = tmp_path / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)
    return str(path)


def run(engine: StudyEngine, backend: LocalBackend | CeleryBackend, tmp_path: Path) -> DemoFailedCard:
    asyncio.run(run_one(DemoJobRunner(engine, backend, tmp_path / "charts")))
    [(_, card)] = posted(engine)
    assert isinstance(card, DemoFailedCard), card
    return card


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ the cooldown


@pytest.fixture
def cooled(engine: StudyEngine) -> StudyEngine:
    engine.demos.policy = DemoPolicy(cooldown_s=600, max_waiting=5)
    return engine


def test_cooldown_counts_a_demo_the_estimate_refused(cooled: StudyEngine, tmp_path: Path) -> None:
    cooled.demos.request_demo(ANN, CH, "checkpoint layers=512 tokens=65536 width=4096")
    card = run(cooled, LocalBackend(timeout_s=120), tmp_path)
    assert card.text.startswith("The demo refused or failed: Refused: the estimated peak")
    assert cooled.demos.demo_jobs()[0].failure == "refused"
    with pytest.raises(InvalidInput, match=COOLDOWN):
        cooled.demos.request_demo(ANN, CH, SMALL)


def test_cooldown_counts_a_demo_that_timed_out(cooled: StudyEngine, tmp_path: Path) -> None:
    hanger = fake_python(tmp_path, 'echo \'{"event": "start", "total": 2}\'\nexec sleep 600\n')
    cooled.demos.request_demo(ANN, CH, SMALL)
    card = run(cooled, LocalBackend(timeout_s=1, python=hanger), tmp_path)
    assert card.text == "The demo did not finish within 1 s and was stopped."
    assert cooled.demos.demo_jobs()[0].failure == "timeout"
    with pytest.raises(InvalidInput, match=COOLDOWN):
        cooled.demos.request_demo(ANN, CH, SMALL)


def test_cooldown_counts_a_demo_that_failed_on_its_input(cooled: StudyEngine, tmp_path: Path) -> None:
    crasher = fake_python(tmp_path, "echo 'RuntimeError: shapes cannot be multiplied' >&2\nexit 1\n")
    cooled.demos.request_demo(ANN, CH, SMALL)
    card = run(cooled, LocalBackend(python=crasher), tmp_path)
    assert card.text == "The demo refused or failed: RuntimeError: shapes cannot be multiplied"
    assert cooled.demos.demo_jobs()[0].failure == "failed"
    with pytest.raises(InvalidInput, match=COOLDOWN):
        cooled.demos.request_demo(ANN, CH, SMALL)


def test_cooldown_counts_a_demo_past_its_memory(cooled: StudyEngine, tmp_path: Path) -> None:
    hog = fake_python(tmp_path, f"exec {sys.executable} -c 'bytearray(8 << 30)'\n")
    cooled.demos.request_demo(ANN, CH, SMALL)
    card = run(cooled, LocalBackend(python=hog, available=lambda: 64 * MIB), tmp_path)
    assert card.text.startswith("The demo needed more than the 64 MiB of memory a demo may use")
    assert cooled.demos.demo_jobs()[0].failure == "memory"
    with pytest.raises(InvalidInput, match=COOLDOWN):
        cooled.demos.request_demo(ANN, CH, SMALL)


def test_cooldown_spares_a_demo_lost_to_a_restart(cooled: StudyEngine, tmp_path: Path) -> None:
    cooled.demos.request_demo(ANN, CH, SMALL)
    assert cooled.demos.claim_demo("old-process", "local") is not None  # then that process died
    asyncio.run(DemoJobRunner(cooled, LocalBackend(), tmp_path).start())
    assert cooled.demos.demo_jobs()[0].failure == "restart"
    assert cooled.demos.request_demo(ANN, CH, SMALL).position == 1


def test_cooldown_spares_a_demo_lost_to_redis_being_down(cooled: StudyEngine, tmp_path: Path) -> None:
    cooled.demos.request_demo(ANN, CH, SMALL)
    card = run(cooled, CeleryBackend(f"redis://127.0.0.1:{free_port()}/0"), tmp_path)
    assert card.text == "Demos are unavailable right now: the demo queue (Redis) cannot be reached."
    assert cooled.demos.demo_jobs()[0].failure == "unavailable"
    assert cooled.demos.request_demo(ANN, CH, SMALL).position == 1


def test_cooldown_spares_a_demo_whose_worker_could_not_start(cooled: StudyEngine, tmp_path: Path) -> None:
    cooled.demos.request_demo(ANN, CH, SMALL)
    card = run(cooled, LocalBackend(python=str(tmp_path / "no-such-python")), tmp_path)
    assert card.text.startswith("The demo worker could not start")
    assert cooled.demos.request_demo(ANN, CH, SMALL).position == 1


@pytest.fixture
def redis_server() -> object:
    yield from redis_or_skip(IN_CI, "run the lost-worker test")


def test_cooldown_spares_a_demo_whose_worker_was_lost(
    cooled: StudyEngine, redis_server: RedisServer, tmp_path: Path
) -> None:
    # Redis answers but no worker ever takes the task: the bot gives up on it as a lost worker.
    cooled.demos.request_demo(ANN, CH, SMALL)
    card = run(cooled, CeleryBackend(redis_server.url, timeout_s=1, poll_s=0.1, grace_s=0.5), tmp_path)
    assert "the worker running it stopped answering" in card.text
    assert cooled.demos.demo_jobs()[0].failure == "worker"
    assert cooled.demos.request_demo(ANN, CH, SMALL).position == 1


# ------------------------------------------------------------ time and memory


def test_the_timeout_is_passed_to_the_demo_as_its_time_budget(tmp_path: Path) -> None:
    argv = tmp_path / "argv"
    recorder = fake_python(tmp_path, f'printf "%s\\n" "$@" > {argv}\necho "Refused." >&2\nexit 2\n')
    with pytest.raises(DemoFailure, match="Refused"):
        run_demo_process("demos.checkpoint", ("--layers", "2"), 120, python=recorder)
    words = argv.read_text().split()
    assert words[words.index("--time-budget") + 1] == "105"  # 120 s less its start-up
    assert time_budget(8) == 6


def test_the_demo_refuses_a_run_longer_than_the_bots_timeout(cooled: StudyEngine, tmp_path: Path) -> None:
    cooled.demos.request_demo(ANN, CH, MEDIUM)
    card = run(cooled, LocalBackend(timeout_s=8), tmp_path)  # the demo's own default is 120 s
    assert card.text.startswith("The demo refused or failed: Refused: about")
    assert card.text.endswith("over the 6 s budget.")


def test_a_child_past_its_memory_limit_fails_with_one_sentence(engine: StudyEngine, tmp_path: Path) -> None:
    # a real torch child that asks for 4 GiB with a 64 MiB share
    hog = fake_python(
        tmp_path,
        f'ulimit -v > "$(dirname "$0")/limit"\nexec {sys.executable} -c \'import torch; torch.ones(2**30).add_(1)\'\n',
    )
    engine.demos.request_demo(ANN, CH, SMALL)
    card = run(engine, LocalBackend(python=hog, available=lambda: 64 * MIB), tmp_path)
    assert card.text == (
        "The demo needed more than the 64 MiB of memory a demo may use on this worker and was stopped; "
        "ask for a smaller run (fewer layers or tokens, a smaller width or batch)."
    )
    assert int((tmp_path / "limit").read_text()) * 1024 == address_space_limit(64 * MIB)
    # the bot goes on: the next demo runs
    engine.demos.policy = DemoPolicy(cooldown_s=0)
    engine.demos.request_demo(ANN, CH, SMALL)
    asyncio.run(run_one(DemoJobRunner(engine, LocalBackend(timeout_s=300), tmp_path / "charts")))
    [(_, result)] = posted(engine)
    assert isinstance(result, DemoResultCard)


def test_the_demos_estimate_holds_a_run_to_its_memory_share() -> None:
    with pytest.raises(DemoFailure, match=r"exceeds 80% of the 1 MiB free on the cpu") as refused:
        run_demo_process("demos.checkpoint", (), 120, memory_bytes=MIB)  # the default run, some MiB
    assert refused.value.kind == "refused"


# ------------------------------------------------------------- parallel demos


def test_parallel_demos_are_never_promised_the_same_memory(engine: StudyEngine, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    recorder = fake_python(
        tmp_path,
        f'echo "$STUDYBOT_DEMO_MEMORY_BYTES $(ulimit -v)" > {seen}/$$\n'
        # it runs until the test has made every claim it can: then the others are still running
        f"for _ in $(seq 600); do [ -e {tmp_path}/release ] && break; sleep 0.05; done\n"
        'echo \'{"event": "result", "result": {"results": []}}\'\n',
    )
    engine.demos.policy = DemoPolicy(cooldown_s=0)
    for community in ("one", "two", "three"):
        ann, channel = UserRef("discord", community, "ann", "Ann"), ChannelRef("discord", community, "d")
        engine.demos.request_demo(ann, channel, SMALL)
    backend = LocalBackend(python=recorder, available=lambda: 1000 * MIB, min_share=150 * MIB)
    runner = DemoJobRunner(engine, backend, tmp_path / "charts", parallel=3)

    async def claim_all() -> int:
        await runner.start()
        running: set[asyncio.Task[None]] = set()
        started = 0
        while await runner._claim_and_start(running):  # noqa: SLF001 - one deterministic pass
            started += 1
        (tmp_path / "release").touch()
        await asyncio.gather(*running)
        return started

    # 1000 MiB free: the first may use 800 of it, the second is given the 200 left (uses 160),
    # and a third would get 40 MiB: it waits for one of them instead of being refused
    assert asyncio.run(claim_all()) == 2
    shares = sorted(int(line.split()[0]) for line in (p.read_text() for p in seen.iterdir()))
    assert shares == [200 * MIB, 1000 * MIB]
    limits = sorted(int(p.read_text().split()[1]) * 1024 for p in seen.iterdir())
    assert limits == [address_space_limit(200 * MIB), address_space_limit(1000 * MIB)]
    assert [job.state for job in engine.demos.demo_jobs()] == ["queued", "done", "done"]


def test_one_communitys_queue_does_not_hold_up_another(engine: StudyEngine) -> None:
    engine.demos.policy = DemoPolicy(cooldown_s=0, max_waiting=5)
    busy = [engine.demos.request_demo(UserRef("discord", "busy", f"m{n}", f"M{n}"), CH, SMALL).job_id for n in range(5)]
    other = ChannelRef("discord", "quiet", "d")
    quiet = engine.demos.request_demo(UserRef("discord", "quiet", "q", "Q"), other, SMALL).job_id
    order = []
    for _ in range(6):
        job = engine.demos.claim_demo("w", "local")
        assert job is not None
        order.append(job.id)
        engine.demos.demo_finished(job.id, {"results": []}, None)
    # the quiet community's one demo runs second, not after the busy community's five
    assert order == [busy[0], quiet, *busy[1:]]


# ------------------------------------------------------------------- progress


ROW = {"strategy": "none", "peak_bytes": MIB, "saved_bytes": MIB, "step_ms": 1.0, "grads_identical": True}


def test_a_demos_progress_only_moves_forward(engine: StudyEngine) -> None:
    job_id = engine.demos.request_demo(ANN, CH, SMALL).job_id
    assert engine.demos.claim_demo("w", "local") is not None
    row = ROW
    engine.demos.demo_progress(job_id, {"total": 4, "info": {}, "rows": []})
    card = engine.demos.demo_progress(job_id, {"total": 4, "info": {}, "rows": [row, {**row, "strategy": "block"}]})
    assert isinstance(card, DemoProgressCard) and (card.done, card.total) == (2, 4)
    # a late or replayed report (a start event heard after two rows) shows nothing, keeps "2 of 4"
    assert engine.demos.demo_progress(job_id, {"total": 1, "info": {}, "rows": []}) is None
    assert engine.demos.demo_progress(job_id, {"total": 4, "info": {}, "rows": [row]}) is None
    engine.demos.demo_finished(job_id, {"results": []}, None)
    assert engine.demos.demo_progress(job_id, {"total": 4, "info": {}, "rows": [row] * 3}) is None
    [job] = engine.demos.demo_jobs()
    assert '"block"' in job.progress and job.state == "done"


def test_progress_cards_reach_the_platform_in_order(engine: StudyEngine, tmp_path: Path) -> None:
    rows = "".join(
        "echo '" + json.dumps({"event": "row", "row": {**ROW, "strategy": "none" if n == 0 else "block"}}) + "'\n"
        for n in range(12)
    )
    fast = fake_python(
        tmp_path,
        'echo \'{"event": "start", "total": 12}\'\n' + rows + 'echo \'{"event": "result", "result": {}}\'\n',
    )
    engine.demos.request_demo(ANN, CH, SMALL)
    shown: list[int] = []

    async def show(card: DemoProgressCard) -> None:
        shown.append(card.done)

    asyncio.run(run_one(DemoJobRunner(engine, LocalBackend(python=fast), tmp_path / "c", on_progress=show)))
    assert shown == list(range(13))


def test_doctor_says_which_memory_limit_holds_a_demo() -> None:
    from bot.doctor.report import check_demo_memory

    check = check_demo_memory()
    assert check.name == "demo memory" and check.status == "ok" and check.message.startswith("rlimit: each CPU demo")
