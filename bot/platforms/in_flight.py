"""The work a platform adapter is doing for the events it has taken: tracked so that a stop
can let it finish and a test can wait for it (instead of sleeping)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


class InFlight:
    """The tasks inside `track()` now; `settled()` returns once all of them have ended."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    @asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def settled(self) -> None:
        while pending := self._tasks - {asyncio.current_task()}:
            await asyncio.wait(pending)
