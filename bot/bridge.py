"""The one way a platform calls the engine: off the event loop, in a bounded thread pool,
with errors turned into what the user is told.

The engine is synchronous (SQLAlchemy); Discord and Slack are asyncio. `Bridge.call` runs
an engine method in a worker thread so the event loop keeps serving other users, and turns
a `StudyBotError` into its own sentence and anything else into an apology with a short
incident id, logged with its traceback under that id. The console uses the same `guarded`
directly, so every platform handles errors in this one place."""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

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
    except Exception:  # a bug: logged whole under an id the user can quote
        incident = report_incident(str(getattr(call, "__qualname__", call)))
        return Problem(BUG.format(incident=incident), incident=incident)


class Bridge:
    """Engine calls from async code: at most `threads` at once, the rest wait their turn."""

    def __init__(self, threads: int = 8) -> None:
        self.threads = threads
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="engine")

    async def call(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | Problem:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(guarded, call, *args, **kwargs))

    async def run(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Like `call`, but errors propagate (for the deliverer and the scheduler, which
        log and retry rather than tell a user)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(call, *args, **kwargs))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
