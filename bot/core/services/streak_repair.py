"""Streak repair: a member who missed one daily round earns that day back for their streak by
clearing every review due to them (answering the last one due) within 48 hours of the round's
close, at most once a week. A repaired day counts in the streak (/score, the member's page);
it earns no points and no streak bonus. bot/core/engine.py builds it as `engine.streaks`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from bot.core.records import DailyOutcome
from bot.core.rules import scoring
from bot.core.rules.community import CommunityConfig
from bot.core.rules.timing import as_utc
from bot.core.services.base import EngineBase
from bot.core.units import WithReviews, WithStreaks
from bot.core.values import RepairOffer

REPAIR_WINDOW = timedelta(hours=48)  # from the missed round's close
REPAIR_EVERY = timedelta(days=7)  # at most one repair in any 7 days


@dataclass(frozen=True)
class DailyDay:
    """One daily round as a member's streak sees it."""

    round_id: int
    local_date: str
    ended: datetime | None  # when it closed (or closes); None for a round without a close
    outcome: bool | None  # right, wrong, or None: not answered


@dataclass(frozen=True)
class StreakState:
    """A member's daily streak, the days repaired, and the repair still on offer."""

    streak: int
    best: int
    repaired: tuple[str, ...]  # the local dates of the repaired days, newest first
    offer: RepairOffer | None  # the miss that broke the streak and can still be earned back


def counted_days(
    history: list[DailyOutcome],
    repaired: set[int] | dict[int, datetime],
    now: datetime,
) -> list[DailyDay]:
    """The daily rounds that count for a streak, newest first (an open round not yet answered
    does not break it, so it is left out), a repaired round counted as answered right."""
    days: list[DailyDay] = []
    for day in history:
        closed_at, closes_at = day.closed_at, day.closes_at
        ended = as_utc(closed_at) if closed_at is not None else (as_utc(closes_at) if closes_at is not None else None)
        still_open = closed_at is None and (closes_at is None or as_utc(closes_at) > now)
        if still_open and day.correct is None and not days:
            continue
        outcome = True if day.round_id in repaired else day.correct
        days.append(DailyDay(day.round_id, day.local_date or "", ended, outcome))
    return days


def breaking_miss(days: list[DailyDay]) -> DailyDay | None:
    """The one round, not answered, that ended the member's streak: every newer round answered
    right and the one before it too (so earning it back joins two runs). None otherwise."""
    for index, day in enumerate(days):
        if day.outcome:
            continue
        before = days[index + 1] if index + 1 < len(days) else None
        if day.outcome is None and before is not None and before.outcome:
            return day
        return None
    return None


def repair_open(miss: DailyDay, last_repair: datetime | None, now: datetime) -> tuple[datetime, datetime | None] | None:
    """(deadline, the moment the once-a-week rule allows a repair again, or None when it does)
    for a miss still within its window; None when the window has passed."""
    if miss.ended is None or miss.ended > now or now - miss.ended > REPAIR_WINDOW:
        return None
    deadline = miss.ended + REPAIR_WINDOW
    if last_repair is not None and now - last_repair < REPAIR_EVERY:
        return deadline, last_repair + REPAIR_EVERY
    return deadline, None


class StreaksPort(WithReviews, WithStreaks, Protocol):
    """The features Streaks's units of work touch."""


class Streaks(EngineBase[StreaksPort]):
    """Streaks with their repaired days, and the repair earned by a review."""

    def state(self, tx: StreaksPort, community: CommunityConfig, member_id: int, now: datetime) -> StreakState:
        """The member's streak and best streak (repaired days counted), their repaired days,
        and the repair still open to them, if any."""
        repairs = {round_id: as_utc(at) for round_id, at in tx.streaks.streak_repairs(member_id).items()}
        days = counted_days(tx.streaks.daily_history(community.id, member_id), repairs, now)
        outcomes = [day.outcome for day in days]
        streak, best = scoring.leading_run(outcomes), scoring.best_run(reversed(outcomes))
        repaired = tuple(day.local_date for day in days if day.round_id in repairs)
        offer = None
        miss = breaking_miss(days)
        if miss is not None:
            window = repair_open(miss, max(repairs.values(), default=None), now)
            if window is not None:
                deadline, blocked_until = window
                due = tx.reviews.reviews_due(member_id, now)
                offer = RepairOffer(miss.local_date, deadline, due, blocked_until, community.timezone)
        return StreakState(streak, best, repaired, offer)

    def repair(self, tx: StreaksPort, community_id: int, member_id: int, now: datetime) -> str | None:
        """After a review answer: when no review is due any more and a miss that broke the
        member's streak is within its window (and no repair in the last week), that day is
        earned back. Returns its local date, or None."""
        if tx.reviews.reviews_due(member_id, now) > 0:
            return None
        repairs = {round_id: as_utc(at) for round_id, at in tx.streaks.streak_repairs(member_id).items()}
        miss = breaking_miss(counted_days(tx.streaks.daily_history(community_id, member_id), repairs, now))
        if miss is None:
            return None
        window = repair_open(miss, max(repairs.values(), default=None), now)
        if window is None or window[1] is not None:
            return None
        if not tx.streaks.add_streak_repair(community_id, member_id, miss.round_id, now):
            return None
        return miss.local_date
