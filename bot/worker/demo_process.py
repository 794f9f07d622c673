"""Running one demo in a child process: `python -m demos.<name> --progress`, its JSON events
heard as they are printed, killed with its process group when it overruns its time limit.

The local back end (bot/background/demo_runner.py), the Celery worker (bot/worker/celery_app.py) and `studybot demo` all
run demos through here. It imports no engine, store or platform, so a worker host loads only
this, Celery and the demo's own child process."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.config import ROOT
from bot.errors import WorkerFailure
from bot.worker.warm import WarmChild
from bot.worker.warm import spawn as warm_spawn

log = logging.getLogger(__name__)

Event = dict[str, Any]
# Lines a demo's stderr may carry that say nothing to a user (the profiler's probes).
NOISE = ("USDT", "STAGE:", "[W ", "Warning: ")


# Why a demo failed, as its job stores it. The member's own run: the demo refused it (its
# estimate or its bounds), it overran the time limit, it needed more memory than its share, or
# it failed on the way. The bot's side (bot/core/services/demo_jobs.py BOT_FAILURES): "restart",
# "unavailable" (Redis down), "worker" (the worker was lost), "bug" (an incident of ours).
REFUSED, TIMEOUT, MEMORY, FAILED = "refused", "timeout", "memory", "failed"
STARTUP_S = 15.0  # at most this much of the time limit is left for the child's start-up
# RLIMIT_AS counts address space, not memory in use: the interpreter and torch map about
# 0.8 GiB on a CPU worker, and each of its threads a stack (malloc arenas are held to 2).
BASE_ADDRESS_SPACE = 1536 * 1024**2
THREAD_ADDRESS_SPACE = 16 * 1024**2
_OUT_OF_MEMORY = ("MemoryError", "can't allocate memory", "Cannot allocate memory", "std::bad_alloc")


class DemoFailure(WorkerFailure):
    """A demo that did not finish, with one sentence for the person who asked, and why
    (`kind`: one of the kinds above, or the bot's own)."""

    def __init__(self, sentence: str, kind: str = FAILED) -> None:
        super().__init__(sentence)
        self.kind = kind


def memory_available() -> int:
    """Bytes this machine can still give without swapping (MemAvailable), or 0 if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def time_budget(timeout_s: float) -> float:
    """The demo's own `--time-budget`: the time limit less its start-up (a quarter, at most
    STARTUP_S), so a run the estimate admits also finishes before it is killed."""
    return round(timeout_s - min(STARTUP_S, timeout_s / 4), 1)


def address_space_limit(memory_bytes: int) -> int:
    """The child's RLIMIT_AS for `memory_bytes` of its own: that plus what torch maps at start."""
    return memory_bytes + BASE_ADDRESS_SPACE + THREAD_ADDRESS_SPACE * (os.cpu_count() or 1)


def memory_limit_kind() -> str:
    """How a demo child's memory is bounded here, for `studybot doctor`: "rlimit" (RLIMIT_AS
    set on each CPU demo child), or "none" where the platform has no RLIMIT_AS."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return "none"
    return "rlimit" if hasattr(resource, "RLIMIT_AS") else "none"


def runs_on_cuda(args: tuple[str, ...]) -> bool:
    """Whether a demo with these arguments runs on a GPU here (`--device`, else auto: a GPU
    when the NVIDIA driver is present). CUDA maps far more address space than it uses, so
    RLIMIT_AS bounds CPU runs only; a GPU run is bounded by the demo's estimate."""
    device = next((args[i + 1] for i in range(len(args) - 1) if args[i] == "--device"), "auto")
    return device == "cuda" or (device == "auto" and Path("/dev/nvidiactl").exists())


def limited_command(command: list[str], memory_bytes: int) -> list[str]:
    """`command` started by a shell that first sets its RLIMIT_AS (`ulimit -v`, in KiB) and then
    execs it, so the limit is there before the demo's first instruction. The fork itself runs no
    Python: a `preexec_fn` in this threaded process (torch, the bridge's pool) could crash or hang
    the forked child before exec."""
    kib = address_space_limit(memory_bytes) // 1024
    return ["/bin/sh", "-c", f'ulimit -v {kib} && exec "$@"', "demo", *command]


