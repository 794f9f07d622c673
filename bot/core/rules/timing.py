"""Pure schedule arithmetic: when a community's daily round and weekly leaderboard are due.

Times come in and go out as aware UTC datetimes; the community's daily time is local
wall-clock time in its IANA zone, so it follows daylight saving. A wall time that does not
exist on a day (clocks spring forward over it) means the first valid minute after the gap;
one that exists twice (clocks fall back) means its first occurrence. No scheduler library
is imported here: the scheduler only wakes the bot, these functions decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.core.rules import scoring

MONDAY = 0
# A round posted within this long after its moment is on time; later it says it is late.
LATE_AFTER = timedelta(minutes=5)
_TIME_RE = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])$")  # ASCII digits only
_MAX_GAP_MINUTES = 48 * 60  # the longest zone change ever (a skipped day) is well inside this


def parse_daily_time(text: str) -> time:
    """'09:00' -> time(9, 0); raises ValueError for anything else."""
    match = _TIME_RE.match(text.strip())
    if not match:
        raise ValueError(f"'{text[:20]}' is not a time of day like 09:00")
    return time(int(match[1]), int(match[2]))


def _exists(wall: datetime, zone: ZoneInfo) -> bool:
    """Whether a naive local wall time occurs in `zone` (it does not inside a spring-forward gap)."""
    aware = wall.replace(tzinfo=zone)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall


def daily_moment(day: date, daily_time: str, tz: str) -> datetime:
    """The UTC moment of `daily_time` on the local date `day` in zone `tz`."""
    zone = ZoneInfo(tz)
    wall = datetime.combine(day, parse_daily_time(daily_time))
    for minutes in range(_MAX_GAP_MINUTES):
        candidate = wall + timedelta(minutes=minutes)
        if _exists(candidate, zone):
            # fold=0: of a wall time that occurs twice, the first occurrence.
            return candidate.replace(tzinfo=zone, fold=0).astimezone(UTC)
    raise ValueError(f"no valid local time near {wall.isoformat()} in {tz}")  # pragma: no cover


def as_utc(moment: datetime) -> datetime:
    """An aware UTC datetime (a naive one is taken to be UTC already)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def next_daily(after: datetime, daily_time: str, tz: str) -> datetime:
    """The first daily moment strictly after `after`."""
    after = as_utc(after)
    today = scoring.local_date(after, tz)
    for offset in range(-1, 4):
        moment = daily_moment(today + timedelta(days=offset), daily_time, tz)
        if moment > after:
            return moment
    raise ValueError(f"no daily moment after {after.isoformat()} in {tz}")  # pragma: no cover


def next_weekly(after: datetime, daily_time: str, tz: str) -> datetime:
    """The first Monday daily moment strictly after `after` (when last week's board is posted)."""
    after = as_utc(after)
    today = scoring.local_date(after, tz)
    monday = today - timedelta(days=today.weekday())
    for weeks in range(3):
        moment = daily_moment(monday + timedelta(weeks=weeks), daily_time, tz)
        if moment > after:
            return moment
    raise ValueError(f"no weekly moment after {after.isoformat()} in {tz}")  # pragma: no cover


@dataclass(frozen=True)
class DailyDue:
    """Today's round is due: its local date, its moment, and whether posting now is late."""

    local_date: str
    moment: datetime
    late: bool


@dataclass(frozen=True)
class WeeklyDue:
    """Last week's leaderboard is due (it is Monday, local, at or after the daily time)."""

    week: str
    moment: datetime
    late: bool


def daily_due(now: datetime, daily_time: str, tz: str) -> DailyDue | None:
    """Today's (local) round if its moment has come; None before it. Earlier days never
    come back: after a downtime only today's round can be due, posted late."""
    now = as_utc(now)
    today = scoring.local_date(now, tz)
    moment = daily_moment(today, daily_time, tz)
    if moment > now:
        return None
    return DailyDue(today.isoformat(), moment, now - moment > LATE_AFTER)


def weekly_due(now: datetime, daily_time: str, tz: str) -> WeeklyDue | None:
    """Last ISO week's leaderboard if it is Monday (local) at or after the daily time; on any
    other day a missed Monday is skipped, never posted days later."""
    now = as_utc(now)
    today = scoring.local_date(now, tz)
    if today.weekday() != MONDAY:
        return None
    moment = daily_moment(today, daily_time, tz)
    if moment > now:
        return None
    week = scoring.previous_week(scoring.iso_week(now, tz))
    return WeeklyDue(week, moment, now - moment > LATE_AFTER)
