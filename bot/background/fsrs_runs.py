"""Fitting a community's FSRS parameters, from the bot's side: read its review log, send it to
the demo worker (`STUDYBOT_WORKER`: a child process here, or the Celery task
`studybot.fit_fsrs` on a worker host), store what comes back. `studybot fsrs fit` calls
`fit_community`; the scheduler's weekly job hands its communities to `WeeklyFits`."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from bot.config import Settings
from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.errors import StudyBotError
from bot.core.rules.fsrs_params import MIN_REVIEWS, FitRequest, encode_log
from bot.core.values import CommunityRef
from bot.worker.fsrs_fit import FitFailure, Row, run_fit_process

log = logging.getLogger(__name__)

# A fit's limit on the worker: fsrs.Optimizer takes about 5 ms per review on a CPU core.
FIT_TIMEOUT_S = 1800.0
Fitter = Callable[[Sequence[Row]], dict[str, Any]]


def worker_fitter(settings: Settings, timeout_s: float = FIT_TIMEOUT_S) -> Fitter:
    """The fit on the configured demo worker: a child process here (`local`) or Celery."""
    if settings.worker != "celery":
        return lambda rows: run_fit_process(rows, timeout_s)

    def on_celery(rows: Sequence[Row]) -> dict[str, Any]:
        from bot.worker.celery_app import make_app

        app = make_app(settings.redis_url, settings.demo_timeout_s, fit_timeout_s=timeout_s)
        try:
            task = app.send_task("studybot.fit_fsrs", args=[[list(row) for row in rows]], queue=settings.celery_queue)
        # Broad: Celery and kombu raise many kinds for a broker they cannot reach (traceback logged).
        except Exception as exc:  # noqa: BLE001
            log.warning("sending a fit to Celery failed: %s", exc, exc_info=True)
            raise FitFailure("the demo queue (Redis) cannot be reached.") from None
        try:
            result = task.get(timeout=timeout_s + 30, propagate=True)
        # Broad: propagate=True raises whatever the worker's fit raised, of any type.
        except Exception as exc:  # noqa: BLE001
            log.warning("the worker's fit failed: %s", exc, exc_info=True)
            raise FitFailure(f"the worker's fit failed: {exc}") from None
        if not isinstance(result, dict):
            raise FitFailure("the worker returned no readable result.")
        return result

    return on_celery


def fit_community(engine: StudyEngine, community: CommunityRef, fitter: Fitter) -> str:
    """Fit the community's parameters on the worker and store them; the sentence to show
    (FitFailure with one when the worker could not fit). Below the optimizer's minimum of
    counted reviews nothing is sent and the defaults stay."""
    request = engine.fsrs.fsrs_request(community)
    if request.needed:
        return _too_few(engine, community, request)
    return _fit(engine, community, request, fitter)


def _too_few(engine: StudyEngine, community: CommunityRef, request: FitRequest) -> str:
    engine.fsrs.fsrs_outcome(community, None, request.counted)
    return wording.FSRS_TOO_FEW.format(counted=request.counted, minimum=MIN_REVIEWS, more=request.needed)


def _fit(engine: StudyEngine, community: CommunityRef, request: FitRequest, fitter: Fitter) -> str:
    try:
        result = fitter(encode_log(request.log))
    except FitFailure as failure:
        raise FitFailure(wording.FSRS_FIT_FAILED.format(community=request.name, reason=failure.sentence)) from None
    parameters = result.get("parameters")
    if not isinstance(parameters, list):
        engine.fsrs.fsrs_outcome(community, None, request.counted)
        return wording.FSRS_KEPT.format(reviews=request.counted)
    engine.fsrs.fsrs_outcome(community, [float(w) for w in parameters], request.counted)
    seconds = float(result.get("fit_s") or 0.0)
    return wording.FSRS_FITTED.format(reviews=request.counted, community=request.name, seconds=seconds)


class WeeklyFits:
    """The scheduler's weekly fits, one at a time in a daemon thread: the scheduler only hands
    over (community, ISO week) and never waits. Each is claimed in the database first, so a
    community is fitted once a week whichever bot process hands it over; too few reviews: the
    defaults stay and nothing is sent."""

    def __init__(self, engine: StudyEngine, fitter: Fitter | None = None) -> None:
        self.engine = engine
        self.fitter = fitter
        self._queue: queue.Queue[tuple[CommunityRef, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __call__(self, community: CommunityRef, week: str) -> None:
        self._queue.put((community, week))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="fsrs-weekly-fits", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        while True:
            community, week = self._queue.get()
            try:
                self.run(community, week)
            finally:
                self._queue.task_done()

    def run(self, community: CommunityRef, week: str) -> str | None:
        """One weekly fit now: its sentence, or None when another process claimed the week."""
        where = f"{community.platform}/{community.community_id}"
        try:
            if not self.engine.fsrs.fsrs_claim_week(community, week):
                return None
            sentence = fit_community(self.engine, community, self.fitter or worker_fitter(Settings()))
        except FitFailure as failure:
            sentence = failure.sentence
        except StudyBotError as exc:
            sentence = exc.message
        except Exception:
            log.exception("the weekly FSRS fit of %s failed", where)
            return None
        log.info("weekly FSRS fit of %s (%s): %s", where, week, sentence)
        return sentence

    def wait(self) -> None:
        """Until every fit handed over so far is done (tests, shutdown)."""
        self._queue.join()
