"""Demo jobs: a queue in the database, run by a worker that never blocks the chat.

`engine.demos.request_demo` queues a job (cooldown and queue limits are the engine's rules). A
`DemoJobRunner` in the bot process claims jobs one community at a time and runs each on a
back end chosen by `STUDYBOT_WORKER`:

- `local` (default): `python -m demos.<name> --progress` in a child process on this machine
  (the bot never imports torch), in a thread so the event loop keeps serving, killed with its
  process group when it overruns the time limit;
- `celery`: a Celery task through Redis, run by `studybot worker` on another host (a GPU
  box), which starts the very same child process there and reports its events back through
  the task's state; JSON only, acks late, soft and hard time limits.

Both run the demo through bot/worker/demo_process.py. The demo prints JSON lines: a `start` event
(how many strategies, where it runs), one `row` per strategy as soon as it is measured, then
the `result`. Each row updates the job's progress and the platform's message; the result (or
the reason it failed) is posted through the outbox in the channel where it was asked.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from bot.background.bridge import report_incident
from bot.background.delivery import wake_or_timeout
from bot.core.engine import StudyEngine
from bot.core.errors import StudyBotError
from bot.core.records import DemoJobRecord
from bot.core.values import CommunityRef, DemoProgressCard
from bot.core.wording import BUG
from bot.worker.demo_process import (
    TIMEOUT,
    DemoFailure,
    DemoOutcome,
    Event,
    memory_available,
    run_demo_process,
    save_charts,
)

log = logging.getLogger(__name__)


class Backend(Protocol):
    """Where demos run: the process's own child (inline) or a Celery worker, as the runner sees it."""

    name: str

    async def unavailable(self) -> str | None:
        """None when demos can run now; otherwise why not, in one sentence."""

    def has_room(self) -> bool:
        """Whether another demo may start beside those running (their memory promised)."""

    def admit(self, job_id: int) -> None:
        """Promise a just-claimed job its share of the memory (called on the loop, at once)."""

    async def run(self, job: DemoJobRecord, on_event: Callable[[Event], Awaitable[None]]) -> DemoOutcome: ...


# A demo may use at most this share of the memory not yet promised to running ones (the
# demo's own 80% rule); another starts beside them only when at least MIN_SHARE is left.
SHARE = 0.8
MIN_SHARE = 512 * 1024**2


class LocalBackend:
    """The demo in a child process of this machine, awaited in a thread. Parallel demos share
    the memory: each is given what the machine has available less what running ones were
    promised (never the same bytes twice), told it, and held to it (bot/worker/demo_process.py)."""

    name = "local"

    def __init__(
        self,
        timeout_s: float = 120.0,
        python: str = sys.executable,
        available: Callable[[], int] = memory_available,
        min_share: int = MIN_SHARE,
        warm: bool = True,
    ) -> None:
        self.timeout_s = timeout_s
        self.warm = warm  # fork each demo from this interpreter's warm process (bot/worker/warm.py)
        self.python = python
        self.available = available
        self.min_share = min_share
        self._shares: dict[int, int] = {}  # job id -> the memory it was given
        self._promised: dict[int, int] = {}  # job id -> what it may use of it

    async def unavailable(self) -> str | None:
        return None

    def share(self) -> int:
        """The memory a demo starting now may be given."""
        return max(0, self.available() - sum(self._promised.values()))

    def has_room(self) -> bool:
        return not self._promised or self.share() >= self.min_share

    def admit(self, job_id: int) -> None:
        share = self.share()
        self._shares[job_id] = share
        self._promised[job_id] = int(SHARE * share)

    async def run(self, job: DemoJobRecord, on_event: Callable[[Event], Awaitable[None]]) -> DemoOutcome:
        loop = asyncio.get_running_loop()
        heard: list[concurrent.futures.Future[None]] = []

        async def tell(event: Event) -> None:
            await on_event(event)

        def hear(event: Event) -> None:  # from the worker thread onto the loop
            heard.append(asyncio.run_coroutine_threadsafe(tell(event), loop))

        if job.id not in self._shares:
            self.admit(job.id)
        memory = self._shares[job.id] or None  # 0: this machine does not say what it has
        try:
            return await asyncio.to_thread(
                run_demo_process, job.module, job.args, self.timeout_s, hear, self.python, memory, self.warm
            )
        finally:
            self._shares.pop(job.id, None)
            self._promised.pop(job.id, None)
            # Every progress edit lands before the job ends, so none can overwrite the result.
            await asyncio.gather(*(asyncio.wrap_future(f) for f in heard), return_exceptions=True)


