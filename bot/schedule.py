"""The schedules: each community's daily round, its reveal, the weekly leaderboard and the
weekly FSRS fit (handed to `weekly_fit`, bot/fsrs_runs.py, which runs it beside the scheduler).

The database decides what happens, the scheduler only decides when to look, and it never
sends: each claim writes an outbox row in the same transaction, and the platforms'
deliverers (bot/delivery.py) post it; `on_claimed` wakes them. A round is
unique per community, channel and local date, a leaderboard post per community and ISO
week (both enforced by unique keys in the engine), so a restart, a second bot process or a
job run by hand never posts twice. `tick()` runs whatever is due now and is the only thing
the wake-ups call; at start it is the catch-up: rounds whose window ended are revealed,
today's round is posted (marked late) if its time passed today, and nothing older comes
back. The scheduler plans each community's next moments (bot.core.timing) in memory and
APScheduler 3 (imported only when `start()` is called) holds ONE date job, at the earliest
of them: when it fires, every community due then is claimed in one pass (one query for their
settings, one for due reveals) and their daily rounds are opened DAILY_BATCH at a time, each
batch one transaction (`open_dailies`), so 10,000 communities due at 09:00 cost one wake-up
and 50 transactions, not 10,000. Plans are rebuilt at start, after every /config change and by a periodic refresh
that reads only the communities whose settings' version moved since the last one (so it
notices changes made by another process) and every community's next close in one query
(rounds opened by hand). What a process serves is a `Scope` the store turns into SQL.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from bot.core import scoring, timing
from bot.core.community import CommunityConfig
from bot.core.engine import StudyEngine
from bot.core.errors import StoreUnavailable
from bot.core.scope import OnlyIds, Scheduled, Scope
from bot.core.values import AlreadyOpen, ChannelRef, CommunityRef, Notice, Posted, RevealCard

log = logging.getLogger(__name__)

JobKind = Literal["daily", "reveal", "leaderboard"]
JOB_KINDS: tuple[JobKind, ...] = ("daily", "reveal", "leaderboard")
REFRESH_SECONDS = 60
RETRY = timedelta(seconds=30)  # a moment already past (a job that failed) is retried this much later
WAKE_JOB = "wake"  # the one APScheduler date job: the earliest planned moment
NOTIFY_EVERY = 100  # in a long pass, the deliverers are woken after every this many claims
CLAIMED_LOOKBACK = timedelta(days=2)  # daily rounds read back to know today's are claimed
DAILY_BATCH = 200  # in a pass over many communities, daily rounds opened per unit of work


@dataclass(frozen=True)
class _DailyDue:
    """A daily round the pass will open (with the others of its batch)."""

    ref: CommunityRef
    channel: ChannelRef
    key: str  # "channel|local date", as `_done` keeps it
    late: bool


@dataclass(frozen=True)
class NextRuns:
    """A community's next scheduled moments (aware UTC); None when nothing is planned."""

    community: CommunityRef
    config: CommunityConfig
    daily: datetime | None
    reveal: datetime | None
    leaderboard: datetime | None

    def of(self, kind: JobKind) -> datetime | None:
        return {"daily": self.daily, "reveal": self.reveal, "leaderboard": self.leaderboard}[kind]

    def earliest(self) -> datetime | None:
        moments = [m for m in (self.daily, self.reveal, self.leaderboard) if m is not None]
        return min(moments) if moments else None


def plan_next(community: CommunityRef, config: CommunityConfig, now: datetime, next_close: datetime | None) -> NextRuns:
    """The next moments after `now`: a paused community or one without a channel gets no
    daily round and no leaderboard; an open round is always revealed when its window ends."""
    active = not config.paused and config.channel_id is not None
    return NextRuns(
        community=community,
        config=config,
        daily=timing.next_daily(now, config.daily_time, config.timezone) if active else None,
        reveal=next_close,
        leaderboard=timing.next_weekly(now, config.daily_time, config.timezone) if active else None,
    )


