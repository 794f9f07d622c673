"""The one way a platform calls the engine: off the event loop, in a bounded thread pool,
with errors turned into what the user is told.

The engine is synchronous (SQLAlchemy); Discord and Slack are asyncio. `Bridge.call` runs
an engine method in a worker thread so the event loop keeps serving other users, and turns
a `StudyBotError` into its own sentence and anything else into an apology with a short
incident id, logged with its traceback under that id. The console uses the same `guarded`
directly, so every platform handles errors in this one place."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import queue
import threading
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from bot.core.errors import StudyBotError
from bot.core.values import Problem
from bot.core.wording import BUG

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


def report_incident(what: str) -> str:
    """Log the exception being handled, with its traceback, under a new short incident id;
    return the id (the user is told wording.BUG with it). Call it inside an `except`."""
    incident = uuid.uuid4().hex[:8]
    log.exception("%s failed (incident %s)", what, incident)
    return incident


def guarded(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | Problem:
    """`call(*args, **kwargs)`, or the Problem card a user sees when it fails."""
    try:
        return call(*args, **kwargs)
    except StudyBotError as exc:
        return Problem(exc.message)
    # Broad by design: any other error is a bug, which the user sees as a Problem card while
    # report_incident logs its traceback under an id the user can quote.
    except Exception:  # noqa: BLE001
        incident = report_incident(str(getattr(call, "__qualname__", call)))
        return Problem(BUG.format(incident=incident), incident=incident)


class _Inbox:
    """Finished calls waiting for their event loop: many results, one wake-up."""

    __slots__ = ("loop", "done", "woken")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.done: deque[tuple[asyncio.Future[Any], bool, Any]] = deque()
        self.woken = False

    def put(self, future: asyncio.Future[Any], ok: bool, value: Any) -> None:
        """From a worker thread: hand back one outcome; wake the loop unless a wake-up is pending."""
        self.done.append((future, ok, value))
        if not self.woken:
            self.woken = True
            try:
                self.loop.call_soon_threadsafe(self.drain)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                self.done.clear()

    def drain(self) -> None:
        """On the loop: settle every outcome handed back so far."""
        self.woken = False  # cleared first: an outcome put from now on wakes the loop again
        done = self.done
        while done:
            future, ok, value = done.popleft()
            if future.done():  # its caller was cancelled
                continue
            if ok:
                future.set_result(value)
            else:
                if isinstance(value, StopIteration):  # a Future refuses it (TypeError): wrapped
                    wrapped = RuntimeError(f"the engine call raised StopIteration: {value!r}")
                    wrapped.__cause__ = value
                    value = wrapped
                future.set_exception(value)


_Job = tuple[Callable[[], Any], "asyncio.Future[Any]", _Inbox]


class Bridge:
    """Engine calls from async code: at most `threads` at once, the rest wait their turn.

    Its own small pool rather than run_in_executor: a call is one queue put, and results
    finished while the loop is busy are settled together on one wake-up (a burst of clicks
    costs far fewer thread switches and self-pipe writes)."""

    def __init__(self, threads: int = 8) -> None:
        self.threads = threads
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = 0
        self._waiting = 0  # jobs put and not yet taken by a worker
        self._lock = threading.Lock()
        self._closed = False
        self._inboxes: dict[asyncio.AbstractEventLoop, _Inbox] = {}

    async def call(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | Problem:
        return await self._submit(functools.partial(guarded, call, *args, **kwargs))

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like `call`, but errors propagate (for the deliverer and the scheduler, which
        log and retry rather than tell a user)."""
        return await self._submit(functools.partial(call, *args, **kwargs))

    def _submit(self, job: Callable[[], T]) -> asyncio.Future[T]:
        if self._closed:
            raise RuntimeError("the bridge is closed")
        loop = asyncio.get_running_loop()
        inbox = self._inboxes.get(loop)
        if inbox is None:
            for gone in [old for old in self._inboxes if old.is_closed()]:
                del self._inboxes[gone]
            inbox = self._inboxes[loop] = _Inbox(loop)
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            # a worker for every waiting job that no idle one will take, up to `threads`
            self._waiting += 1
            start = self._waiting > self._idle and len(self._workers) < self.threads
            if start:
                self._idle += 1  # counted idle until it takes its first job
                worker = threading.Thread(target=self._work, name=f"engine_{len(self._workers)}", daemon=True)
                self._workers.append(worker)
        self._jobs.put((job, future, inbox))
        if start:
            worker.start()
        return future

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            item = jobs.get()
            with self._lock:
                self._idle -= 1
                if item is not None:
                    self._waiting -= 1
            if item is None:
                return
            job, future, inbox = item
            if not future.done():  # not cancelled while it waited
                try:
                    value = job()
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                    inbox.put(future, False, exc)
                else:
                    inbox.put(future, True, value)
            del item, job, future, inbox
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """Stop the workers once they finish what they run; calls still queued are cancelled."""
        self._closed = True
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                with self._lock:
                    self._waiting -= 1
                _, future, inbox = item
                with contextlib.suppress(RuntimeError):  # its loop is gone
                    inbox.loop.call_soon_threadsafe(future.cancel)
        for _ in self._workers:
            self._jobs.put(None)
