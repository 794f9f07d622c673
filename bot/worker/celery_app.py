"""The Celery side of demo jobs: `studybot worker [--queues gpu]` on any host with torch.

Each task runs the demo exactly as the local back end does (`python -m demos.<name>
--progress` in a child process, so the worker process itself stays small) and reports every
progress event through the task's state, where the bot reads it. JSON only, never pickle;
acks late, so a task whose worker dies is not lost silently; a soft and a hard time limit.
`studybot.fit_fsrs` fits a community's FSRS parameters to its review log the same way (a child
process, bot/worker/fsrs_fit.py). It imports no engine or store: a worker host loads Celery and
bot/worker/demo_process.py only."""

from __future__ import annotations

import base64
import logging
from typing import Any

from celery import Celery, Task  # type: ignore[import-untyped]
from celery.exceptions import SoftTimeLimitExceeded  # type: ignore[import-untyped]

from bot.worker.demo_process import TIMEOUT, DemoFailure, memory_available, run_demo_process

log = logging.getLogger(__name__)


def make_app(redis_url: str, timeout_s: float = 120.0, fit_timeout_s: float = 1800.0, warm: bool = True) -> Celery:
    app = Celery("studybot", broker=redis_url, backend=redis_url)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_track_started=True,
        task_soft_time_limit=timeout_s,
        task_time_limit=timeout_s + 10,
        result_expires=3600,
        broker_connection_retry_on_startup=True,
        task_default_queue="demos",
    )

    @app.task(name="studybot.run_demo", bind=True)  # type: ignore[untyped-decorator]
    def run_demo(self: Task, module: str, args: list[str]) -> dict[str, Any]:
        events: list[dict[str, Any]] = []

        def report(event: dict[str, Any]) -> None:
            events.append(event)
            self.update_state(state="PROGRESS", meta={"events": list(events)})

        try:
            # the host's memory as it is now, told to the demo and held as its limit
            outcome = run_demo_process(
                module, tuple(args), timeout_s, report, memory_bytes=memory_available() or None, warm=warm
            )
        except DemoFailure as failure:
            raise RuntimeError(failure.sentence, failure.kind) from None  # the bot reads both
        except SoftTimeLimitExceeded:
            raise RuntimeError(
                f"The demo hit the worker's time limit of {timeout_s:g} s and was stopped.", TIMEOUT
            ) from None
        chart = base64.b64encode(outcome.chart).decode() if outcome.chart else None
        # every chart, the main one first: [kind, base64 PNG] pairs (JSON keeps a list's order)
        charts = [[kind, base64.b64encode(picture).decode()] for kind, picture in outcome.pictures()]
        return {"events": events, "result": outcome.result, "chart": chart, "charts": charts}

    # A community's FSRS fit (bot/worker/fsrs_fit.py, imported here only when one runs): its own limits.
    @app.task(name="studybot.fit_fsrs", soft_time_limit=fit_timeout_s, time_limit=fit_timeout_s + 10)  # type: ignore[untyped-decorator]
    def fit_fsrs(rows: list[list[Any]]) -> dict[str, Any]:
        from bot.worker.fsrs_fit import FitFailure, run_fit_process

        try:
            return run_fit_process(rows, fit_timeout_s)
        except FitFailure as failure:
            raise RuntimeError(failure.sentence) from None
        except SoftTimeLimitExceeded:
            raise RuntimeError(f"The fit hit the worker's time limit of {fit_timeout_s:g} s and was stopped.") from None

    return app
