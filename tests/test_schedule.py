"""The schedules with a controllable clock: the scheduler is woken at the moments it plans
(as APScheduler would), restarted, doubled, paused and moved between time zones, and every
test asserts on what was posted."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.background.delivery import Deliverer
from bot.background.schedule import WAKE_JOB, StudyScheduler, job_name
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.errors import StoreUnavailable
from bot.core.values import (
    ChannelRef,
    CommunityRef,
    LeaderboardCard,
    Posted,
    QuestionCard,
    RevealCard,
    UserRef,
)
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc, arg-type]


@dataclass
class Wall:
    """Where the platform would have posted: every card with the moment and channel."""

    clock: FakeClock
    posts: list[tuple[datetime, ChannelRef, Posted]] = field(default_factory=list)

    def __call__(self, channel: ChannelRef, card: Posted) -> None:
        self.posts.append((self.clock(), channel, card))

    def questions(self) -> list[tuple[datetime, QuestionCard]]:
        return [(at, card) for at, _, card in self.posts if isinstance(card, QuestionCard)]

    def reveals(self) -> list[tuple[datetime, RevealCard]]:
        return [(at, card) for at, _, card in self.posts if isinstance(card, RevealCard)]

    def boards(self) -> list[tuple[datetime, LeaderboardCard]]:
        return [(at, card) for at, _, card in self.posts if isinstance(card, LeaderboardCard)]


def setup_community(
    engine: StudyEngine,
    name: str,
    tz: str,
    daily_time: str = "09:00",
    channel: str | None = "study",
    window_hours: int = 12,
) -> CommunityRef:
    ref = CommunityRef("console", name)
    engine.admin.config(ref, "timezone", tz)
    engine.admin.config(ref, "daily_time", daily_time)
    engine.admin.config(ref, "window_hours", str(window_hours))
    if channel is not None:
        engine.admin.config(ref, "channel", channel)
    return ref


def posting(
    engine: StudyEngine,
    send: Callable[[ChannelRef, Posted], object],
    clock: FakeClock,
    platform: str | None = None,
    community: str | None = None,
) -> StudyScheduler:
    """A scheduler whose claims a deliverer posts to `send` at once, as a platform would."""
    deliverer = Deliverer(engine, platform or "console", community)
    return StudyScheduler(
        engine,
        clock=clock,
        platforms=(platform,) if platform else None,
        community=community,
        on_claimed=lambda: deliverer.deliver_due(send),  # type: ignore[arg-type]
    )


def run_until(clock: FakeClock, schedulers: Iterable[StudyScheduler], end: datetime) -> list[datetime]:
    """Wake every scheduler at each moment they plan, as APScheduler's date jobs would, until
    `end`; returns the wake-up moments."""
    schedulers = list(schedulers)
    wakes: list[datetime] = []
    for _ in range(1000):
        moments = [m for s in schedulers for runs in s.all_next_runs() if (m := runs.earliest()) is not None]
        upcoming = min(moments) if moments else None
        if upcoming is None or upcoming > end:
            clock.set(end)
            return wakes
        assert not wakes or upcoming > wakes[-1], f"the schedule did not move on from {upcoming}"
        clock.set(upcoming)
        wakes.append(upcoming)
        turn = len(wakes) % len(schedulers)  # take turns at being first, like racing processes
        for scheduler in schedulers[turn:] + schedulers[:turn]:
            scheduler.tick()
    raise AssertionError("too many wake-ups")


def local(moment: datetime, tz: str) -> str:
    return moment.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M")


@pytest.fixture
def wall(clock: FakeClock) -> Wall:
    return Wall(clock)


@pytest.fixture
def scheduler(engine: StudyEngine, wall: Wall, clock: FakeClock) -> StudyScheduler:
    return posting(engine, wall, clock=clock)


# ------------------------------------------------------------- a week across DST


@pytest.mark.parametrize(
    ("tz", "daily_time", "start", "expected_utc", "monday_utc", "week"),
    [
        # Europe/Berlin, October: clocks go back on Sun 25 Oct; 09:00 stays 09:00 local.
        (
            "Europe/Berlin",
            "09:00",
            utc(2026, 10, 22, 0, 0),
            [utc(2026, 10, d, 7) for d in (22, 23, 24)] + [utc(2026, 10, d, 8) for d in (25, 26, 27, 28)],
            utc(2026, 10, 26, 8),
            "2026-W43",
        ),
        # 02:30 occurs twice on 25 Oct: posted once, at the first.
        (
            "Europe/Berlin",
            "02:30",
            utc(2026, 10, 22, 0, 0),
            [utc(2026, 10, d, 0, 30) for d in (22, 23, 24, 25)] + [utc(2026, 10, d, 1, 30) for d in (26, 27, 28)],
            utc(2026, 10, 26, 1, 30),
            "2026-W43",
        ),
        # America/New_York, March: clocks go forward on Sun 8 Mar.
        (
            "America/New_York",
            "09:00",
            utc(2026, 3, 5, 5, 0),
            [utc(2026, 3, d, 14) for d in (5, 6, 7)] + [utc(2026, 3, d, 13) for d in (8, 9, 10, 11)],
            utc(2026, 3, 9, 13),
            "2026-W10",
        ),
        # 02:30 does not exist on 8 Mar: posted at the next valid minute, 03:00 EDT.
        (
            "America/New_York",
            "02:30",
            utc(2026, 3, 5, 5, 0),
            [utc(2026, 3, d, 7, 30) for d in (5, 6, 7)]
            + [utc(2026, 3, 8, 7, 0)]
            + [utc(2026, 3, d, 6, 30) for d in (9, 10, 11)],
            utc(2026, 3, 9, 6, 30),
            "2026-W10",
        ),
    ],
)
def test_a_week_of_days_across_dst(
    engine: StudyEngine,
    test_bank: Bank,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
    tz: str,
    daily_time: str,
    start: datetime,
    expected_utc: list[datetime],
    monday_utc: datetime,
    week: str,
) -> None:
    clock.set(start)
    ref = setup_community(engine, "club", tz, daily_time)
    assert scheduler.catch_up() == []  # before the first daily time: nothing yet
    ann = UserRef("console", "club", "ann", "Ann")
    answered = False
    end = start + timedelta(days=7)
    while clock() < end:  # wake, and answer the first round right after it is posted
        run_until(clock, [scheduler], min(end, clock() + timedelta(hours=1)))
        if not answered and wall.questions():
            first = wall.questions()[0][1]
            right = test_bank.get(first.question_id)
            assert right is not None
            engine.rounds.answer(ann, first.round_id, first.choices.index(right.choices[right.answer_index].text))
            answered = True

    questions = wall.questions()
    assert [at for at, _ in questions] == expected_utc  # once a day, at the local time
    assert all(local(at, tz).endswith(daily_time) or local(at, tz).endswith("03:00") for at in expected_utc)
    assert len({card.round_id for _, card in questions}) == 7
    assert not any(card.late for _, card in questions)
    # Each round is revealed once, when its window (12 h) ends.
    reveals = wall.reveals()
    assert [card.round_id for _, card in reveals] == [card.round_id for _, card in questions]
    assert [at for at, _ in reveals] == [at + timedelta(hours=12) for at in expected_utc]
    # Last week's leaderboard on Monday at the daily time, once, with the answer on it.
    boards = wall.boards()
    assert [(at, card.scope) for at, card in boards] == [(monday_utc, week)]
    assert [(row.user, row.points) for row in boards[0][1].rows] == [("Ann", 10)]
    assert all(channel == ChannelRef("console", "club", "study") for _, channel, _ in wall.posts)
    assert ref == CommunityRef("console", "club")


# --------------------------------------------------------------------- restarts


@pytest.mark.parametrize(
    ("restart", "late", "posted_at_restart"),
    [
        (utc(2026, 11, 24, 7, 30), False, False),  # before 09:00 CET: posted on time later
        (utc(2026, 11, 24, 8, 0), False, True),  # at the daily time
        (utc(2026, 11, 24, 8, 3), False, True),  # within the grace: on time
        (utc(2026, 11, 24, 14, 0), True, True),  # after: posted at once, marked late
        (utc(2026, 11, 24, 22, 59), True, True),  # 23:59 local: still the same day
    ],
)
@pytest.mark.usefixtures("test_bank")
def test_restart_before_during_and_after_the_daily_time(
    engine: StudyEngine,
    clock: FakeClock,
    restart: datetime,
    late: bool,
    posted_at_restart: bool,
) -> None:
    clock.set(utc(2026, 11, 23, 6, 0))  # Monday, 07:00 in Berlin
    setup_community(engine, "club", "Europe/Berlin")
    first = Wall(clock)
    run_until(clock, [posting(engine, first, clock=clock)], utc(2026, 11, 23, 10, 0))  # then down
    assert len(first.questions()) == 1

    clock.set(restart)
    second = Wall(clock)
    restarted = posting(engine, second, clock=clock)  # a fresh process: nothing in memory
    restarted.catch_up()
    # Monday's round (closed 21:00 CET while down) is revealed at start, once.
    assert [card.round_id for _, card in second.reveals()] == [first.questions()[0][1].round_id]
    assert [at for at, _ in second.questions()] == ([restart] if posted_at_restart else [])
    run_until(clock, [restarted], utc(2026, 11, 24, 23, 0))
    questions = second.questions()
    assert len(questions) == 1
    at, card = questions[0]
    assert card.late is late
    assert at == (restart if posted_at_restart else utc(2026, 11, 24, 8, 0))
    clock.set(restart)
    assert engine.rounds.open_daily(ChannelRef("console", "club", "study")).__class__.__name__ == "AlreadyOpen"


def test_restart_after_the_round_was_posted_posts_nothing(engine: StudyEngine, clock: FakeClock) -> None:
    clock.set(utc(2026, 11, 24, 7, 0))
    setup_community(engine, "club", "Europe/Berlin")
    first = Wall(clock)
    run_until(clock, [posting(engine, first, clock=clock)], utc(2026, 11, 24, 8, 30))
    assert len(first.questions()) == 1
    clock.set(utc(2026, 11, 24, 9, 0))
    again = Wall(clock)
    posting(engine, again, clock=clock).catch_up()
    assert again.posts == []


def test_three_days_down_is_one_late_post_and_no_flood(engine: StudyEngine, clock: FakeClock) -> None:
    clock.set(utc(2026, 11, 20, 6, 0))  # Friday
    setup_community(engine, "club", "America/New_York")
    before = Wall(clock)
    run_until(clock, [posting(engine, before, clock=clock)], utc(2026, 11, 20, 16, 0))  # Fri round, then down
    assert len(before.questions()) == 1

    clock.set(utc(2026, 11, 23, 20, 0))  # Monday 15:00 in New York: Sat, Sun and 09:00 Mon passed
    after = Wall(clock)
    restarted = posting(engine, after, clock=clock)
    restarted.catch_up()
    # The Friday round revealed, last week's leaderboard (still Monday), today's round late: one each.
    assert [type(card).__name__ for _, _, card in after.posts] == ["RevealCard", "LeaderboardCard", "QuestionCard"]
    assert after.questions()[0][1].late
    assert after.boards()[0][1].scope == "2026-W47"
    restarted.catch_up()  # a second catch-up (or tick) changes nothing
    assert len(after.posts) == 3


def test_a_missed_monday_leaderboard_is_skipped_not_posted_late(engine: StudyEngine, clock: FakeClock) -> None:
    clock.set(utc(2026, 11, 20, 6, 0))  # Friday
    setup_community(engine, "club", "Europe/Berlin")
    run_until(clock, [posting(engine, Wall(clock), clock=clock)], utc(2026, 11, 20, 9, 0))
    clock.set(utc(2026, 11, 25, 10, 0))  # back on Wednesday
    after = Wall(clock)
    restarted = posting(engine, after, clock=clock)
    restarted.catch_up()
    assert after.boards() == []
    assert len(after.questions()) == 1 and after.questions()[0][1].late
    run_until(clock, [restarted], utc(2026, 12, 1, 12, 0))  # next Monday: W48 on time
    assert [(at, card.scope) for at, card in after.boards()] == [(utc(2026, 11, 30, 8, 0), "2026-W48")]


# ---------------------------------------------------------- two processes, one DB


def test_two_schedulers_on_one_database_post_once(db_url: str, test_bank: Bank, clock: FakeClock) -> None:
    clock.set(utc(2026, 10, 22, 0, 0))
    first_db, second_db = Database(db_url), Database(db_url)
    try:
        one, two = (
            StudyEngine(SqlStore(first_db), test_bank, clock=clock),
            StudyEngine(SqlStore(second_db), test_bank, clock=clock),
        )
        setup_community(one, "club", "Europe/Berlin")
        wall_one, wall_two = Wall(clock), Wall(clock)
        schedulers = [posting(one, wall_one, clock=clock), posting(two, wall_two, clock=clock)]
        for s in schedulers:
            s.catch_up()
        run_until(clock, schedulers, utc(2026, 10, 29, 0, 0))
        posts = wall_one.posts + wall_two.posts
        questions = [card for _, _, card in posts if isinstance(card, QuestionCard)]
        reveals = [card for _, _, card in posts if isinstance(card, RevealCard)]
        boards = [card for _, _, card in posts if isinstance(card, LeaderboardCard)]
        assert len(questions) == 7 and len({q.round_id for q in questions}) == 7
        assert sorted(r.round_id for r in reveals) == sorted(q.round_id for q in questions)
        assert [b.scope for b in boards] == ["2026-W43"]
        assert len(posts) == 15  # 7 rounds, 7 reveals, 1 board: nothing twice
        assert wall_one.posts and wall_two.posts  # both posted some: each found the other's work done
    finally:
        first_db.dispose()
        second_db.dispose()


def test_two_schedulers_ticking_at_the_same_instant(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> None:
    clock.set(utc(2026, 11, 23, 8, 0))  # Monday 09:00 in Berlin: round and leaderboard due
    databases = [Database(sqlite_url) for _ in range(4)]
    try:
        engines = [StudyEngine(SqlStore(db), test_bank, clock=clock) for db in databases]
        setup_community(engines[0], "club", "Europe/Berlin")
        walls = [Wall(clock) for _ in engines]
        schedulers = [posting(e, w, clock=clock) for e, w in zip(engines, walls, strict=True)]
        barrier = threading.Barrier(len(schedulers))
        errors: list[Exception] = []

        def start(s: StudyScheduler) -> None:
            try:
                barrier.wait(timeout=30)
                s.catch_up()
            except Exception as exc:  # noqa: BLE001 - surfaced below, in the test's own thread
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(s,), daemon=True) for s in schedulers]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        hung = [t.name for t in threads if t.is_alive()]
        assert not hung, f"scheduler threads still running after 30 s: {hung}"
        if errors:
            raise ExceptionGroup("a scheduler thread failed", errors)
        kinds = sorted(type(card).__name__ for w in walls for _, _, card in w.posts)
        assert kinds == ["LeaderboardCard", "QuestionCard"]
    finally:
        for db in databases:
            db.dispose()


# ------------------------------------------------------------ pause and resume


def test_pausing_stops_rounds_and_boards_and_resuming_brings_them_back(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 17, 6, 0))  # Tuesday
    ref = setup_community(engine, "club", "Europe/Berlin")
    run_until(clock, [scheduler], utc(2026, 11, 17, 12, 0))  # Tuesday's round posted
    engine.admin.config(ref, "paused", "on")
    scheduler.rebuild()
    runs = scheduler.next_runs(ref)
    assert runs is not None and runs.daily is None and runs.leaderboard is None
    assert runs.reveal == utc(2026, 11, 17, 20, 0)  # an open round is still revealed
    run_until(clock, [scheduler], utc(2026, 11, 23, 12, 0))  # to Monday noon, paused
    assert len(wall.questions()) == 1 and len(wall.reveals()) == 1 and wall.boards() == []

    clock.set(utc(2026, 11, 24, 6, 0))  # Tuesday 07:00: resume before the daily time
    engine.admin.config(ref, "paused", "off")
    assert scheduler.rebuild() == []
    run_until(clock, [scheduler], utc(2026, 11, 24, 12, 0))
    assert [at for at, _ in wall.questions()] == [utc(2026, 11, 17, 8, 0), utc(2026, 11, 24, 8, 0)]
    assert not wall.questions()[-1][1].late


def test_resuming_after_the_daily_time_posts_today_late_only(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 17, 6, 0))
    ref = setup_community(engine, "club", "Europe/Berlin")
    engine.admin.config(ref, "paused", "on")
    scheduler.catch_up()
    run_until(clock, [scheduler], utc(2026, 11, 20, 14, 0))
    assert wall.posts == []
    engine.admin.config(ref, "paused", "off")
    posted = scheduler.rebuild()
    assert [type(card).__name__ for card in posted] == ["QuestionCard"] and wall.questions()[0][1].late


def test_a_community_without_a_channel_gets_no_round(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 24, 6, 0))
    ref = setup_community(engine, "club", "UTC", channel=None)
    run_until(clock, [scheduler], utc(2026, 11, 26, 0, 0))
    assert wall.posts == []
    engine.admin.config(ref, "channel", "general")
    scheduler.rebuild(ref)  # Wednesday 00:00: today's 09:00 has not come yet
    run_until(clock, [scheduler], utc(2026, 11, 26, 10, 0))
    assert [(at, channel.channel_id) for at, channel, _ in wall.posts] == [(utc(2026, 11, 26, 9, 0), "general")]


# ------------------------------------------------------ time zone changed mid-week


@pytest.mark.parametrize(
    ("first_tz", "second_tz", "change_at", "expected_utc"),
    [
        # Berlin 09:00 (08:00 UTC) Mon-Wed, then New York 09:00 (14:00 UTC) from Thursday.
        (
            "Europe/Berlin",
            "America/New_York",
            utc(2026, 11, 25, 12, 0),
            [utc(2026, 11, d, 8) for d in (23, 24, 25)] + [utc(2026, 11, d, 14) for d in (26, 27, 28, 29)],
        ),
        # New York Mon-Wed, then Tokyo: Thursday 09:00 JST (Thu 00:00 UTC) is after the change.
        (
            "America/New_York",
            "Asia/Tokyo",
            utc(2026, 11, 25, 16, 0),
            [utc(2026, 11, d, 14) for d in (23, 24, 25)] + [utc(2026, 11, d, 0) for d in (26, 27, 28, 29)],
        ),
    ],
)
def test_changing_the_time_zone_mid_week(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
    first_tz: str,
    second_tz: str,
    change_at: datetime,
    expected_utc: list[datetime],
) -> None:
    clock.set(utc(2026, 11, 23, 0, 0))
    ref = setup_community(engine, "club", first_tz)
    run_until(clock, [scheduler], change_at)
    engine.admin.config(ref, "timezone", second_tz)
    assert scheduler.rebuild() == []  # that local day already has its round
    run_until(clock, [scheduler], utc(2026, 11, 29, 23, 0))
    questions = wall.questions()
    assert [at for at, _ in questions] == expected_utc
    assert not any(card.late for _, card in questions)
    assert len({card.round_id for _, card in questions}) == len(questions)


def test_changing_the_daily_time_to_later_today_posts_at_the_new_time(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 24, 7, 0))
    ref = setup_community(engine, "club", "UTC")
    engine.admin.config(ref, "daily_time", "18:30")
    scheduler.rebuild(ref)
    run_until(clock, [scheduler], utc(2026, 11, 24, 23, 0))
    assert [at for at, _ in wall.questions()] == [utc(2026, 11, 24, 18, 30)]


# ------------------------------------------------------ jobs, runs by hand, scope


def test_apscheduler_jobs_are_armed_at_the_planned_moments_and_rebuilt(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 24, 6, 0))  # Tuesday
    ref = setup_community(engine, "club", "Europe/Berlin")
    scheduler.start(paused=True)  # armed, never fired by the real clock
    try:
        jobs = scheduler.armed_jobs()
        assert jobs[job_name("daily", ref)] == utc(2026, 11, 24, 8, 0)
        assert jobs[job_name("leaderboard", ref)] == utc(2026, 11, 30, 8, 0)
        assert job_name("reveal", ref) not in jobs  # no round open
        engine.admin.config(ref, "daily_time", "10:15")
        scheduler.rebuild(ref)
        assert scheduler.armed_jobs()[job_name("daily", ref)] == utc(2026, 11, 24, 9, 15)

        clock.set(utc(2026, 11, 24, 9, 15))  # what the daily job does when it fires
        scheduler._wake(ref)
        jobs = scheduler.armed_jobs()
        assert len(wall.questions()) == 1
        assert jobs[job_name("daily", ref)] == utc(2026, 11, 25, 9, 15)
        assert jobs[job_name("reveal", ref)] == utc(2026, 11, 24, 21, 15)

        engine.admin.config(ref, "paused", "on")
        scheduler.rebuild(ref)
        jobs = scheduler.armed_jobs()
        assert job_name("daily", ref) not in jobs and job_name("leaderboard", ref) not in jobs
        assert job_name("reveal", ref) in jobs
    finally:
        scheduler.shutdown()


def test_refresh_notices_changes_made_by_another_process(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 24, 6, 0))
    ref = setup_community(engine, "club", "UTC")
    scheduler.start(paused=True)
    try:
        assert scheduler.armed_jobs()[job_name("daily", ref)] == utc(2026, 11, 24, 9, 0)
        clock.set(utc(2026, 11, 24, 8, 0))
        engine.admin.config(ref, "daily_time", "07:00")  # as if changed by another process
        engine.rounds.open_daily(ChannelRef("console", "other", "x"))  # a new community appears
        scheduler.refresh()
        jobs = scheduler.armed_jobs()
        assert jobs[job_name("daily", ref)] == utc(2026, 11, 25, 7, 0)
        club = [card for _, channel, card in wall.posts if channel.community_id == "club"]
        assert [card.late for card in club if isinstance(card, QuestionCard)] == [True]  # 07:00 passed: late
        # the round opened by hand in the other community is posted too: every open queues its post
        assert [channel.channel_id for _, channel, _ in wall.posts if channel.community_id == "other"] == ["x"]
        assert job_name("reveal", CommunityRef("console", "other")) in jobs
    finally:
        scheduler.shutdown()


def test_run_by_hand_is_idempotent(
    engine: StudyEngine, scheduler: StudyScheduler, wall: Wall, clock: FakeClock
) -> None:
    clock.set(utc(2026, 11, 25, 6, 0))  # Wednesday, before the daily time
    ref = setup_community(engine, "club", "Europe/Berlin")
    assert isinstance(scheduler.run_job("daily", ref)[0], QuestionCard)
    assert type(scheduler.run_job("daily", ref)[0]).__name__ == "AlreadyOpen"
    assert isinstance(scheduler.run_job("leaderboard", ref)[0], LeaderboardCard)
    assert "already posted" in scheduler.run_job("leaderboard", ref)[0].text  # type: ignore[union-attr]
    assert "nothing to reveal" in scheduler.run_job("reveal", ref)[0].text  # type: ignore[union-attr]
    clock.set(utc(2026, 11, 25, 18, 0))
    assert isinstance(scheduler.run_job("reveal", ref)[0], RevealCard)
    assert len(wall.posts) == 3
    run_until(clock, [scheduler], utc(2026, 11, 25, 22, 0))  # the schedule does not post it again
    assert len(wall.posts) == 3


def test_a_scheduler_serves_only_its_platform_and_community(engine: StudyEngine, clock: FakeClock) -> None:
    clock.set(utc(2026, 11, 24, 6, 0))
    setup_community(engine, "club", "UTC")
    setup_community(engine, "other", "UTC")
    mine = Wall(clock)
    scheduler = posting(engine, mine, clock=clock, platform="console", community="club")
    run_until(clock, [scheduler], utc(2026, 11, 24, 10, 0))
    assert [channel.community_id for _, channel, _ in mine.posts] == ["club"]
    assert posting(engine, Wall(clock), clock=clock, platform="discord").all_next_runs() == []


def test_a_failing_post_is_claimed_once_and_waits_for_its_retry(
    engine: StudyEngine,
    clock: FakeClock,
) -> None:
    clock.set(utc(2026, 11, 24, 9, 0))
    setup_community(engine, "club", "UTC")
    calls: list[Posted] = []

    def broken(_channel: ChannelRef, card: Posted) -> None:
        calls.append(card)
        raise RuntimeError("platform down")

    scheduler = posting(engine, broken, clock=clock)
    scheduler.tick()
    scheduler.tick()
    assert len(calls) == 1 and isinstance(calls[0], QuestionCard)  # claimed once, tried once so far
    [alert] = engine.outbox.undelivered()
    assert "daily round #1" in alert and "platform down" in alert and "next try" in alert


def test_a_job_that_failed_is_retried_by_the_refresh(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock.set(utc(2026, 11, 24, 9, 0))
    setup_community(engine, "club", "UTC")
    real_open = engine.rounds.open_daily
    failures = iter([StoreUnavailable("The database is busy")])

    def busy_once(channel: ChannelRef, late: bool = False) -> object:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_open(channel, late=late)

    monkeypatch.setattr(engine.rounds, "open_daily", busy_once)
    assert scheduler.tick() == []  # the database was busy at 09:00
    clock.set(utc(2026, 11, 24, 9, 1))
    scheduler.refresh()  # a minute later
    assert [(at, card.late) for at, card in wall.questions()] == [(utc(2026, 11, 24, 9, 1), False)]
    scheduler.refresh()
    assert len(wall.posts) == 1


# ----------------------------------------------- APScheduler's own thread, racing


def test_the_wake_job_apscheduler_removed_already_is_re_armed_and_not_removed_again(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """APScheduler's thread removes the date wake job once it has handed it out, and the job
    (or a /config rebuild) may look for it at that moment. Whatever the order, the removal
    is not tried on a job that is gone (JobLookupError), and the wake job is armed again."""
    clock.set(utc(2026, 11, 24, 9, 0))
    ref = setup_community(engine, "club", "UTC")
    scheduler.start(paused=True)  # the catch-up opens today's round: its reveal comes first
    try:
        aps = scheduler._aps
        assert {job.id for job in aps.get_jobs()} == {WAKE_JOB, "refresh"}
        assert aps.get_job(WAKE_JOB).next_run_time == utc(2026, 11, 24, 21, 0)
        looked_up = aps.get_job

        def handed_out_meanwhile(job_id: str, jobstore: str | None = None) -> object:
            job = looked_up(job_id, jobstore)
            if job is not None and job_id == WAKE_JOB:
                aps.remove_job(job_id)  # APScheduler's thread, between this look-up and a removal
            return job

        monkeypatch.setattr(aps, "get_job", handed_out_meanwhile)
        scheduler.rebuild(ref)  # nothing moved: the look-up finds the job as it is handed out...
        monkeypatch.setattr(aps, "get_job", looked_up)
        clock.set(utc(2026, 11, 24, 21, 0))
        scheduler._wake_due()  # ...and the handed-out job runs and arms the next one
        assert len(wall.reveals()) == 1
        assert aps.get_job(WAKE_JOB).next_run_time == utc(2026, 11, 25, 9, 0)
        assert job_name("reveal", ref) not in scheduler.armed_jobs()

        aps.remove_job(WAKE_JOB)  # handed out, and a rebuild comes before its run
        scheduler.rebuild(ref)
        assert aps.get_job(WAKE_JOB).next_run_time == utc(2026, 11, 25, 9, 0)
        engine.admin.config(ref, "paused", "on")
        scheduler.rebuild(ref)  # nothing planned: the wake job goes...
        scheduler.rebuild(ref)  # ...once; no job to remove the second time
        assert aps.get_job(WAKE_JOB) is None and scheduler.armed_jobs() == {}
    finally:
        scheduler.shutdown()


def test_shutdown_while_apscheduler_hands_out_a_due_job(
    scheduler: StudyScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """APScheduler's shutdown marks itself stopped before it takes the job stores' lock; a date
    job it was handing out under that lock was then looked for among the pending jobs only,
    and its thread died of JobLookupError. The scheduler's shutdown pauses first and waits."""
    from apscheduler.schedulers.base import STATE_RUNNING  # type: ignore[import-untyped]

    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    scheduler.start(paused=True)  # no community: only the refresh job
    aps = scheduler._aps
    store = aps._jobstores["default"]
    entered, release = threading.Event(), threading.Event()
    due_jobs = store.get_due_jobs

    def held(now: datetime) -> list[object]:  # APScheduler holds the job stores' lock here
        jobs = due_jobs(now)
        if jobs:
            entered.set()
            release.wait(5)
        return jobs

    ran = threading.Event()
    monkeypatch.setattr(store, "get_due_jobs", held)
    aps.add_job(ran.set, "date", run_date=datetime.now(UTC), id="due")
    aps.resume()
    assert entered.wait(5)
    stopping = threading.Thread(target=scheduler.shutdown)
    stopping.start()
    deadline = time.monotonic() + 5
    while aps.state == STATE_RUNNING and time.monotonic() < deadline:  # shutdown has begun
        time.sleep(0.005)
    release.set()
    stopping.join(5)
    assert not stopping.is_alive()
    assert ran.wait(5)  # the job handed out still ran
    assert errors == []
    assert scheduler.armed_jobs() == {}


