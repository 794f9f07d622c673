"""What every chat platform running in one process shares: one engine, one bridge into it,
one scheduler for all their communities, one demo-job runner, and a deliverer per platform on
the event loop.

An adapter (Discord, Slack, the console) builds its client, registers its `send` (render a posted card,
send it, return the platform's message reference), and turns each event into one
`runtime.call(engine.method, ...)`. `studybot run all` starts Discord and Slack on one loop
with one Runtime, so a community's round is claimed once and posted by its own platform."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from bot.background.bridge import Bridge
from bot.background.delivery import AsyncSend, Deliverer, wake_or_timeout
from bot.background.demo_runner import DemoJobRunner
from bot.background.schedule import StudyScheduler
from bot.core.engine import StudyEngine
from bot.core.scope import OnlyIds, Scope, ShardsOf
from bot.core.values import (
    CommunityRef,
    ConfigCard,
    DemoProgressCard,
    DemoQueued,
    Problem,
    QuestionCard,
    SuggestionDecided,
)
from bot.store.database import Database

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")


class Runtime:
    """What the platforms of one process share, built by the composition root
    (bot/wiring.py build_runtime): the engine, the bridge into it, the scheduler, the demo-job
    runner (None: demos are not run here) and the database (the Slack installation store's).
    The Runtime connects their callbacks to itself: a claimed round wakes the deliverers, the
    scheduler asks which communities this process serves, a finished demo wakes them too."""

    def __init__(
        self,
        engine: StudyEngine,
        platforms: tuple[str, ...],
        bridge: Bridge,
        scheduler: StudyScheduler,
        demo_runner: DemoJobRunner | None = None,
        database: Database | None = None,
        deliver_every_s: float = 5.0,
    ) -> None:
        self.engine = engine
        self.platforms = platforms
        self.bridge = bridge
        self.deliver_every_s = deliver_every_s
        self.database = database
        self.scheduler = scheduler
        scheduler.report_to(on_claimed=self.wake, accepts=self.serves, scope=self.scope)
        self.demo_runner = demo_runner
        if demo_runner is not None:
            demo_runner.on_progress = self.demo_progress
            demo_runner.on_finished = self.wake
        self.deliverers: dict[str, Deliverer] = {}
        self._senders: dict[str, AsyncSend] = {}
        self._serves: dict[str, Callable[[str], bool]] = {}
        self._progress: dict[str, Callable[[DemoProgressCard], Awaitable[None]]] = {}
        self._wakes: dict[str, asyncio.Event] = {}
        self._passes: dict[str, asyncio.Lock] = {}  # one delivery pass per platform at a time
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.scheduling = False

    def add_sender(self, platform: str, send: AsyncSend, serves: Callable[[str], bool] | None = None) -> None:
        """The platform's way of posting a card in a channel (returns its message reference).
        `serves` (a community id -> bool), when given, narrows the communities of that platform
        this process schedules and delivers for (a Discord shard's guilds)."""
        self._senders[platform] = send
        if serves is not None:
            self._serves[platform] = serves
        self.deliverers[platform] = Deliverer(self.engine, platform, serves=serves)

    def serves(self, community: CommunityRef) -> bool:
        """Whether this process schedules that community's rounds (the scheduler asks)."""
        accepts = self._serves.get(community.platform)
        return accepts is None or accepts(community.community_id)

    def scope(self) -> Scope:
        """What this process schedules, as SQL reads it: its platforms, each narrowed where
        its adapter's `serves` is a Narrowing (a Discord shard set, the console's community)."""
        narrow = tuple((p, rule) for p, rule in self._serves.items() if isinstance(rule, ShardsOf | OnlyIds))
        return Scope(self.platforms, narrow)

    def add_progress(self, platform: str, show: Callable[[DemoProgressCard], Awaitable[None]]) -> None:
        """The platform's way of showing a running demo's progress (edit the queued message)."""
        self._progress[platform] = show

    async def demo_progress(self, card: DemoProgressCard) -> None:
        show = self._progress.get(card.channel.platform)
        if show is None:
            return
        try:
            await show(card)
        except Exception:  # progress is a courtesy: the result is still posted through the outbox
            log.warning("showing progress of demo %s failed", card.job_id, exc_info=True)

    async def start(self, schedule: bool = True) -> None:
        """Start a deliverer task per platform, then the scheduler (its catch-up first)."""
        self._loop = asyncio.get_running_loop()
        for platform in self._senders:
            wake = self._wakes.setdefault(platform, asyncio.Event())
            task = asyncio.create_task(self._deliver_forever(platform, wake), name=f"deliver-{platform}")
            self._tasks.append(task)
        if self.demo_runner is not None:
            if self.demo_runner.serves is None:  # a shard process runs its own guilds' demos
                self.demo_runner.serves = self.serves
            await self.demo_runner.start()
            self._tasks.append(asyncio.create_task(self.demo_runner.run_forever(), name="demo-jobs"))
        if schedule:
            await self.bridge.run(self.scheduler.start)
            self.scheduling = True
        self.wake()

    def wake(self) -> None:
        """Tell the deliverers there is something to send (safe from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for event in self._wakes.values():
            loop.call_soon_threadsafe(event.set)

    async def call(self, method: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | Problem:
        """One engine call for one event, off the loop, errors turned into a Problem card.
        A call that opened a round or changed settings wakes the deliverers and re-arms the
        scheduler for that community."""
        result = await self.bridge.call(method, *args, **kwargs)
        if (isinstance(result, QuestionCard) and result.kind == "daily") or isinstance(result, SuggestionDecided):
            self.wake()
        if isinstance(result, DemoQueued) and self.demo_runner is not None:
            self.demo_runner.wake()
        if isinstance(result, ConfigCard) and result.changed and args and isinstance(args[0], CommunityRef):
            await self.rebuild(args[0])
        return result

    async def rebuild(self, community: CommunityRef) -> None:
        if not self.scheduling:
            return
        try:
            await self.bridge.run(self.scheduler.rebuild, community)
        except Exception:
            log.exception("re-arming the schedule of %s failed; the periodic refresh retries", community)

    async def deliver_now(self, platform: str) -> int:
        """One delivery pass at once, after any pass in progress (so what was due when it is
        called has been sent, or given its retry, when it returns): the console after each
        line, tests."""
        lock = self._passes.setdefault(platform, asyncio.Lock())
        async with lock:
            return await self.deliverers[platform].deliver_due_async(self._senders[platform], self.bridge.run)

    async def _deliver_forever(self, platform: str, wake: asyncio.Event) -> None:
        """Deliver until cancelled: every `deliver_every_s`, at once when woken, and again at
        once after a pass that sent a full batch (10,000 rounds due at 09:00 are 500 passes)."""
        while True:
            sent = 0
            try:
                sent = await self.deliver_now(platform)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("delivering %s posts failed; trying again shortly", platform)
            if sent >= self.deliverers[platform].batch:
                continue
            await wake_or_timeout(wake, self.deliver_every_s)
            wake.clear()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=10)
            for task in stuck:  # a task that ignores cancellation must not hold the process
                log.error("task %s did not stop within 10 s of being cancelled", task.get_name())
        self._tasks.clear()
        if self.scheduling:
            self.scheduler.shutdown()
            self.scheduling = False
        self.bridge.close()
