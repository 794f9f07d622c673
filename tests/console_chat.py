"""The real console app on a real Runtime, driven line by line from synchronous tests.

`Console(engine, community, user)` starts a Runtime (its bridge, deliverer and, when asked,
its scheduler and demo runner) on an event loop in a thread and attaches the console app to
it; `handle(line)` runs one line through `ConsoleApp.handle` and returns what it printed (its
answer, then the channel posts it caused). Nothing here copies the app's work."""

from __future__ import annotations

import asyncio
import io
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from bot.background.demo_runner import DemoJobRunner, LocalBackend
from bot.config import Settings
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, UserRef
from bot.core.wording import CONSOLE_OPERATOR
from bot.platforms.console import ConsoleApp, ConsoleOptions, Message
from bot.platforms.launch import serve
from bot.platforms.runtime import Runtime
from bot.wiring import build_runtime

T = TypeVar("T")


def _stop(loop: asyncio.AbstractEventLoop, runtime: Runtime, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    if loop.is_running():
        asyncio.run_coroutine_threadsafe(runtime.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
    loop.close()


class Console:
    def __init__(
        self,
        engine: StudyEngine,
        community: str = "local",
        user: str = CONSOLE_OPERATOR,
        schedule: bool = False,
        demos: Path | None = None,
    ) -> None:
        self.engine = engine
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="console-test-loop", daemon=True)
        self._thread.start()
        self.runtime = build_runtime(engine, ("console",), deliver_every_s=0.2)
        if demos is not None:
            self.runtime.demo_runner = DemoJobRunner(
                engine,
                LocalBackend(timeout_s=300),
                demos,
                on_progress=self.runtime.demo_progress,
                on_finished=self.runtime.wake,
                poll_s=0.2,
            )
        self.seen: list[Message] = []  # everything printed, in order (posts between lines too)
        self.app = ConsoleApp(self.runtime, ConsoleOptions(user=user, community=community), emit=self.seen.append)
        self._finalizer = weakref.finalize(self, _stop, self.loop, self.runtime, self._thread)
        self._run(self.runtime.start(schedule=schedule))

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=120)

    @property
    def user(self) -> UserRef:
        return self.app.user

    @property
    def channel(self) -> ChannelRef:
        return self.app.channel

    def handle(self, line: str) -> list[Message]:
        """One line through the app: what it printed, in order."""
        start = len(self.seen)
        self._run(self.app.handle(line))
        return self.seen[start:]

    def deliver(self) -> list[Message]:
        """One delivery pass of the Runtime's console deliverer: the posts it printed."""
        start = len(self.seen)
        self._run(self.runtime.deliver_now("console"))
        return self.seen[start:]

    def wait_for(self, found: Callable[[list[Message]], bool], timeout: float = 120.0) -> list[Message]:
        """Everything printed so far, once `found` holds of it (a demo answers on its own)."""
        deadline = time.monotonic() + timeout
        while not found(list(self.seen)):
            assert time.monotonic() < deadline, f"not printed within {timeout} s: {self.seen}"
            time.sleep(0.05)
        return list(self.seen)

    def close(self) -> None:
        self._finalizer()


def scripted(engine: StudyEngine, script: str, schedule: bool = True, **options: Any) -> str:
    """`studybot console`'s path, `launch.serve` with the console, reading `script` as its
    stdin until its end (or /quit); returns what it wrote to stdout."""
    out = io.StringIO()
    settings = Settings(_env_file=None, demo_out_dir=Path(tempfile.mkdtemp(prefix="console-demos-")))  # type: ignore[call-arg]
    chat = ConsoleOptions(stdin=io.StringIO(script), stdout=out, **options)
    asyncio.run(serve(settings, engine, ("console",), schedule=schedule, console=chat))
    return out.getvalue()
