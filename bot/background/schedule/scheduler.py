"""StudyScheduler: when to look. It plans each community's next moments in memory and keeps
ONE APScheduler 3 date job (imported only when `start()` is called) at the earliest of them;
when it fires, every community due then is claimed in one pass (bot/background/schedule/claims.py). A
periodic refresh notices settings changed elsewhere and rounds opened by hand, and retries
what failed."""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bot.core.engine import StudyEngine
from bot.core.rules.community import CommunityConfig
from bot.core.scope import Scope
from bot.core.values import CommunityRef, Posted

from .claims import ScheduleClaims
from .plans import JOB_KINDS, NextRuns, job_name, plan_next

log = logging.getLogger(__name__)

REFRESH_SECONDS = 60
RETRY = timedelta(seconds=30)  # a moment already past (a job that failed) is retried this much later
WAKE_JOB = "wake"  # the one APScheduler date job: the earliest planned moment


class StudyScheduler(ScheduleClaims):
    """Runs the scheduled jobs of the communities it serves; what they claim goes to the
    outbox, and `on_claimed` (when given) tells the deliverers there is something to send.

    `platforms` and `community` narrow which communities this process serves (a Discord and
    Slack process serves both of theirs; the console its own community), `scope`, when
    given, further in SQL (a Discord shard process: its shards' guilds), and `accepts` in
    Python (checked on every row read). `clock` defaults to the engine's, so tests move one
    fake clock for both."""

    def __init__(
        self,
        engine: StudyEngine,
        clock: Callable[[], datetime] | None = None,
        platforms: tuple[str, ...] | None = None,
        community: str | None = None,
        refresh_seconds: int = REFRESH_SECONDS,
        on_claimed: Callable[[], None] | None = None,
        accepts: Callable[[CommunityRef], bool] | None = None,
        scope: Callable[[], Scope] | None = None,
        weekly_fit: Callable[[CommunityRef, str], None] | None = None,
    ) -> None:
        super().__init__(engine, clock, platforms, community, on_claimed, accepts, scope, weekly_fit)
        self.refresh_seconds = refresh_seconds
        self._armed: dict[CommunityRef, NextRuns] = {}
        self._heap: list[tuple[datetime, int, CommunityRef]] = []  # (earliest, seq, community); stale ones skipped
        self._seq = itertools.count()
        self._wake_at: datetime | None = None  # the moment the wake job is armed for
        self._aps: Any = None  # the APScheduler BackgroundScheduler once started

    # --------------------------------------------------------- the wake-ups

    def start(self, paused: bool = False) -> None:
        """Catch up, then plan every community and arm the wake job in a background thread
        (`paused`: armed but never fired, for tests that inspect the plan)."""
        from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
        from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

        self.catch_up()
        self._aps = BackgroundScheduler(
            timezone="UTC",
            executors={"default": ThreadPoolExecutor(max_workers=1)},  # one job at a time
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        )
        self._aps.start(paused=paused)
        self._arm_all(reread=False)
        if self.refresh_seconds:
            self._aps.add_job(
                self.refresh, "interval", seconds=self.refresh_seconds, id="refresh", replace_existing=True
            )

    def shutdown(self) -> None:
        """Stop firing jobs. APScheduler's own shutdown marks the scheduler stopped before it
        waits for the job stores, so a date job it is handing out at that moment is then looked
        for among the pending jobs and not found (JobLookupError in its thread). Pausing first
        and clearing the jobs under its lock lets that hand-out finish while still running."""
        aps, self._aps = self._aps, None
        if aps is None:
            return
        aps.pause()
        aps.remove_all_jobs()  # waits for a hand-out in progress (the job stores' lock)
        aps.shutdown(wait=False)

    def rebuild(self, only: CommunityRef | None = None) -> list[Posted]:
        """After a /config change: run what the new settings make due now, then re-plan."""
        posted = self.tick(only)
        self._arm_all(only)
        return posted

    def refresh(self) -> None:
        """Periodically: notice settings changed elsewhere (another process, the CLI; read
        by version) and rounds opened by hand (every next close, one query), catch up on
        those and on jobs that failed (the database was busy), and re-plan what moved."""
        try:
            with self._lock:
                if self._seen_version is None:
                    changed = self._read_all()
                else:
                    changed = self._keep(self.engine.schedule.scheduled(self.scope(), after_version=self._seen_version))
                stale = {
                    row.ref
                    for row in changed
                    if (armed := self._armed.get(row.ref)) is None or armed.config != row.config
                }
                retry = set(self._failed)
            again = sorted(stale | retry, key=lambda r: (r.platform, r.community_id))
            if again:  # in one pass, as a wake-up would (thousands, after the database was busy)
                with self._lock:
                    posted = self._tick_many(self._fresh(again))
                if posted:
                    self._claimed()
            with self._lock:
                closes = self.engine.schedule.next_closes(self.scope())
                moved = stale | retry | {row.ref for row in changed}
                moved |= {ref for ref, runs in self._armed.items() if runs.reveal != closes.get(ref)}
                for ref in moved:
                    known = self._known.get(ref)
                    if known is None or not self.serves(ref):
                        self._unplan(ref)
                    else:
                        self._plan(ref, known.config, closes.get(ref))
                self._arm_timer()
        except Exception:
            log.exception("refreshing the schedule failed")

    def _wake(self, ref: CommunityRef) -> None:
        """One community's jobs now, then its plan (what the wake job does for each due)."""
        try:
            self.tick(ref)
        finally:
            self._arm_all(ref)

    def _wake_due(self) -> None:
        """The wake job: every community whose planned moment has come, in one pass."""
        posted: list[Posted] = []
        try:
            with self._lock:
                now = self.now()
                due: list[CommunityRef] = []
                while self._heap and self._heap[0][0] <= now:
                    moment, _, ref = heapq.heappop(self._heap)
                    runs = self._armed.get(ref)
                    if runs is not None and runs.earliest() == moment and ref not in due:
                        due.append(ref)
                if due:
                    posted = self._wake_many(due)
        except Exception:
            log.exception("the scheduled wake-up failed; the refresh retries")
        finally:
            with self._lock:
                self._arm_timer()
        if posted:
            self._claimed()

    def _fresh(self, refs: list[CommunityRef]) -> list[tuple[CommunityRef, CommunityConfig]]:
        """These communities' settings as they are now (one read by key, several in one
        query); those gone or no longer served are unplanned."""
        if len(refs) == 1:
            config = self._config(refs[0])
            items = [] if config is None else [(refs[0], config)]
        else:
            ids = [known.config.id for ref in refs if (known := self._known.get(ref)) is not None]
            rows = self._keep(self.engine.schedule.scheduled(self.scope(), ids=ids))
            wanted = set(refs)
            items = [(row.ref, row.config) for row in rows if row.ref in wanted]
        found = {ref for ref, _ in items}
        for gone in [ref for ref in refs if ref not in found]:
            self._unplan(gone)
        return items

    def _wake_many(self, refs: list[CommunityRef]) -> list[Posted]:
        items = self._fresh(refs)
        posted = self._tick_many(items)
        if len(items) == 1:
            closes = {items[0][0]: close} if (close := self.engine.rounds.next_close(items[0][0])) else {}
        else:
            closes = self.engine.schedule.next_closes(self.scope())
        for ref, config in items:
            self._plan(ref, self._known[ref].config if ref in self._known else config, closes.get(ref))
        return posted

    def _arm_all(self, only: CommunityRef | None = None, reread: bool = True) -> None:
        """Re-plan one community (read by key) or all (one query each for settings and
        closes; `reread=False`: the settings just read by the catch-up), then arm the wake job."""
        with self._lock:
            if only is not None:
                config = self._config(only)
                if config is None:
                    self._unplan(only)
                else:
                    self._plan(only, config, self.engine.rounds.next_close(only))
            else:
                rows = self._read_all() if reread else list(self._known.values())
                closes = self.engine.schedule.next_closes(self.scope())
                for row in rows:
                    self._plan(row.ref, row.config, closes.get(row.ref))
                known = {row.ref for row in rows}
                for gone in [ref for ref in self._armed if ref not in known]:
                    self._unplan(gone)
                self._heap = [entry for entry in self._heap if self._current(entry)]
                heapq.heapify(self._heap)
            self._arm_timer()

    def _plan(self, ref: CommunityRef, config: CommunityConfig, close: datetime | None) -> None:
        runs = plan_next(ref, config, self.now(), close)
        self._armed[ref] = runs
        moment = runs.earliest()
        if moment is not None:
            heapq.heappush(self._heap, (moment, next(self._seq), ref))
            log.debug("planned %s/%s at %s", ref.platform, ref.community_id, moment)

    def _unplan(self, ref: CommunityRef) -> None:
        self._armed.pop(ref, None)
        self._known.pop(ref, None)

    def _current(self, entry: tuple[datetime, int, CommunityRef]) -> bool:
        runs = self._armed.get(entry[2])
        return runs is not None and runs.earliest() == entry[0]

    def _arm_timer(self) -> None:
        """Arm the wake job at the earliest planned moment (one already past: RETRY later)."""
        while self._heap and not self._current(self._heap[0]):
            heapq.heappop(self._heap)
        if len(self._heap) > 4 * len(self._armed) + 64:  # stale entries: rebuild
            self._heap = [entry for entry in self._heap if self._current(entry)]
            heapq.heapify(self._heap)
        aps = self._aps  # None once shut down, maybe while a wake-up re-arms
        if aps is None:
            return
        if not self._heap:
            self._wake_at = None
            remove_job(aps, WAKE_JOB)
            return
        moment = self._heap[0][0]
        if moment != self._wake_at or aps.get_job(WAKE_JOB) is None:
            now = self.now()
            run_date = max(moment, now + RETRY) if moment <= now else moment
            aps.add_job(self._wake_due, "date", run_date=run_date, id=WAKE_JOB, name=WAKE_JOB, replace_existing=True)
            self._wake_at = moment
            log.debug("wake-up armed at %s", run_date)

    def armed_jobs(self) -> dict[str, datetime]:
        """The planned moment of each community's jobs while started (for tests and logs),
        named as `job_name` says; APScheduler itself holds one wake job at the earliest."""
        if self._aps is None:
            return {}
        with self._lock:
            return {
                job_name(kind, ref): moment
                for ref, runs in self._armed.items()
                for kind in JOB_KINDS
                if (moment := runs.of(kind)) is not None
            }


def remove_job(aps: Any, job_id: str) -> None:
    """Remove an APScheduler job that may be gone already: a date job is removed by APScheduler's
    thread once handed out (it may be the very wake job now re-arming itself), which can
    happen between a look-up and the removal, and a stopped scheduler finds none."""
    from apscheduler.jobstores.base import JobLookupError  # type: ignore[import-untyped]

    try:
        aps.remove_job(job_id)
    except JobLookupError:
        log.debug("no job %s to remove (never armed, or gone already)", job_id)
