"""Fitting a community's FSRS parameters on the demo worker: fsrs.Optimizer (torch) on its
review log, in a child process (`python -m bot.worker.fsrs_fit`, the log as JSON on stdin, the result
as JSON on stdout), so neither the bot nor the Celery worker process loads torch itself.

It imports no engine, store or platform: a worker host loads only this, Celery and fsrs.
The log's rows are [card, rating 1-4, ISO time] (bot.core.rules.fsrs_params.encode_log)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from bot.config import ROOT
from bot.errors import WorkerFailure

log = logging.getLogger(__name__)

Row = Sequence[Any]


class FitFailure(WorkerFailure):
    """A fit that did not finish, with one sentence for the person who asked."""


def fit(rows: Sequence[Row]) -> dict[str, Any]:
    """Run fsrs.Optimizer on the log here (torch must be installed): {"parameters": the fitted
    list, or None where the optimizer kept its defaults (too few reviews), "fit_s": seconds}."""
    from fsrs import Optimizer, Rating, ReviewLog
    from fsrs.scheduler import DEFAULT_PARAMETERS

    logs = [
        ReviewLog(
            card_id=int(card),
            rating=Rating(int(rating)),
            review_datetime=datetime.fromisoformat(str(at)).astimezone(timezone.utc),
            review_duration=None,
        )
        for card, rating, at in rows
    ]
    started = time.perf_counter()
    fitted = [float(w) for w in Optimizer(logs).compute_optimal_parameters()]
    took = round(time.perf_counter() - started, 3)
    kept_defaults = fitted == [float(w) for w in DEFAULT_PARAMETERS]
    return {"parameters": None if kept_defaults else fitted, "fit_s": took, "reviews": len(logs)}


def run_fit_process(rows: Sequence[Row], timeout_s: float, python: str = sys.executable) -> dict[str, Any]:
    """`fit` in a child process of this machine; its result, `process_s` (its whole life,
    interpreter and torch import included) added. FitFailure with a sentence otherwise."""
    launched = time.perf_counter()
    try:
        done = subprocess.run(
            [python, "-m", "bot.worker.fsrs_fit"],
            input=json.dumps({"log": [list(row) for row in rows]}),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise FitFailure(f"The fit did not finish within {timeout_s:g} s and was stopped.") from None
    except OSError as exc:
        raise FitFailure(f"The fit could not start: {exc.strerror}.") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if any("No module named 'torch'" in line or "No module named 'pandas'" in line for line in lines):
            raise FitFailure("The fit needs the demo worker's packages (pip install '.[demo]').")
        raise FitFailure(f"The fit failed: {lines[-1] if lines else f'exit code {done.returncode}'}")
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise FitFailure("The fit finished but printed no readable result.") from None
    if not isinstance(result, dict):
        raise FitFailure("The fit finished but printed no readable result.")
    result["process_s"] = round(time.perf_counter() - launched, 3)
    return result


def main() -> None:
    """The child process: the log on stdin, one JSON line out."""
    request = json.loads(sys.stdin.read())
    print(json.dumps(fit(request["log"])))


if __name__ == "__main__":
    main()
