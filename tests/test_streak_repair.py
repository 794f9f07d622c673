"""Streak repair: a missed daily round earned back by clearing the due reviews within 48 hours
of its close, at most once a week; the console end to end, and the rules on their own."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from aiohttp.test_utils import TestClient, TestServer

from bot.core.engine import StudyEngine
from bot.core.records import DailyOutcome
from bot.core.rules import choices as codec
from bot.core.services.streak_repair import DailyDay, breaking_miss, counted_days, repair_open
from bot.core.values import ChannelRef, CommunityRef, QuestionCard, letter
from bot.platforms.console import Message
from bot.web.app import build_app
from bot.web.links import WebLinks
from tests.conftest import FakeClock
from tests.console_chat import Console

CHANNEL = ChannelRef("console", "club", "console")


def right_letter(engine: StudyEngine, round_id: int) -> str:
    with engine.store.read() as tx:
        row = tx.rounds.get_round(round_id)
    question = engine.bank.get(row.question_id)
    assert question is not None
    order = codec.parse_order(row.choice_order, len(question.choices))
    return letter(order.index(question.answer_index))


def wrong_letter(engine: StudyEngine, round_id: int) -> str:
    return "a" if right_letter(engine, round_id).lower() != "a" else "b"


def one(messages: list[Message], kind: str) -> Message:
    found = [m for m in messages if m.kind == kind]
    assert len(found) == 1, messages
    return found[0]


def day(engine: StudyEngine, clock: FakeClock, when: datetime) -> int:
    """The scheduler's daily round at `when`: opened (the post goes through the outbox)."""
    clock.set(when)
    card = engine.rounds.open_daily(CHANNEL)
    assert isinstance(card, QuestionCard)
    return card.round_id


def close(engine: StudyEngine, clock: FakeClock, round_id: int, when: datetime) -> None:
    clock.set(when)
    engine.rounds.close_round(round_id)


def answer_daily(chat: Console, who: str, round_id: int, right: bool = True) -> Message:
    chat.handle(f"/as {who}")
    engine = chat.engine
    choice = right_letter(engine, round_id) if right else wrong_letter(engine, round_id)
    feedback = one(chat.handle(f"daily {choice}"), "feedback")
    assert feedback.data["round_id"] == round_id and feedback.data["correct"] is right
    return feedback


def miss_a_quiz(chat: Console, who: str) -> None:
    """A /quiz question answered wrong: a review card, due the next day."""
    chat.handle(f"/as {who}")
    question = one(chat.handle("/quiz"), "question")
    feedback = one(chat.handle(wrong_letter(chat.engine, question.data["round_id"])), "feedback")
    assert feedback.data["correct"] is False


def review_all(chat: Console, who: str, right: bool) -> list[Message]:
    """/review until nothing is due; the feedback of each review."""
    chat.handle(f"/as {who}")
    feedbacks = []
    for _ in range(10):
        shown = chat.handle("/review")
        questions = [m for m in shown if m.kind == "question"]
        if not questions:
            assert [m.kind for m in shown] == ["notice"] and "due" in shown[0].text, shown
            return feedbacks
        round_id = questions[0].data["round_id"]
        line = right_letter(chat.engine, round_id) if right else wrong_letter(chat.engine, round_id)
        feedbacks.append(one(chat.handle(line), "feedback"))
    raise AssertionError("reviews never ran out")


def score(chat: Console, who: str) -> Message:
    chat.handle(f"/as {who}")
    return one(chat.handle("/score"), "score")


def at(days: int, hour: int) -> datetime:
    """Monday 23 November 2026 plus `days`, at `hour` UTC."""
    return datetime(2026, 11, 23, hour, tzinfo=timezone.utc) + timedelta(days=days)