class StudyScheduler:
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
        self.engine = engine
        # hands a community's weekly FSRS fit over (bot.fsrs_runs.WeeklyFits); None: no fits
        self.weekly_fit = weekly_fit
        self.clock = clock or engine.now
        self.platforms = platforms
        self.community = community
        self.accepts = accepts
        self.on_claimed = on_claimed
        self.refresh_seconds = refresh_seconds
        self._scope_of = scope
        self._lock = threading.RLock()
        self._done: dict[tuple[CommunityRef, str], str] = {}  # (community, job) -> the key last known done
        self._known: dict[CommunityRef, Scheduled] = {}  # as last read
        self._seen_version: int | None = None  # the highest settings version read so far
        self._armed: dict[CommunityRef, NextRuns] = {}
        self._heap: list[tuple[datetime, int, CommunityRef]] = []  # (earliest, seq, community); stale ones skipped
        self._seq = itertools.count()
        self._wake_at: datetime | None = None  # the moment the wake job is armed for
        self._failed: set[CommunityRef] = set()  # tried again by the next refresh
        self._aps: Any = None  # the APScheduler BackgroundScheduler once started

    # ------------------------------------------------------------ what and when

    def now(self) -> datetime:
        return timing.as_utc(self.clock())

    def scope(self) -> Scope:
        """The communities this process serves, as the store's SQL reads them."""
        base = self._scope_of() if self._scope_of is not None else Scope()
        platforms = base.platforms
        if self.platforms is not None:
            platforms = self.platforms if platforms is None else tuple(p for p in platforms if p in self.platforms)
        narrow = base.narrow
        if self.community is not None and platforms is not None:
            narrow = (*narrow, *((p, OnlyIds((self.community,))) for p in platforms))
        return Scope(platforms, narrow)

    def serves(self, ref: CommunityRef) -> bool:
        return (
            (self.platforms is None or ref.platform in self.platforms)
            and (self.community is None or ref.community_id == self.community)
            and (self.accepts is None or self.accepts(ref))
        )

    def _keep(self, rows: list[Scheduled]) -> list[Scheduled]:
        """Rows read: note the highest version seen, remember and return those served."""
        if rows:
            top = max(row.version for row in rows)
            self._seen_version = top if self._seen_version is None else max(self._seen_version, top)
        kept = [row for row in rows if self.serves(row.ref)]
        for row in kept:
            self._known[row.ref] = row
        return kept

    def _read_all(self) -> list[Scheduled]:
        """Every served community, in one query."""
        if self._seen_version is None:
            self._seen_version = 0
        rows = self._keep(self.engine.scheduled(self.scope()))
        self._known = {row.ref: row for row in rows}
        return rows

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        return [(row.ref, row.config) for row in self._read_all()]

    def _config(self, ref: CommunityRef) -> CommunityConfig | None:
        """One community's settings, read by its key (None: gone, or not served here)."""
        if not self.serves(ref):
            return None
        config = self.engine.community(ref)
        if config is None:
            self._known.pop(ref, None)
            return None
        known = self._known.get(ref)
        self._known[ref] = Scheduled(ref, config, known.version if known else 0)
        return config

    def next_runs(self, ref: CommunityRef, config: CommunityConfig | None = None) -> NextRuns | None:
        config = config or self._config(ref)
        if config is None:
            return None
        return plan_next(ref, config, self.now(), self.engine.next_close(ref))

    def all_next_runs(self) -> list[NextRuns]:
        now = self.now()
        rows = self._read_all()
        closes = self.engine.next_closes(self.scope())
        return [plan_next(row.ref, row.config, now, closes.get(row.ref)) for row in rows]

    # ---------------------------------------------------------------- running

    def tick(self, only: CommunityRef | None = None) -> list[Posted]:
        """Claim everything due now (in one community, or in all this process serves) and
        return what was claimed; the deliverers post it. Safe to call at any time and from
        several processes: the database decides. The lock covers only database claims, never
        a platform's send, so an event loop waiting on it cannot deadlock."""
        with self._lock:
            if only is None:
                items = [(row.ref, row.config) for row in self._read_all()]
            else:
                config = self._config(only)
                items = [] if config is None else [(only, config)]
            posted = self._tick_many(items)
        if posted:
            self._claimed()
        return posted

    def _claimed(self) -> None:
        if self.on_claimed is not None:
            try:
                self.on_claimed()
            except Exception:
                log.exception("waking the deliverers failed; they look again on their own")

    def catch_up(self) -> list[Posted]:
        """At start: reveal rounds whose window ended while down, post today's round late if
        its time passed today, last week's leaderboard if it is still Monday. Nothing older."""
        posted = self.tick()
        if posted:
            log.info("caught up after start: %s post(s)", len(posted))
        return posted

    def _tick_many(self, items: list[tuple[CommunityRef, CommunityConfig]]) -> list[Posted]:
        """The jobs due now of these communities. For more than one, what is claimed already
        and the due reveals are read in one query each, not one per community."""
        due: dict[CommunityRef, list[int]] | None = None
        if len(items) > 1:
            now = self.now()
            scope = self.scope()
            due = {}
            for ref, round_id in self.engine.due_rounds(scope):
                due.setdefault(ref, []).append(round_id)
            weeks = {
                scoring.previous_week(scoring.iso_week(now, config.timezone)) for _, config in items if config.timezone
            }
            dailies, boards = self.engine.claimed(scope, now - CLAIMED_LOOKBACK, weeks)
            for ref, channel_id, day in dailies:
                self._done[(ref, "daily")] = max(self._done.get((ref, "daily"), ""), f"{channel_id}|{day}")
            for ref, week in boards:
                self._done[(ref, "leaderboard")] = max(self._done.get((ref, "leaderboard"), ""), week)
        posted: list[Posted] = []
        noticed = 0
        for start in range(0, len(items), DAILY_BATCH):
            batch: list[_DailyDue] | None = [] if len(items) > 1 else None
            for ref, config in items[start : start + DAILY_BATCH]:
                posted.extend(self._tick_one(ref, config, None if due is None else due.get(ref, []), batch))
            if batch:
                posted.extend(self._dailies(batch))
            if len(items) > 1 and len(posted) - noticed >= NOTIFY_EVERY:
                noticed = len(posted)
                self._claimed()  # let the deliverers start on what is claimed so far
        return posted

    def _tick_one(
        self,
        ref: CommunityRef,
        config: CommunityConfig,
        due: list[int] | None = None,
        dailies: list[_DailyDue] | None = None,
    ) -> list[Posted]:
        """The community's jobs due now; its daily round is opened at once, or, given
        `dailies`, added there to be opened with the others of the pass."""
        now = self.now()
        posted: list[Posted] = []
        try:
            posted.extend(self._reveal(ref, due))
            if config.paused or config.channel_id is None:
                return posted
            channel = ChannelRef(ref.platform, ref.community_id, config.channel_id)
            weekly = timing.weekly_due(now, config.daily_time, config.timezone)
            if weekly is not None and self._done.get((ref, "leaderboard")) != weekly.week:
                posted.extend(self._leaderboard(ref, channel, weekly.week))
            daily = timing.daily_due(now, config.daily_time, config.timezone)
            key = f"{config.channel_id}|{daily.local_date}" if daily else ""
            if daily is not None and self._done.get((ref, "daily")) != key:
                if dailies is None:
                    posted.extend(self._daily(ref, channel, key, late=daily.late))
                else:
                    dailies.append(_DailyDue(ref, channel, key, daily.late))
            if weekly is not None and self.weekly_fit is not None and self._done.get((ref, "fsrs")) != weekly.week:
                self.weekly_fit(ref, weekly.week)  # claimed and run beside the scheduler, never waited for
                self._done[(ref, "fsrs")] = weekly.week
        except Exception:  # one community's failure must not stop the others' jobs
            log.exception(
                "scheduled jobs of %s/%s failed; retrying at the next refresh", ref.platform, ref.community_id
            )
            self._failed.add(ref)
        else:
            self._failed.discard(ref)
        return posted

    def _reveal(self, ref: CommunityRef, due: list[int] | None = None) -> list[Posted]:
        """Close the community's rounds whose window ended (`due`: their ids, read already)."""
        if due is None:
            cards = self.engine.close_due(ref)
        else:
            cards = [card for round_id in due if isinstance(card := self.engine.close_round(round_id), RevealCard)]
        for card in cards:
            log.info("revealed round %s in %s/%s", card.round_id, ref.platform, ref.community_id)
        return list(cards)

    def _leaderboard(self, ref: CommunityRef, channel: ChannelRef, week: str) -> list[Posted]:
        card = self.engine.weekly_post(ref, week)
        self._done[(ref, "leaderboard")] = week
        if card is None:
            log.info("leaderboard %s of %s/%s was already posted", week, ref.platform, ref.community_id)
            return []
        log.info("claimed leaderboard %s in %s", week, channel)
        return [card]

    def _daily(self, ref: CommunityRef, channel: ChannelRef, key: str, late: bool) -> list[Posted]:
        card = self.engine.open_daily(channel, late=late)
        self._done[(ref, "daily")] = key
        if isinstance(card, AlreadyOpen):
            log.info("daily round of %s is already open (#%s)", channel, card.round_id)
            return []
        return [card]

    def _dailies(self, wanted: list[_DailyDue]) -> list[Posted]:
        """Open these daily rounds in one unit of work. If that fails for a reason other
        than the database being unavailable (which the refresh retries), each is opened on
        its own, so one community's failure is its own."""
        try:
            cards = self.engine.open_dailies([(daily.channel, daily.late) for daily in wanted])
        except StoreUnavailable:
            log.warning("the database is unavailable: %s daily rounds wait for the next refresh", len(wanted))
            self._failed.update(daily.ref for daily in wanted)
            return []
        except Exception:
            log.exception("opening %s daily rounds together failed; opening each on its own", len(wanted))
            return [card for daily in wanted for card in self._daily_alone(daily)]
        posted: list[Posted] = []
        for daily, card in zip(wanted, cards, strict=True):
            self._done[(daily.ref, "daily")] = daily.key
            if isinstance(card, AlreadyOpen):
                log.info("daily round of %s is already open (#%s)", daily.channel, card.round_id)
            else:
                posted.append(card)
        return posted

    def _daily_alone(self, daily: _DailyDue) -> list[Posted]:
        try:
            return self._daily(daily.ref, daily.channel, daily.key, late=daily.late)
        except Exception:
            log.exception("the daily round of %s failed; retrying at the next refresh", daily.channel)
            self._failed.add(daily.ref)
            return []

    def run_job(self, kind: JobKind, ref: CommunityRef) -> list[Posted | AlreadyOpen | Notice]:
        """A job run by hand (`studybot schedule run`): now, whatever the time of day, and
        idempotent like the scheduled run. Returns what was claimed, or why nothing was."""
        try:
            return self._run_job(kind, ref)
        finally:
            self._claimed()

    def _run_job(self, kind: JobKind, ref: CommunityRef) -> list[Posted | AlreadyOpen | Notice]:
        with self._lock:
            if kind == "reveal":
                revealed = self._reveal(ref)
                return list(revealed) or [Notice("No round's answer window has ended: nothing to reveal.")]
            config = self.engine.community(ref)
            if config is None:
                return [Notice(f"There is no community {ref.platform}/{ref.community_id} yet.")]
            if config.channel_id is None:
                return [Notice("No channel is set for this community: set one with /config channel ID.")]
            channel = ChannelRef(ref.platform, ref.community_id, config.channel_id)
            if kind == "daily":
                return [self.engine.open_daily(channel)]
            if kind == "leaderboard":
                week = scoring.previous_week(scoring.iso_week(self.now(), config.timezone))
                done = self._leaderboard(ref, channel, week)
                return list(done) or [Notice(f"The leaderboard of {week} was already posted.")]
        raise ValueError(f"unknown job {kind!r}; jobs: {', '.join(JOB_KINDS)}")

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
                    changed = self._keep(self.engine.scheduled(self.scope(), after_version=self._seen_version))
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
                closes = self.engine.next_closes(self.scope())
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
            rows = self._keep(self.engine.scheduled(self.scope(), ids=ids))
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
            closes = {items[0][0]: close} if (close := self.engine.next_close(items[0][0])) else {}
        else:
            closes = self.engine.next_closes(self.scope())
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
                    self._plan(only, config, self.engine.next_close(only))
            else:
                rows = self._read_all() if reread else list(self._known.values())
                closes = self.engine.next_closes(self.scope())
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


