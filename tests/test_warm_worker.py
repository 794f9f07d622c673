"""The warm demo process (bot/worker/zygote.py, bot/worker/warm.py): torch imported once, each
demo a child forked from it in its own session, with its own environment, address-space limit,
output and exit code; killed with its process group; the warm process restarted when it dies;
a fresh process when it cannot start. tests/warm_probe.py stands in for a demo module."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator

import pytest

from bot.worker import warm
from bot.worker.demo_process import DemoFailure, run_demo_process

pytestmark = pytest.mark.torch

PROBE = "tests.warm_probe"
ESTIMATE = ("--preset", "gpt2-small", "--batch", "1", "--seq", "128")


@pytest.fixture(autouse=True)
def fresh_warm_processes() -> Iterator[None]:
    warm.close_all()
    yield
    warm.close_all()


def probe(*argv: str, env: dict[str, str] | None = None, space: int | None = None) -> tuple[int, str, str]:
    child = warm.spawn(sys.executable, PROBE, argv, env or {}, space)
    assert child is not None
    out, err = child.stdout.read(), child.stderr.read()
    return child.wait(), out, err


def test_a_demo_child_is_forked_from_the_warm_process_with_torch_already_imported() -> None:
    code, out, err = probe("self", env={"WARM_PROBE": "yes"})
    seen = json.loads(out)
    zygote = warm.zygote_for(sys.executable)
    assert zygote is not None
    assert code == 0 and err == "to stderr\n"
    assert seen["torch_before"] is True  # imported by the warm process, not by the demo
    assert seen["ppid"] == zygote.proc.pid
    assert seen["sid"] == seen["pid"]  # its own session: a time-out kills its whole group
    assert seen["env"] == "yes" and seen["argv"] == ["self"]
    assert os.path.samefile(seen["cwd"], os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_demo_is_a_new_child_of_the_same_warm_process() -> None:
    first, second = (json.loads(probe("self")[1]) for _ in range(2))
    assert first["pid"] != second["pid"] and first["ppid"] == second["ppid"]


def test_the_childs_exit_code_limit_and_crash_come_back() -> None:
    code, out, _ = probe("self", "3", space=6 << 30)
    assert code == 3 and json.loads(out)["limit"] == 6 << 30
    code, _, err = probe("crash")
    assert code == 1 and "RuntimeError: the probe failed on purpose" in err


def test_a_child_past_its_address_space_gets_a_memory_error() -> None:
    code, _, err = probe("hog", space=4 << 30)
    assert code == 1 and "MemoryError" in err


def test_killing_a_child_kills_its_group_and_reads_as_killed() -> None:
    child = warm.spawn(sys.executable, PROBE, ("sleep",), {}, None)
    assert child is not None
    assert child.stdout.readline() == "started\n" and child.poll() is None
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait() == -9 and child.poll() == -9


def test_a_warm_process_that_died_is_started_again() -> None:
    first = warm.zygote_for(sys.executable)
    assert first is not None
    first.proc.kill()
    first.proc.wait()
    code, out, _ = probe("self")
    second = warm.zygote_for(sys.executable)
    assert second is not None and second is not first and code == 0
    assert json.loads(out)["ppid"] == second.proc.pid


def test_a_warm_process_that_cannot_start_leaves_demos_to_fresh_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "PRELOAD", ("torch", "no_such_module_here"))
    assert warm.spawn(sys.executable, PROBE, ("self",), {}, None) is None
    outcome = run_demo_process("demos.estimate", ESTIMATE, 120)  # started fresh instead
    assert outcome.result["preset"] == "gpt2-small"


def test_a_process_the_demo_leaves_behind_does_not_hold_its_exit() -> None:
    code, out, _ = probe("grandchild")
    grandchild = int(out)
    try:
        assert code == 0
        os.kill(grandchild, 0)  # still running: the child's end was read without waiting for it
    finally:
        os.kill(grandchild, signal.SIGKILL)


def test_an_abandoned_warm_run_leaks_no_descriptor() -> None:
    assert warm.zygote_for(sys.executable) is not None

    def refuse(_event: dict[str, object]) -> None:
        raise RuntimeError("the listener failed")

    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(RuntimeError, match="the listener failed"):
            run_demo_process("demos.estimate", ESTIMATE, 120, on_event=refuse)
    assert len(os.listdir("/proc/self/fd")) == before


def test_warm_and_fresh_demos_give_the_same_result() -> None:
    def figures(result: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in result.items() if k not in ("wall_s", "process_s", "threads")}

    zygote = warm.zygote_for(sys.executable)
    assert zygote is not None  # the warm run below is a fork of it, not a fresh process
    warm_run = run_demo_process("demos.estimate", ESTIMATE, 120, warm=True)
    assert zygote.alive() and warm.zygote_for(sys.executable) is zygote
    fresh_run = run_demo_process("demos.estimate", ESTIMATE, 120, warm=False)
    assert figures(warm_run.result) == figures(fresh_run.result)
    assert [e["event"] for e in warm_run.events] == [e["event"] for e in fresh_run.events] == ["start"]
    with pytest.raises(DemoFailure, match="Unknown preset") as refused:  # the demo's own sentence, exit 2
        run_demo_process("demos.estimate", ("--preset", "gpt5"), 120)
    assert refused.value.kind == "refused"
