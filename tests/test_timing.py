"""Pure schedule arithmetic: local wall-clock times through DST gaps and folds."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.rules import timing
from bot.core.rules.timing import daily_due, daily_moment, next_daily, next_weekly, weekly_due
from tests.conftest import examples


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc, arg-type]


@pytest.mark.parametrize(
    ("day", "wall", "tz", "expected"),
    [
        (date(2026, 1, 15), "09:00", "Europe/Berlin", utc(2026, 1, 15, 8, 0)),  # CET
        (date(2026, 7, 15), "09:00", "Europe/Berlin", utc(2026, 7, 15, 7, 0)),  # CEST
        (date(2026, 3, 8), "02:30", "America/New_York", utc(2026, 3, 8, 7, 0)),  # gap -> 03:00 EDT
        (date(2026, 3, 29), "02:00", "Europe/Berlin", utc(2026, 3, 29, 1, 0)),  # gap -> 03:00 CEST
        (date(2026, 3, 29), "02:59", "Europe/Berlin", utc(2026, 3, 29, 1, 0)),  # gap -> 03:00 CEST
        (date(2026, 3, 29), "03:00", "Europe/Berlin", utc(2026, 3, 29, 1, 0)),  # first valid minute itself
        (date(2026, 10, 25), "02:30", "Europe/Berlin", utc(2026, 10, 25, 0, 30)),  # twice: first (CEST)
        (date(2026, 11, 1), "01:30", "America/New_York", utc(2026, 11, 1, 5, 30)),  # twice: first (EDT)
        (date(2026, 6, 1), "00:00", "UTC", utc(2026, 6, 1, 0, 0)),
        (date(2026, 6, 1), "23:59", "Asia/Kathmandu", utc(2026, 6, 1, 18, 14)),  # +05:45
    ],
)
def test_daily_moment(day: date, wall: str, tz: str, expected: datetime) -> None:
    assert daily_moment(day, wall, tz) == expected


def test_a_skipped_day_posts_at_the_first_minute_after_it() -> None:
    # Samoa skipped 30 December 2011 entirely (UTC-10 -> UTC+14).
    moment = daily_moment(date(2011, 12, 30), "09:00", "Pacific/Apia")
    local = moment.astimezone(ZoneInfo("Pacific/Apia"))
    assert local.replace(tzinfo=None) == datetime(2011, 12, 31, 0, 0)


def test_bad_daily_time_is_refused() -> None:
    with pytest.raises(ValueError):
        daily_moment(date(2026, 1, 1), "25:00", "UTC")


@pytest.mark.parametrize(
    ("tz", "wall", "start", "expected"),
    [
        # Berlin, autumn: 09:00 local is 07:00 UTC until Sat 24 Oct, 08:00 from Sun 25 Oct.
        (
            "Europe/Berlin",
            "09:00",
            utc(2026, 10, 22, 0, 0),
            [utc(2026, 10, d, 7) for d in (22, 23, 24)] + [utc(2026, 10, d, 8) for d in (25, 26, 27, 28)],
        ),
        # Berlin, 02:30 exists twice on 25 Oct: once, at the first (CEST) occurrence.
        (
            "Europe/Berlin",
            "02:30",
            utc(2026, 10, 22, 0, 0),
            [utc(2026, 10, d, 0, 30) for d in (22, 23, 24, 25)] + [utc(2026, 10, d, 1, 30) for d in (26, 27, 28)],
        ),
        # New York, spring: 09:00 local is 14:00 UTC until Sat 7 Mar, 13:00 from Sun 8 Mar.
        (
            "America/New_York",
            "09:00",
            utc(2026, 3, 5, 0, 0),
            [utc(2026, 3, d, 14) for d in (5, 6, 7)] + [utc(2026, 3, d, 13) for d in (8, 9, 10, 11)],
        ),
        # New York, 02:30 does not exist on 8 Mar: 03:00 EDT instead (07:00 UTC).
        (
            "America/New_York",
            "02:30",
            utc(2026, 3, 5, 0, 0),
            [utc(2026, 3, d, 7, 30) for d in (5, 6, 7)]
            + [utc(2026, 3, 8, 7, 0)]
            + [utc(2026, 3, d, 6, 30) for d in (9, 10, 11)],
        ),
    ],
)
def test_next_daily_walks_a_week_across_dst(tz: str, wall: str, start: datetime, expected: list[datetime]) -> None:
    moments = []
    after = start
    for _ in expected:
        after = next_daily(after, wall, tz)
        moments.append(after)
    assert moments == expected


def test_next_daily_is_strictly_after() -> None:
    moment = utc(2026, 10, 25, 0, 30)  # 02:30 CEST, the first of two 02:30s
    assert next_daily(moment - timedelta(seconds=1), "02:30", "Europe/Berlin") == moment
    # Not the second 02:30 (CET, 01:30 UTC): the next day's.
    assert next_daily(moment, "02:30", "Europe/Berlin") == utc(2026, 10, 26, 1, 30)


def test_next_weekly_is_monday_at_the_daily_time() -> None:
    # Thu 22 Oct 2026 -> Mon 26 Oct 09:00 CET (after the change).
    assert next_weekly(utc(2026, 10, 22, 12), "09:00", "Europe/Berlin") == utc(2026, 10, 26, 8)
    # On a Monday before the time: that day; after it: a week later.
    assert next_weekly(utc(2026, 10, 26, 7), "09:00", "Europe/Berlin") == utc(2026, 10, 26, 8)
    assert next_weekly(utc(2026, 10, 26, 8), "09:00", "Europe/Berlin") == utc(2026, 11, 2, 8)
    # Local Monday while UTC is still Sunday.
    assert next_weekly(utc(2026, 11, 1, 10), "00:30", "Asia/Tokyo") == utc(2026, 11, 1, 15, 30)


def test_daily_due_today_only_and_late_after_the_grace() -> None:
    tz = "Europe/Berlin"
    assert daily_due(utc(2026, 11, 23, 7, 59), "09:00", tz) is None
    on_time = daily_due(utc(2026, 11, 23, 8, 0), "09:00", tz)
    assert on_time is not None and on_time.local_date == "2026-11-23" and not on_time.late
    assert daily_due(utc(2026, 11, 23, 8, 0) + timing.LATE_AFTER, "09:00", tz).late is False  # type: ignore[union-attr]
    late = daily_due(utc(2026, 11, 23, 22, 59), "09:00", tz)
    assert late is not None and late.late and late.local_date == "2026-11-23"
    # After local midnight it is the next day, whose time has not come: nothing, not yesterday's.
    assert daily_due(utc(2026, 11, 23, 23, 1), "09:00", tz) is None


def test_weekly_due_only_on_monday_for_last_week() -> None:
    tz = "America/New_York"
    monday = weekly_due(utc(2026, 11, 23, 14, 0), "09:00", tz)
    assert monday is not None and monday.week == "2026-W47" and not monday.late
    assert weekly_due(utc(2026, 11, 23, 13, 59), "09:00", tz) is None  # before the time
    assert weekly_due(utc(2026, 11, 24, 14, 0), "09:00", tz) is None  # Tuesday: skipped, not late
    late = weekly_due(utc(2026, 11, 24, 4, 0), "09:00", tz)  # still Monday 23:00 in New York
    assert late is not None and late.late and late.week == "2026-W47"


ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "Europe/London",
    "America/St_Johns",
]


@settings(max_examples=examples(300), deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    day=st.dates(min_value=date(2020, 1, 1), max_value=date(2035, 12, 31)),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
)
def test_daily_moment_is_the_wall_time_or_the_end_of_its_gap(zone: str, day: date, hour: int, minute: int) -> None:
    wall = f"{hour:02d}:{minute:02d}"
    moment = daily_moment(day, wall, zone)
    local = moment.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    wanted = datetime(day.year, day.month, day.day, hour, minute)
    if local != wanted:  # only inside a gap, and then the first minute after it
        assert wanted < local <= wanted + timedelta(hours=2)
        before = moment - timedelta(minutes=1)
        assert before.astimezone(ZoneInfo(zone)).replace(tzinfo=None) < wanted
    else:  # of two occurrences, the first: no earlier moment shows the same wall time
        for back in (timedelta(minutes=30), timedelta(hours=1)):
            assert (moment - back).astimezone(ZoneInfo(zone)).replace(tzinfo=None) != wanted
    # And the next daily moment from just before it is it: once a day, never skipped.
    assert next_daily(moment - timedelta(seconds=1), wall, zone) == moment
