"""DemoRunner: runs a demo in a separate worker process, so the bot never imports torch."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

from bot.config import ROOT
from bot.core.demo_result import result_card
from bot.core.errors import StudyBotError
from bot.core.values import DemoRequest, DemoResultCard

log = logging.getLogger(__name__)


class DemoRunner:
    """Runs `python -m demos.<name> --json` in a child process with a time limit."""

    def __init__(self, out_dir: Path, timeout_s: float = 120.0, python: str = sys.executable) -> None:
        self.out_dir = out_dir
        self.timeout_s = timeout_s
        self.python = python

    def run(self, request: DemoRequest) -> DemoResultCard:
        args = [self.python, "-m", request.module, "--json", *request.args]
        chart: Path | None = None
        if request.module == "demos.checkpoint":
            self.out_dir.mkdir(parents=True, exist_ok=True)
            chart = (
                self.out_dir / f"checkpoint-{time.strftime('%Y%m%d-%H%M%S')}-{time.monotonic_ns() % 10**6}.png"
            ).resolve()
            args += ["--chart", str(chart)]
        started = time.perf_counter()
        log.info("running demo: %s", " ".join(args[1:]))
        try:
            done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise StudyBotError(f"The demo did not finish within {self.timeout_s:g} s and was stopped.") from None
        except OSError as exc:
            raise StudyBotError(f"The demo worker could not start: {exc.strerror}.") from None
        wall = time.perf_counter() - started
        if done.returncode != 0:
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else f"exit code {done.returncode}"
            if "No module named 'torch'" in done.stderr:
                reason = "PyTorch is not installed for the demo worker (pip install '.[demo]')."
            raise StudyBotError(f"The demo refused or failed: {reason}")
        try:
            result = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise StudyBotError("The demo finished but printed no readable result.") from None
        if chart is not None and not chart.exists():
            chart = None
        return result_card(request.module, result, str(chart) if chart else None, wall)