# The order a result's charts are shown in, the memory timeline first: bot.core.rules.demo_result's
# CHART_ORDER (a worker host loads no bot.core; tests/test_demo_request.py compares the two).
CHART_ORDER = ("timeline", "sweep", "budget", "memory")


@dataclass(frozen=True)
class DemoOutcome:
    """A finished demo: its JSON result, the main chart's PNG bytes (the timeline), and every
    chart it drew as (kind, PNG bytes), the main one first."""

    result: dict[str, Any]
    chart: bytes | None
    events: tuple[Event, ...] = ()
    charts: tuple[tuple[str, bytes], ...] = ()

    def pictures(self) -> tuple[tuple[str, bytes], ...]:
        """Every chart, the main one first (an outcome from an older worker has only `chart`)."""
        if self.charts:
            return self.charts
        return (("chart", self.chart),) if self.chart else ()


def chart_kinds(kinds: list[str]) -> list[str]:
    """`kinds` in the order CHART_ORDER shows them."""
    rank = {kind: i for i, kind in enumerate(CHART_ORDER)}
    return sorted(kinds, key=lambda kind: rank.get(kind, len(rank)))


def read_charts(result: dict[str, Any], main: Path) -> tuple[tuple[str, bytes], ...]:
    """The PNGs a demo wrote (its result's `charts`: kind -> path), read before its folder goes."""
    written = result.get("charts")
    paths: dict[str, str] = (
        {str(k): str(v) for k, v in written.items()} if isinstance(written, dict) else {"timeline": str(main)}
    )
    out = []
    for kind in chart_kinds(list(paths)):
        path = Path(paths[kind])
        if path.is_file():
            out.append((kind, path.read_bytes()))
    return tuple(out)


def _reason(stderr: str, code: int) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.strip().startswith(NOISE)]
    if any("No module named 'torch'" in line for line in lines):
        return "PyTorch is not installed for the demo worker (pip install '.[demo]')."
    return lines[-1] if lines else f"the demo process exited with code {code}."


def _failure(stderr: str, code: int, memory_bytes: int | None) -> DemoFailure:
    """Why a child exited non-zero: refused (exit 2, the demo's one sentence), out of its
    memory share, or failed."""
    if memory_bytes is not None and any(mark in stderr for mark in _OUT_OF_MEMORY):
        return DemoFailure(
            f"The demo needed more than the {memory_bytes / 1024**2:,.0f} MiB of memory a demo may use "
            "on this worker and was stopped; ask for a smaller run (fewer layers or tokens, a smaller width or batch).",
            MEMORY,
        )
    return DemoFailure(f"The demo refused or failed: {_reason(stderr, code)}", REFUSED if code == 2 else FAILED)