def job_name(kind: JobKind, ref: CommunityRef) -> str:
    return f"{kind}:{ref.platform}:{ref.community_id}"


def describe(runs: NextRuns, now: datetime) -> list[str]:
    """Lines for `studybot schedule show`: settings, then each next run in local time and UTC."""
    config = runs.config
    zone = config.timezone

    def when(moment: datetime | None) -> str:
        if moment is None:
            return "-"
        local = moment.astimezone(ZoneInfo(zone))
        return f"{local:%a %Y-%m-%d %H:%M %Z} ({moment:%Y-%m-%d %H:%M} UTC)"

    state = "paused" if config.paused else ("no channel set" if config.channel_id is None else "active")
    lines = [
        (
            f"{runs.community.platform}/{runs.community.community_id}: {state}; daily_time {config.daily_time} "
            f"{zone}, window {config.window_hours} h, channel {config.channel_id or '(not set)'}, "
            f"topics {','.join(config.topics) or 'all'}"
        ),
        f"  next daily round: {when(runs.daily)}",
        f"  next reveal:      {when(runs.reveal)}",
    ]
    board = ""
    if runs.leaderboard is not None:
        board = f" [week {scoring.previous_week(scoring.iso_week(runs.leaderboard, zone))}]"
    lines.append(f"  next leaderboard: {when(runs.leaderboard)}{board}")
    if runs.reveal is not None and runs.reveal <= now:
        lines.append("  (a round's window has ended: it is revealed at the next start or tick)")
    return lines