class CeleryBackend:
    """The demo as a Celery task through Redis, run by `studybot worker` on any host."""

    name = "celery"

    def __init__(
        self,
        redis_url: str,
        queue: str = "demos",
        timeout_s: float = 120.0,
        poll_s: float = 0.25,
        grace_s: float = 15.0,
    ) -> None:
        from bot.worker.celery_app import make_app

        self.redis_url = redis_url
        self.queue = queue
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.grace_s = grace_s  # beyond the worker's own hard limit, before the bot gives up
        self.app = make_app(redis_url, timeout_s)

    async def unavailable(self) -> str | None:
        def ping() -> str | None:
            import redis

            try:
                redis.Redis.from_url(self.redis_url, socket_connect_timeout=1, socket_timeout=1).ping()
            except (redis.RedisError, OSError, ValueError) as exc:  # unreachable, timed out, a bad URL
                log.warning("Redis at the demo queue is unreachable: %s", exc)
                return "Demos are unavailable right now: the demo queue (Redis) cannot be reached."
            return None

        return await asyncio.to_thread(ping)

    def has_room(self) -> bool:
        return True  # each worker host shares its own memory among its own demos

    def admit(self, job_id: int) -> None:
        pass

    async def run(self, job: DemoJobRecord, on_event: Callable[[Event], Awaitable[None]]) -> DemoOutcome:
        try:
            task = await asyncio.to_thread(
                self.app.send_task, "studybot.run_demo", args=[job.module, list(job.args)], queue=self.queue
            )
        # Broad: Celery and kombu raise many kinds (their own, Redis's, the socket's) for a broker
        # they cannot reach; each means the same to the member, and the traceback is logged.
        except Exception as exc:  # noqa: BLE001
            log.warning("sending demo %s to Celery failed: %s", job.id, exc, exc_info=True)
            raise DemoFailure(
                "Demos are unavailable right now: the demo queue (Redis) cannot be reached.", "unavailable"
            ) from None
        deadline = time.monotonic() + self.timeout_s + self.grace_s  # the worker's hard limit comes first
        seen = 0
        while True:
            try:
                state, info = await asyncio.to_thread(lambda: (task.state, task.info))
            except Exception as exc:  # noqa: BLE001 - as when sending: any result-backend error, asked again
                log.warning("asking Celery about demo %s failed: %s", job.id, exc, exc_info=True)
                state, info = "UNKNOWN", None
            events = info.get("events", []) if isinstance(info, dict) else []
            for event in events[seen:]:
                await on_event(event)
            seen = max(seen, len(events))
            if state == "SUCCESS" and isinstance(info, dict):
                chart = base64.b64decode(info["chart"]) if info.get("chart") else None
                charts = tuple(
                    (str(pair[0]), base64.b64decode(pair[1]))
                    for pair in info.get("charts") or []
                    if isinstance(pair, list) and len(pair) == 2
                )
                return DemoOutcome(result=info["result"], chart=chart, events=tuple(events), charts=charts)
            if state == "FAILURE":
                sentence, kind = _celery_reason(info)
                raise DemoFailure(sentence, kind)
            if time.monotonic() > deadline:
                await asyncio.to_thread(task.revoke, terminate=True)
                raise DemoFailure(
                    f"The demo did not finish within {self.timeout_s:g} s: the worker running it stopped "
                    "answering (was it stopped or killed?).",
                    "worker",
                )
            await asyncio.sleep(self.poll_s)


def _celery_reason(info: object) -> tuple[str, str]:
    """A failed task's sentence and kind: the worker raises RuntimeError(sentence, kind)."""
    args: tuple[object, ...] = tuple(getattr(info, "args", ()))
    if isinstance(info, RuntimeError) and len(args) == 2 and all(isinstance(a, str) for a in args):
        return str(args[0]), str(args[1])
    text = str(info) if info else "the worker failed."
    if "TimeLimitExceeded" in type(info).__name__ or "TimeLimit" in text:
        return "The demo hit the worker's time limit and was stopped.", TIMEOUT
    if "WorkerLostError" in type(info).__name__ or "Worker exited" in text:
        return "The worker running the demo died before it finished.", "worker"
    return (text if text.endswith(".") else text + "."), "failed"