def run_demo_process(  # noqa: C901 - one child's life: start, stream, time out, kill, read its result
    module: str,
    args: tuple[str, ...],
    timeout_s: float,
    on_event: Callable[[Event], None] | None = None,
    python: str = sys.executable,
    memory_bytes: int | None = None,
    warm: bool = True,
) -> DemoOutcome:
    """Run one demo in a child process and return its result; `on_event` hears each progress
    event as it is printed. Used by the local back end and by the Celery worker alike.

    The checkpoint demo gets the time limit as its `--time-budget` (less its start-up), so its
    estimate refuses what would be killed. `memory_bytes`: the memory it may use, told to it
    (STUDYBOT_DEMO_MEMORY_BYTES, which its estimate holds the run to) and, on a CPU run,
    enforced as the child's RLIMIT_AS; a run past it fails with one sentence. `warm`: fork the
    child from this interpreter's warm process (bot/worker/warm.py: torch already imported);
    a fresh process when that is off, `python` is another interpreter, or it cannot start."""
    if module not in ("demos.checkpoint", "demos.estimate", "demos.plan"):
        raise DemoFailure(f"There is no demo called {module}.")
    with tempfile.TemporaryDirectory(prefix="studybot-demo-") as tmp:
        chart = Path(tmp) / "chart.png"
        demo_args = ["--progress", *args]
        if module == "demos.checkpoint":
            demo_args += ["--chart", str(chart), "--time-budget", f"{time_budget(timeout_s):g}"]
        elif module == "demos.plan":  # the frontier and the breakdown, one PNG
            demo_args += ["--chart", str(chart)]
        command = [python, "-m", module, *demo_args]
        env = dict(os.environ)
        limited = memory_bytes is not None and memory_limit_kind() == "rlimit" and not runs_on_cuda(args)
        if memory_bytes is not None:
            env["STUDYBOT_DEMO_MEMORY_BYTES"] = str(max(0, memory_bytes))
            env.setdefault("MALLOC_ARENA_MAX", "2")  # glibc's arenas would eat the address space
        log.info("running demo: %s", " ".join(command[1:]))
        launched = time.perf_counter()
        space = address_space_limit(memory_bytes) if limited and memory_bytes is not None else None
        # the warm process is this interpreter's own: another interpreter starts fresh
        forked = warm_spawn(python, module, tuple(demo_args), env, space) if warm and python == sys.executable else None
        proc: subprocess.Popen[str] | WarmChild = (
            forked if forked is not None else _fresh_process(command, env, python, memory_bytes if limited else None)
        )
        stderr: list[str] = []
        reader = threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True)
        reader.start()
        killed = threading.Event()

        def expire() -> None:
            killed.set()
            _kill(proc)

        timer = threading.Timer(timeout_s, expire)
        timer.start()
        events: list[Event] = []
        result: dict[str, Any] | None = None
        try:
            for line in proc.stdout or []:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    log.debug("demo stdout: %s", line.rstrip())
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("event") == "result":
                    result = event.get("result")
                    continue
                events.append(event)
                if on_event is not None:
                    on_event(event)
            code = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                _kill(proc)
                if isinstance(proc, WarmChild):
                    proc.close()  # nobody will wait for it now
            reader.join(timeout=5)
        text = "".join(stderr)
        if text.strip():
            log.debug("demo stderr:\n%s", text)
        if killed.is_set():
            raise DemoFailure(f"The demo did not finish within {timeout_s:g} s and was stopped.", TIMEOUT)
        if code != 0:
            raise _failure(text, code, memory_bytes if limited else None)
        if not isinstance(result, dict):
            raise DemoFailure("The demo finished but printed no readable result.")
        pictures = read_charts(result, chart)
        # the child process's whole life, interpreter and torch import included
        result["process_s"] = round(time.perf_counter() - launched, 3)
        main = pictures[0][1] if pictures else None
        return DemoOutcome(result=result, chart=main, events=tuple(events), charts=pictures)


def _fresh_process(
    command: list[str], env: dict[str, str], python: str, memory_bytes: int | None
) -> subprocess.Popen[str]:
    """The demo as a new process (no warm one): `memory_bytes`, when given, as its RLIMIT_AS."""
    if memory_bytes is not None:
        if shutil.which(python) is None:  # the shell would say so only as exit 127
            raise DemoFailure(f"The demo worker could not start: {os.strerror(errno.ENOENT)}.", "worker")
        command = limited_command(command, memory_bytes)
    try:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # its own process group: a time-out kills it whole
        )
    except OSError as exc:
        raise DemoFailure(f"The demo worker could not start: {exc.strerror}.", "worker") from None


def save_chart(out_dir: Path, name: str, chart: bytes | None) -> str | None:
    """Write a demo's PNG chart as `out_dir/name.png`; its absolute path, or None without one."""
    if not chart:
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    path = (out_dir / f"{name}.png").resolve()
    path.write_bytes(chart)
    return str(path)


def save_charts(out_dir: Path, name: str, outcome: DemoOutcome) -> dict[str, str]:
    """Write every chart of an outcome: the main one as `out_dir/name.png`, the others beside it
    as `name-<kind>.png`; kind -> absolute path, the main one first."""
    saved: dict[str, str] = {}
    for index, (kind, picture) in enumerate(outcome.pictures()):
        path = save_chart(out_dir, name if index == 0 else f"{name}-{kind}", picture)
        if path is not None:
            saved[kind] = path
    return saved


def _kill(proc: subprocess.Popen[str] | WarmChild) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
