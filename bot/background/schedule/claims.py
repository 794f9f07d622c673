"""What the scheduler claims when it looks: the jobs due now of the communities a process
serves, each claim written in the database with its outbox row (so a restart, a second process
or a job run by hand never posts twice), the daily rounds of a long pass opened DAILY_BATCH at a
time, and the jobs run by hand."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.core.engine import StudyEngine
from bot.core.errors import StoreUnavailable
from bot.core.rules import scoring, timing
from bot.core.rules.community import CommunityConfig
from bot.core.scope import OnlyIds, Scheduled, Scope
from bot.core.values import AlreadyOpen, ChannelRef, CommunityRef, Notice, Posted, RevealCard

from .plans import JOB_KINDS, JobKind, NextRuns, plan_next

log = logging.getLogger(__name__)

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


class ScheduleClaims:
    """What is due now, claimed in the database: each community's reveal, daily round and
    weekly leaderboard (and its weekly FSRS fit handed to `weekly_fit`), and the jobs run by
    hand. StudyScheduler (bot/background/schedule/scheduler.py) decides when to call it.

    `platforms` and `community` narrow which communities this process serves, `scope`
    further in SQL and `accepts` in Python; `clock` defaults to the engine's."""

    def __init__(
        self,
        engine: StudyEngine,
        clock: Callable[[], datetime] | None = None,
        platforms: tuple[str, ...] | None = None,
        community: str | None = None,
        on_claimed: Callable[[], None] | None = None,
        accepts: Callable[[CommunityRef], bool] | None = None,
        scope: Callable[[], Scope] | None = None,
        weekly_fit: Callable[[CommunityRef, str], None] | None = None,
    ) -> None:
        self.engine = engine
        # hands a community's weekly FSRS fit over (bot.background.fsrs_runs.WeeklyFits); None: no fits
        self.weekly_fit = weekly_fit
        self.clock = clock or engine.now
        self.platforms = platforms
        self.community = community
        self.accepts = accepts
        self.on_claimed = on_claimed
        self._scope_of = scope
        self._lock = threading.RLock()
        self._done: dict[tuple[CommunityRef, str], str] = {}  # (community, job) -> the key last known done
        self._known: dict[CommunityRef, Scheduled] = {}  # as last read
        self._seen_version: int | None = None  # the highest settings version read so far
        self._failed: set[CommunityRef] = set()  # tried again by the next refresh

    # ------------------------------------------------------------ what and when

    def report_to(
        self,
        on_claimed: Callable[[], None] | None,
        accepts: Callable[[CommunityRef], bool] | None,
        scope: Callable[[], Scope] | None,
    ) -> None:
        """Connect the running bot's callbacks (bot/platforms/runtime.py): what to wake when a
        job claimed something, and which communities this process serves."""
        self.on_claimed = on_claimed
        self.accepts = accepts
        self._scope_of = scope

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
        rows = self._keep(self.engine.schedule.scheduled(self.scope()))
        self._known = {row.ref: row for row in rows}
        return rows

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        return [(row.ref, row.config) for row in self._read_all()]

    def _config(self, ref: CommunityRef) -> CommunityConfig | None:
        """One community's settings, read by its key (None: gone, or not served here)."""
        if not self.serves(ref):
            return None
        config = self.engine.schedule.community(ref)
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
        return plan_next(ref, config, self.now(), self.engine.rounds.next_close(ref))

    def all_next_runs(self) -> list[NextRuns]:
        now = self.now()
        rows = self._read_all()
        closes = self.engine.schedule.next_closes(self.scope())
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
            for ref, round_id in self.engine.schedule.due_rounds(scope):
                due.setdefault(ref, []).append(round_id)
            weeks = {
                scoring.previous_week(scoring.iso_week(now, config.timezone)) for _, config in items if config.timezone
            }
            dailies, boards = self.engine.schedule.claimed(scope, now - CLAIMED_LOOKBACK, weeks)
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
            cards = self.engine.rounds.close_due(ref)
        else:
            closed = (self.engine.rounds.close_round(round_id) for round_id in due)
            cards = [card for card in closed if isinstance(card, RevealCard)]
        for card in cards:
            log.info("revealed round %s in %s/%s", card.round_id, ref.platform, ref.community_id)
        return list(cards)

    def _leaderboard(self, ref: CommunityRef, channel: ChannelRef, week: str) -> list[Posted]:
        card = self.engine.boards.weekly_post(ref, week)
        self._done[(ref, "leaderboard")] = week
        if card is None:
            log.info("leaderboard %s of %s/%s was already posted", week, ref.platform, ref.community_id)
            return []
        log.info("claimed leaderboard %s in %s", week, channel)
        return [card]

    def _daily(self, ref: CommunityRef, channel: ChannelRef, key: str, late: bool) -> list[Posted]:
        card = self.engine.rounds.open_daily(channel, late=late)
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
            cards = self.engine.dailies.open_dailies([(daily.channel, daily.late) for daily in wanted])
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
            config = self.engine.schedule.community(ref)
            if config is None:
                return [Notice(f"There is no community {ref.platform}/{ref.community_id} yet.")]
            if config.channel_id is None:
                return [Notice("No channel is set for this community: set one with /config channel ID.")]
            channel = ChannelRef(ref.platform, ref.community_id, config.channel_id)
            if kind == "daily":
                return [self.engine.rounds.open_daily(channel)]
            if kind == "leaderboard":
                week = scoring.previous_week(scoring.iso_week(self.now(), config.timezone))
                done = self._leaderboard(ref, channel, week)
                return list(done) or [Notice(f"The leaderboard of {week} was already posted.")]
        raise ValueError(f"unknown job {kind!r}; jobs: {', '.join(JOB_KINDS)}")