class DemoJobRunner:
    """Claims queued demo jobs and runs them on a back end, one at a time per community and
    `parallel` at once in all; reports progress and ends each job through the engine."""

    def __init__(
        self,
        engine: StudyEngine,
        backend: Backend,
        out_dir: Path,
        on_progress: Callable[[DemoProgressCard], Awaitable[None]] | None = None,
        on_finished: Callable[[], None] | None = None,
        parallel: int = 1,
        poll_s: float = 2.0,
        serves: Callable[[CommunityRef], bool] | None = None,
    ) -> None:
        self.engine = engine
        # the communities whose demos this process runs (a Discord shard's guilds): their
        # progress edits then come from the process connected to them; None: every community
        self.serves = serves
        self.backend = backend
        self.out_dir = out_dir
        self.on_progress = on_progress
        self.on_finished = on_finished
        self.parallel = parallel
        self.poll_s = poll_s
        self.name = f"{backend.name}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.unavailable_reason: str | None = None

    def wake(self) -> None:
        """A job was queued: look now (safe from any thread)."""
        if self._loop is not None and self._wake is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake.set)

    def _finished(self) -> None:
        if self.on_finished is not None:
            try:
                self.on_finished()
            except Exception:
                log.exception("waking the deliverers after a demo failed")

    async def start(self) -> None:
        """At start: jobs a stopped process left running are failed and their askers told."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        failed = await asyncio.to_thread(self.engine.demos.interrupted_demos, serves=self.serves)
        if failed:
            log.warning("%s demo(s) were running when the bot stopped: marked failed", failed)
            self._finished()
        self.unavailable_reason = await self.backend.unavailable()
        if self.unavailable_reason:
            log.warning("%s Quizzes work as usual.", self.unavailable_reason)

    async def run_forever(self) -> None:
        if self._wake is None:
            await self.start()
        assert self._wake is not None
        running: set[asyncio.Task[None]] = set()
        while True:
            while len(running) < self.parallel and await self._claim_and_start(running):
                pass
            await wake_or_timeout(self._wake, self.poll_s)
            self._wake.clear()

    async def _claim_and_start(self, running: set[asyncio.Task[None]]) -> bool:
        if running and not self.backend.has_room():
            return False  # a running demo's memory is promised: the next waits for it
        reason = await self.backend.unavailable()
        if reason != self.unavailable_reason:
            log.warning("%s", reason) if reason else log.info("the demo back end is reachable again")
            self.unavailable_reason = reason
        try:
            job = await asyncio.to_thread(self.engine.demos.claim_demo, self.name, self.backend.name, self.serves)
        except StudyBotError as exc:
            log.warning("claiming a demo job failed: %s", exc.message)
            return False
        if job is None:
            return False
        if reason:  # refuse at once rather than leave the member waiting on a dead queue
            await asyncio.to_thread(self.engine.demos.demo_failed, job.id, reason, "unavailable")
            self._finished()
            return True
        self.backend.admit(job.id)  # at once, on the loop: the next claim sees its memory promised
        task = asyncio.create_task(self.run_job(job), name=f"demo-{job.id}")
        running.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            running.discard(finished)
            self.wake()  # a community's next job may run now

        task.add_done_callback(done)
        return True

    async def run_job(self, job: DemoJobRecord) -> None:
        progress: dict[str, Any] = {"total": None, "info": {}, "rows": []}
        in_order = asyncio.Lock()  # one event at a time, in the order heard: progress only moves on

        async def on_event(event: Event) -> None:
            async with in_order:
                if event.get("event") == "start":
                    progress["total"] = event.get("total")
                    progress["info"] = {k: v for k, v in event.items() if k not in ("event", "total")}
                elif event.get("event") == "row" and isinstance(event.get("row"), dict):
                    progress["rows"].append(event["row"])
                else:
                    return
                snapshot = {**progress, "rows": list(progress["rows"])}
                card = await asyncio.to_thread(self.engine.demos.demo_progress, job.id, snapshot)
                if card is not None and self.on_progress is not None:
                    try:
                        await self.on_progress(card)
                    except Exception:
                        log.warning("showing the progress of demo %s failed", job.id, exc_info=True)

        started = time.perf_counter()
        try:
            outcome = await self.backend.run(job, on_event)
        except DemoFailure as failure:
            await asyncio.to_thread(self.engine.demos.demo_failed, job.id, failure.sentence, failure.kind)
        # Broad by design: any other error is a bug; the job is failed and report_incident logs it.
        except Exception:  # noqa: BLE001
            incident = report_incident(f"demo {job.id}")
            await asyncio.to_thread(self.engine.demos.demo_failed, job.id, BUG.format(incident=incident), "bug")
        else:
            saved = save_charts(self.out_dir, f"demo-{job.id}", outcome)
            result = dict(outcome.result)
            result["charts"] = saved  # where this machine keeps them, the main one (the timeline) first
            result.pop("chart", None)
            result.setdefault("wall_s", round(time.perf_counter() - started, 3))
            chart_path = next(iter(saved.values()), None)
            await asyncio.to_thread(self.engine.demos.demo_finished, job.id, result, chart_path)
        self._finished()


def make_backend(worker: str, redis_url: str, queue: str, timeout_s: float, warm: bool = True) -> Backend:
    if worker == "celery":
        return CeleryBackend(redis_url, queue, timeout_s)
    return LocalBackend(timeout_s, warm=warm)