# ------------------------------------------- many communities due at one moment


def many_communities(engine: StudyEngine, count: int) -> list[CommunityRef]:
    return [setup_community(engine, f"club{i:02}", "UTC") for i in range(count)]


def drain(engine: StudyEngine, wall: Wall) -> None:
    """Post everything the outbox holds, as the deliverers would, pass after pass."""
    deliverer = Deliverer(engine, "console")
    while deliverer.deliver_due(wall):
        pass


def one_round_each(wall: Wall, refs: list[CommunityRef]) -> dict[str, QuestionCard]:
    """Each community's one question post, asserting none got two."""
    by_community: dict[str, list[QuestionCard]] = {}
    for _, channel, card in wall.posts:
        if isinstance(card, QuestionCard):
            assert channel.channel_id == "study"
            by_community.setdefault(channel.community_id, []).append(card)
    assert sorted(by_community) == sorted(ref.community_id for ref in refs)
    assert all(len(cards) == 1 for cards in by_community.values()), by_community
    return {community: cards[0] for community, cards in by_community.items()}


def test_many_communities_due_at_once_get_one_round_each_in_batches(
    engine: StudyEngine, wall: Wall, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.background.schedule.claims.DAILY_BATCH", 4)  # 11 communities: batches of 4, 4 and 3
    clock.set(utc(2026, 11, 24, 8, 0))
    refs = many_communities(engine, 11)
    by_hand = engine.rounds.open_daily(ChannelRef("console", "club03", "study"))  # opened before the time
    assert isinstance(by_hand, QuestionCard)
    scheduler = StudyScheduler(engine, clock=clock)
    clock.set(utc(2026, 11, 24, 9, 0))
    claimed = scheduler.tick()
    assert len(claimed) == 10  # club03's round was open already
    clock.set(utc(2026, 11, 24, 9, 5))
    assert scheduler.tick() == []
    drain(engine, wall)
    rounds = one_round_each(wall, refs)
    assert rounds["club03"].round_id == by_hand.round_id
    assert len({card.round_id for card in rounds.values()}) == 11
    assert all(not card.late and card.choices for card in rounds.values())
    clock.set(utc(2026, 11, 24, 21, 0))  # the windows end: each round revealed once, in its channel
    scheduler.tick()
    drain(engine, wall)
    assert sorted(card.round_id for _, card in wall.reveals()) == sorted(c.round_id for c in rounds.values())


def test_two_channels_of_one_community_in_one_batch_get_one_round_that_day(engine: StudyEngine) -> None:
    # A community has one daily round a day, whatever channel asks (issue 28: moving the
    # channel used to open a second one the same day).
    setup_community(engine, "club", "UTC")
    first, second, again = engine.dailies.open_dailies(
        [
            (ChannelRef("console", "club", "study"), False),
            (ChannelRef("console", "club", "other"), True),
            (ChannelRef("console", "club", "study"), False),
        ]
    )
    assert isinstance(first, QuestionCard) and not first.late
    assert type(second).__name__ == "AlreadyOpen" and second.round_id == first.round_id
    assert type(again).__name__ == "AlreadyOpen" and again.round_id == first.round_id
    [repeat] = engine.dailies.open_dailies([(ChannelRef("console", "club", "other"), False)])
    assert type(repeat).__name__ == "AlreadyOpen" and repeat.round_id == first.round_id


def test_schedulers_of_several_processes_claim_many_communities_at_once_each_round_once(
    db_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    clock.set(utc(2026, 11, 24, 9, 0))
    databases = [Database(db_url) for _ in range(3)]
    try:
        engines = [StudyEngine(SqlStore(db), test_bank, clock=clock) for db in databases]
        refs = many_communities(engines[0], 12)
        schedulers = [StudyScheduler(e, clock=clock) for e in engines]
        barrier = threading.Barrier(len(schedulers))
        claimed: list[list[Posted]] = []
        errors: list[Exception] = []

        def claim(s: StudyScheduler) -> None:
            try:
                barrier.wait(timeout=30)
                claimed.append(s.tick())
            except Exception as exc:  # noqa: BLE001 - surfaced below, in the test's own thread
                errors.append(exc)

        threads = [threading.Thread(target=claim, args=(s,), daemon=True) for s in schedulers]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        assert not [t.name for t in threads if t.is_alive()], "scheduler threads still running after 60 s"
        if errors:
            raise ExceptionGroup("a scheduler thread failed", errors)
        assert sum(len(posts) for posts in claimed) == 12
        wall = Wall(clock)
        drain(engines[0], wall)
        one_round_each(wall, refs)
    finally:
        for db in databases:
            db.dispose()


def test_a_batch_that_fails_opens_each_round_on_its_own_and_one_bad_community_waits(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock.set(utc(2026, 11, 24, 9, 0))
    refs = many_communities(engine, 3)
    real_open = engine.rounds.open_daily
    broken = {"club01"}

    def batch_fails(_wanted: object) -> object:
        raise RuntimeError("a bug in one community's settings")

    def open_one(channel: ChannelRef, late: bool = False) -> object:
        if channel.community_id in broken:
            raise RuntimeError("a bug in one community's settings")
        return real_open(channel, late=late)

    monkeypatch.setattr(engine.dailies, "open_dailies", batch_fails)
    monkeypatch.setattr(engine.rounds, "open_daily", open_one)
    scheduler.tick()
    assert sorted(channel.community_id for _, channel, _ in wall.posts) == ["club00", "club02"]
    broken.clear()
    clock.set(utc(2026, 11, 24, 9, 1))
    scheduler.refresh()  # the failed one is retried alone
    one_round_each(wall, refs)
    assert [at for at, _, card in wall.posts if isinstance(card, QuestionCard)][-1] == utc(2026, 11, 24, 9, 1)


def test_a_busy_database_during_a_batch_leaves_its_rounds_to_the_refresh(
    engine: StudyEngine,
    scheduler: StudyScheduler,
    wall: Wall,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock.set(utc(2026, 11, 24, 9, 0))
    refs = many_communities(engine, 3)
    real_batch = engine.dailies.open_dailies
    single: list[ChannelRef] = []
    failures = iter([StoreUnavailable("The database is busy")])

    def busy_once(wanted: list[tuple[ChannelRef, bool]]) -> object:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_batch(wanted)

    def one(channel: ChannelRef, late: bool = False) -> object:  # noqa: ARG001 - open_daily's signature
        single.append(channel)
        raise AssertionError("opened alone")

    monkeypatch.setattr(engine.dailies, "open_dailies", busy_once)
    monkeypatch.setattr(engine.rounds, "open_daily", one)
    assert scheduler.tick() == []
    assert single == []  # not tried one by one against a busy database
    clock.set(utc(2026, 11, 24, 9, 1))
    scheduler.refresh()  # all three again, together
    one_round_each(wall, refs)
    assert single == []
