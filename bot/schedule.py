"""The schedules: each community's daily round, its reveal and the weekly leaderboard.

The database decides what happens, the scheduler only decides when to look, and it never
sends: each claim writes an outbox row in the same transaction, and the platforms'
deliverers (bot/delivery.py) post it; `on_claimed` wakes them. A round is
unique per community, channel and local date, a leaderboard post per community and ISO
week (both enforced by unique keys in the engine), so a restart, a second bot process or a
job run by hand never posts twice. `tick()` runs whatever is due now and is the only thing
the wake-ups call; at start it is the catch-up: rounds whose window ended are revealed,
today's round is posted (marked late) if its time passed today, and nothing older comes
back. APScheduler 3 (imported only when `start()` is called) holds one date job per
community and kind at the next moment bot.core.timing computes; jobs are rebuilt at start,
after every /config change and by a periodic refresh that also notices changes made by
another process.
"""

from __future__ import annotations

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
from bot.core.values import AlreadyOpen, ChannelRef, CommunityRef, Notice, Posted

log = logging.getLogger(__name__)

JobKind = Literal["daily", "reveal", "leaderboard"]
JOB_KINDS: tuple[JobKind, ...] = ("daily", "reveal", "leaderboard")
REFRESH_SECONDS = 60
RETRY = timedelta(seconds=30)  # a moment already past (a job that failed) is retried this much later


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
    Slack process serves both of theirs; the console its own community), and `accepts`, when
    given, further (a Discord shard process serves only its shards' guilds). `clock` defaults
    to the engine's, so tests move one fake clock for both."""

    def __init__(
        self,
        engine: StudyEngine,
        clock: Callable[[], datetime] | None = None,
        platforms: tuple[str, ...] | None = None,
        community: str | None = None,
        refresh_seconds: int = REFRESH_SECONDS,
        on_claimed: Callable[[], None] | None = None,
        accepts: Callable[[CommunityRef], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock or engine.now
        self.platforms = platforms
        self.community = community
        self.accepts = accepts
        self.on_claimed = on_claimed
        self.refresh_seconds = refresh_seconds
        self._lock = threading.RLock()
        self._done: set[tuple[CommunityRef, str, str]] = set()  # (community, job, key) known to be done
        self._armed: dict[CommunityRef, NextRuns] = {}
        self._failed: set[CommunityRef] = set()  # tried again by the next refresh
        self._aps: Any = None  # the APScheduler BackgroundScheduler once started

    # ------------------------------------------------------------ what and when

    def now(self) -> datetime:
        return timing.as_utc(self.clock())

    def serves(self, ref: CommunityRef) -> bool:
        return (
            (self.platforms is None or ref.platform in self.platforms)
            and (self.community is None or ref.community_id == self.community)
            and (self.accepts is None or self.accepts(ref))
        )

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        return [(ref, config) for ref, config in self.engine.communities() if self.serves(ref)]

    def _config(self, ref: CommunityRef) -> CommunityConfig | None:
        return next((config for r, config in self.communities() if r == ref), None)

    def next_runs(self, ref: CommunityRef, config: CommunityConfig | None = None) -> NextRuns | None:
        config = config or self._config(ref)
        if config is None:
            return None
        return plan_next(ref, config, self.now(), self.engine.next_close(ref))

    def all_next_runs(self) -> list[NextRuns]:
        now = self.now()
        return [plan_next(ref, config, now, self.engine.next_close(ref)) for ref, config in self.communities()]

    # ---------------------------------------------------------------- running

    def tick(self, only: CommunityRef | None = None) -> list[Posted]:
        """Claim everything due now (in one community, or in all this process serves) and
        return what was claimed; the deliverers post it. Safe to call at any time and from
        several processes: the database decides. The lock covers only database claims, never
        a platform's send, so an event loop waiting on it cannot deadlock."""
        posted: list[Posted] = []
        with self._lock:
            for ref, config in self.communities():
                if only is None or ref == only:
                    posted.extend(self._tick_one(ref, config))
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

    def _tick_one(self, ref: CommunityRef, config: CommunityConfig) -> list[Posted]:
        now = self.now()
        posted: list[Posted] = []
        try:
            posted.extend(self._reveal(ref))
            if config.paused or config.channel_id is None:
                return posted
            channel = ChannelRef(ref.platform, ref.community_id, config.channel_id)
            weekly = timing.weekly_due(now, config.daily_time, config.timezone)
            if weekly is not None and (ref, "leaderboard", weekly.week) not in self._done:
                posted.extend(self._leaderboard(ref, channel, weekly.week))
            daily = timing.daily_due(now, config.daily_time, config.timezone)
            key = f"{config.channel_id}|{daily.local_date}" if daily else ""
            if daily is not None and (ref, "daily", key) not in self._done:
                posted.extend(self._daily(ref, channel, key, late=daily.late))
        except Exception:  # one community's failure must not stop the others' jobs
            log.exception(
                "scheduled jobs of %s/%s failed; retrying at the next refresh", ref.platform, ref.community_id
            )
            self._failed.add(ref)
        else:
            self._failed.discard(ref)
        return posted

    def _reveal(self, ref: CommunityRef) -> list[Posted]:
        cards = self.engine.close_due(ref)
        for card in cards:
            log.info("revealed round %s in %s/%s", card.round_id, ref.platform, ref.community_id)
        return list(cards)

    def _leaderboard(self, ref: CommunityRef, channel: ChannelRef, week: str) -> list[Posted]:
        card = self.engine.weekly_post(ref, week)
        self._done.add((ref, "leaderboard", week))
        if card is None:
            log.info("leaderboard %s of %s/%s was already posted", week, ref.platform, ref.community_id)
            return []
        log.info("claimed leaderboard %s in %s", week, channel)
        return [card]

    def _daily(self, ref: CommunityRef, channel: ChannelRef, key: str, late: bool) -> list[Posted]:
        card = self.engine.open_daily(channel, late=late)
        if isinstance(card, AlreadyOpen):
            self._done.add((ref, "daily", key))
            log.info("daily round of %s is already open (#%s)", channel, card.round_id)
            return []
        self._done.add((ref, "daily", key))
        return [card]

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
            config = next((c for r, c in self.engine.communities() if r == ref), None)
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
        """Catch up, then arm APScheduler's jobs in a background thread (`paused`: armed but
        never fired, for tests that inspect the jobs)."""
        from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
        from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

        self.catch_up()
        self._aps = BackgroundScheduler(
            timezone="UTC",
            executors={"default": ThreadPoolExecutor(max_workers=1)},  # one job at a time
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        )
        self._aps.start(paused=paused)
        self._arm_all()
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
        """After a /config change: run what the new settings make due now, then re-arm."""
        posted = self.tick(only)
        self._arm_all(only)
        return posted

    def refresh(self) -> None:
        """Periodically: notice settings changed elsewhere (another process, the CLI) and
        rounds opened by hand, catch up on those and on jobs that failed (the database was
        busy), and re-arm what moved."""
        try:
            for ref, config in self.communities():
                armed = self._armed.get(ref)
                if armed is None or armed.config != config or ref in self._failed:
                    self.tick(ref)
            self._arm_all()
        except Exception:
            log.exception("refreshing the schedule failed")

    def _wake(self, ref: CommunityRef) -> None:
        try:
            self.tick(ref)
        finally:
            self._arm_all(ref)

    def _arm_all(self, only: CommunityRef | None = None) -> None:
        with self._lock:
            current = self.communities()
            for ref, config in current:
                if only is None or ref == only:
                    self._arm(ref, config)
            if only is None:
                known = {ref for ref, _ in current}
                for gone in [ref for ref in self._armed if ref not in known]:
                    self._disarm(gone)

    def _arm(self, ref: CommunityRef, config: CommunityConfig) -> None:
        runs = self.next_runs(ref, config)
        if runs is None:
            return
        previous = self._armed.get(ref)
        self._armed[ref] = runs
        aps = self._aps  # None once shut down, maybe while a job re-arms
        if aps is None:
            return
        for kind in JOB_KINDS:
            moment = runs.of(kind)
            job_id = job_name(kind, ref)
            if moment is None:
                remove_job(aps, job_id)
            elif previous is None or previous.of(kind) != moment or aps.get_job(job_id) is None:
                run_date = max(moment, self.now() + RETRY) if moment <= self.now() else moment
                aps.add_job(
                    self._wake, "date", run_date=run_date, args=[ref], id=job_id, name=job_id, replace_existing=True
                )
                log.debug("armed %s at %s", job_id, moment)

    def _disarm(self, ref: CommunityRef) -> None:
        self._armed.pop(ref, None)
        aps = self._aps
        if aps is not None:
            for kind in JOB_KINDS:
                remove_job(aps, job_name(kind, ref))

    def armed_jobs(self) -> dict[str, datetime]:
        """APScheduler's jobs and their next run times (for tests and logs)."""
        if self._aps is None:
            return {}
        return {job.id: job.next_run_time for job in self._aps.get_jobs() if job.next_run_time is not None}


def remove_job(aps: Any, job_id: str) -> None:
    """Remove an APScheduler job that may be gone already: a date job is removed by APScheduler's
    thread once handed out (it may be the very job now re-arming itself from `_wake`), which can
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
