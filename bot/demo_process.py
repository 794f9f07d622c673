"""Running one demo in a child process: `python -m demos.<name> --progress`, its JSON events
heard as they are printed, killed with its process group when it overruns its time limit.

The local back end (bot/jobs.py), the Celery worker (bot/worker.py) and `studybot demo` all
run demos through here. It imports no engine, store or platform, so a worker host loads only
this, Celery and the demo's own child process."""

from __future__ import annotations

import json
import logging
import os
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

log = logging.getLogger(__name__)

Event = dict[str, Any]
# Lines a demo's stderr may carry that say nothing to a user (the profiler's probes).
NOISE = ("USDT", "STAGE:", "[W ", "Warning: ")


class DemoFailure(Exception):
    """A demo that did not finish, with one sentence for the person who asked."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


# The order a result's charts are shown in, the memory timeline first: bot.core.demo_result's
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


def run_demo_process(
    module: str,
    args: tuple[str, ...],
    timeout_s: float,
    on_event: Callable[[Event], None] | None = None,
    python: str = sys.executable,
) -> DemoOutcome:
    """Run one demo in a child process and return its result; `on_event` hears each progress
    event as it is printed. Used by the local back end and by the Celery worker alike."""
    if module not in ("demos.checkpoint", "demos.estimate"):
        raise DemoFailure(f"There is no demo called {module}.")
    with tempfile.TemporaryDirectory(prefix="studybot-demo-") as tmp:
        chart = Path(tmp) / "chart.png"
        command = [python, "-m", module, "--progress", *args]
        if module == "demos.checkpoint":
            command += ["--chart", str(chart)]
        log.info("running demo: %s", " ".join(command[1:]))
        launched = time.perf_counter()
        try:
            proc = subprocess.Popen(
                command,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,  # its own process group: a time-out kills it whole
            )
        except OSError as exc:
            raise DemoFailure(f"The demo worker could not start: {exc.strerror}.") from None
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
            reader.join(timeout=5)
        text = "".join(stderr)
        if text.strip():
            log.debug("demo stderr:\n%s", text)
        if killed.is_set():
            raise DemoFailure(f"The demo did not finish within {timeout_s:g} s and was stopped.")
        if code != 0:
            raise DemoFailure(f"The demo refused or failed: {_reason(text, code)}")
        if not isinstance(result, dict):
            raise DemoFailure("The demo finished but printed no readable result.")
        pictures = read_charts(result, chart)
        # the child process's whole life, interpreter and torch import included
        result["process_s"] = round(time.perf_counter() - launched, 3)
        main = pictures[0][1] if pictures else None
        return DemoOutcome(result=result, chart=main, events=tuple(events), charts=pictures)


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


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
