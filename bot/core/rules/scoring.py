"""Pure scoring rules: points, streaks, ISO weeks in a time zone, ranking with ties."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime, timedelta
from typing import TypeVar
from zoneinfo import ZoneInfo

from bot.core.values import LeaderboardRow

BASE_POINTS = 10
MAX_STREAK_BONUS = 5
K = TypeVar("K")


def daily_points(correct: bool, earlier_correct_run: int) -> int:
    """Points for a daily answer: 10 plus 1 per consecutive earlier correct daily round, at most +5."""
    if not correct:
        return 0
    return BASE_POINTS + min(MAX_STREAK_BONUS, max(0, earlier_correct_run))


def leading_run(outcomes: Iterable[bool | None]) -> int:
    """How many outcomes, newest first, are True before the first miss (False or unanswered)."""
    run = 0
    for outcome in outcomes:
        if not outcome:
            break
        run += 1
    return run


def best_run(outcomes: Iterable[bool | None]) -> int:
    """The longest run of True in the outcomes, in any order they are given."""
    best = current = 0
    for outcome in outcomes:
        current = current + 1 if outcome else 0
        best = max(best, current)
    return best


def iso_week(moment: datetime, tz: str) -> str:
    """The ISO week ("2026-W48") that an aware moment falls in, in the time zone `tz`."""
    year, week, _ = moment.astimezone(ZoneInfo(tz)).isocalendar()
    return f"{year}-W{week:02d}"


def local_date(moment: datetime, tz: str) -> date:
    return moment.astimezone(ZoneInfo(tz)).date()


def parse_week(text: str) -> str:
    """Validate an ISO week such as 2026-W48; returns it normalised, or raises ValueError."""
    cleaned = text.strip().upper()
    try:
        year_part, week_part = cleaned.split("-W")
        year, week = int(year_part), int(week_part)
        date.fromisocalendar(year, week, 1)
    except ValueError:
        raise ValueError(f"'{text[:40]}' is not an ISO week like 2026-W48") from None
    return f"{year}-W{week:02d}"


def previous_week(week: str) -> str:
    year, number = (int(part) for part in week.split("-W"))
    monday = date.fromisocalendar(year, number, 1) - timedelta(days=7)
    y, w, _ = monday.isocalendar()
    return f"{y}-W{w:02d}"


def rank_rows(totals: Sequence[tuple[str, int, K]]) -> list[tuple[K, LeaderboardRow]]:
    """Highest points first; equal points share a rank (1, 2, 2, 4), then by display name.
    Each total carries a key (the member) that comes back beside its row."""
    ordered = sorted(totals, key=lambda row: (-row[1], row[0].casefold(), row[0]))
    ranked: list[tuple[K, LeaderboardRow]] = []
    for position, (name, points, key) in enumerate(ordered, start=1):
        previous = ranked[-1][1] if ranked else None
        rank = previous.rank if previous and previous.points == points else position
        ranked.append((key, LeaderboardRow(rank=rank, user=name, points=points)))
    return ranked