def test_a_missed_day_is_earned_back_by_reviews_within_48_hours_once_a_week(
    engine: StudyEngine, clock: FakeClock
) -> None:
    chat = Console(engine, community="club", user="Ann")
    try:
        # Monday and Tuesday: Ann and Bob answer right; each misses a /quiz question (a review)
        monday = day(engine, clock, at(0, 9))
        for who in ("Ann", "Bob"):
            answer_daily(chat, who, monday)
            miss_a_quiz(chat, who)
        close(engine, clock, monday, at(0, 21))
        tuesday = day(engine, clock, at(1, 9))
        for who in ("Ann", "Bob"):
            answer_daily(chat, who, tuesday)
        close(engine, clock, tuesday, at(1, 21))
        # Wednesday: neither answers
        wednesday = day(engine, clock, at(2, 9))
        close(engine, clock, wednesday, at(2, 21))
        clock.set(at(3, 8))
        broken = score(chat, "Ann")
        assert (broken.data["streak"], broken.data["best_streak"]) == (0, 2)
        assert broken.data["repair_open"] == "2026-11-25"
        assert (
            "You missed the daily round of 2026-11-25, which broke your streak: clear your 1 due review "
            "(/review) by Fri 27 Nov 21:00 UTC to earn it back."
        ) in broken.text
        # Thursday: both answer right; Ann clears her reviews (one answered wrong: due again Friday)
        thursday = day(engine, clock, at(3, 9))
        for who in ("Ann", "Bob"):
            answer_daily(chat, who, thursday)
        clock.set(at(3, 10))
        [repairing] = review_all(chat, "Ann", right=False)
        assert repairing.data["streak_repaired"] == "2026-11-25"
        assert "the daily round of 2026-11-25 you missed counts for your streak again" in repairing.text
        repaired = score(chat, "Ann")
        assert (repaired.data["streak"], repaired.data["best_streak"]) == (4, 4)
        assert repaired.data["repaired"] == ["2026-11-25"] and repaired.data["repair_open"] is None
        assert "Repaired 1 day of your streak: 2026-11-25." in repaired.text
        # Thursday's round; the repaired day itself earns nothing
        assert repaired.data["total_points"] == broken.data["total_points"] + 10
        close(engine, clock, thursday, at(3, 21))
        # Friday: Ann misses again; Bob answers
        friday = day(engine, clock, at(4, 9))
        answer_daily(chat, "Bob", friday)
        close(engine, clock, friday, at(4, 21))
        # Saturday: Bob clears his reviews past Wednesday's 48 hours: Wednesday stays missed
        clock.set(at(5, 10))
        late = review_all(chat, "Bob", right=True)
        assert late and all("streak_repaired" not in f.data for f in late)
        bob = score(chat, "Bob")
        assert (bob.data["streak"], bob.data["best_streak"]) == (2, 2)
        assert bob.data["repaired"] == [] and bob.data["repair_open"] is None
        assert "missed" not in bob.text and "Repaired" not in bob.text
        # and Ann's second miss within the week cannot be repaired, which /score says
        refused = review_all(chat, "Ann", right=True)
        assert refused and all("streak_repaired" not in f.data for f in refused)
        ann = score(chat, "Ann")
        assert (ann.data["streak"], ann.data["best_streak"]) == (0, 4)
        assert ann.data["repaired"] == ["2026-11-25"]
        assert (
            "You missed the daily round of 2026-11-27, which broke your streak. A streak can be repaired "
            "once a week; the next repair is possible from Thu 3 Dec 10:00 UTC."
        ) in ann.text
    finally:
        chat.close()


async def test_the_member_page_shows_the_repaired_day(engine: StudyEngine, clock: FakeClock) -> None:
    chat = Console(engine, community="club", user="Ann")
    try:
        first = day(engine, clock, at(0, 9))
        answer_daily(chat, "Ann", first)
        miss_a_quiz(chat, "Ann")
        close(engine, clock, first, at(0, 21))
        missed = day(engine, clock, at(1, 9))
        close(engine, clock, missed, at(1, 21))
        clock.set(at(2, 10))
        [feedback] = review_all(chat, "Ann", right=True)
        assert feedback.data["streak_repaired"] == "2026-11-24"
    finally:
        chat.close()
    links = WebLinks("http://127.0.0.1", "test-web-secret-not-for-production", 3600)
    async with TestClient(TestServer(build_app(engine, links))) as client:
        path = links.member(CommunityRef("console", "club"), "ann").removeprefix("http://127.0.0.1")
        response = await client.get(path)
        html = await response.text()
    assert response.status == 200, html
    assert "<dd>2 (best 2), 1 repaired</dd>" in html
    assert "Repaired 1 day of your streak: 2026-11-24." in html


def test_a_wrong_answer_or_two_misses_in_a_row_are_not_repairable() -> None:
    now = at(3, 10)

    def days(*outcomes: bool | None) -> list[DailyDay]:
        return [DailyDay(10 - i, f"d{i}", now - timedelta(hours=13 + 24 * i), o) for i, o in enumerate(outcomes)]

    assert breaking_miss(days(True, None, True)) == days(True, None, True)[1]
    assert breaking_miss(days(True, False, True)) is None  # a wrong answer is an answer
    assert breaking_miss(days(None, None, True)) is None  # two missed in a row
    assert breaking_miss(days(None)) is None  # no streak to keep
    assert breaking_miss(days(True, True)) is None
    miss = days(None, True)[0]
    assert repair_open(miss, None, now) == (miss.ended + timedelta(hours=48), None)  # type: ignore[operator]
    assert repair_open(miss, None, miss.ended + timedelta(hours=48, seconds=1)) is None  # type: ignore[operator]
    week_ago = now - timedelta(days=6)
    assert repair_open(miss, week_ago, now) == (miss.ended + timedelta(hours=48), week_ago + timedelta(days=7))  # type: ignore[operator]


def test_an_open_round_not_yet_answered_neither_breaks_nor_counts() -> None:
    now = at(3, 10)
    history = [
        DailyOutcome(3, "2026-11-26", None, at(3, 21), None),  # open today
        DailyOutcome(2, "2026-11-25", at(2, 21), at(2, 21), None),  # missed, repaired
        DailyOutcome(1, "2026-11-24", at(1, 21), at(1, 21), True),
    ]
    counted = counted_days(history, {2: at(3, 9)}, now)
    assert [(d.round_id, d.outcome) for d in counted] == [(2, True), (1, True)]
