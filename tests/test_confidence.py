"""How sure a member was: the console end to end (answers with and without a confidence, the
grades FSRS was given, a confident wrong answer due the next day, calibration in /score), and
the pure rules (grades, button ids, the Brier score)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from fsrs import Rating, Scheduler

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.rules import review as spaced
from bot.core.rules.calibration import MIN_ANSWERS, calibration
from bot.core.rules.confidence_rules import decode_confidence, encode_confidence, grade, split_confidence
from bot.platforms.console import Message
from tests.conftest import FakeClock
from tests.console_chat import Console


def only(messages: list[Message], kind: str) -> Message:
    found = [m for m in messages if m.kind == kind]
    assert len(found) == 1, messages
    return found[0]


def letters(question: Message, test_bank: Bank) -> tuple[str, str]:
    """The right and a wrong letter of a question as it was shown."""
    q = test_bank.get(question.data["question_id"])
    assert q is not None
    shown = question.data["choices"]
    right_at = shown.index(q.choices[q.answer_index].text)
    return "abcde"[right_at], "abcde"[(right_at + 1) % len(shown)]


def card_of(engine: StudyEngine, user_id: str, question_id: str) -> dict[str, object]:
    """The member's stored FSRS card for a question (what the scheduler was given)."""
    with engine.store.read() as tx:
        community = tx.communities.find_community("console", "club")
        assert community is not None
        member = tx.members.find_member(community.id, user_id)
        assert member is not None
        state = tx.reviews.review_state(member, question_id)
    assert state is not None
    loaded: dict[str, object] = json.loads(state)
    return loaded


def due(card: dict[str, object]) -> datetime:
    return datetime.fromisoformat(str(card["due"]))


@pytest.fixture
def chat(engine: StudyEngine) -> Iterator[Console]:
    # closed before the database is disposed: a deliverer left running reads a closed SQLite
    # connection (a segfault in CI)
    console = Console(engine, community="club", user="Ann")
    yield console
    console.close()


def test_confidence_grades_reviews_and_a_confident_miss_comes_back_tomorrow(
    chat: Console, engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    daily = only(chat.handle("/daily"), "question")
    right, wrong = letters(daily, test_bank)
    qid = daily.data["question_id"]

    # With the answer on one line: scored as ever, the confidence noted, nothing more asked.
    ann = chat.handle(f"daily {right} sure")
    feedback = only(ann, "feedback")
    assert feedback.data["correct"] is True and feedback.data["points"] == 10
    assert feedback.data["confidence"]["sure"] is True and feedback.data["confidence"]["grade"] is None
    assert "Noted: you were sure, and right." in feedback.text
    assert [m.kind for m in ann] == ["feedback"]

    # A bare letter asks; the next line answers it; a second "sure" is told the first stands.
    members = ("Bob", "Cat", "Dan", "Eve", "Fay")
    for name in members:
        chat.handle(f"/as {name}")
        asked = chat.handle(f"daily {wrong}")
        assert only(asked, "feedback").data["correct"] is False
        assert only(asked, "ask_sure").text.startswith("How sure were you?")
        if name == "Bob":
            noted = only(chat.handle("sure"), "confidence")
            assert noted.text == "You were sure: this one comes back tomorrow."
            assert noted.data["grade"] == "Again" and noted.data["due"] == clock.now + timedelta(days=1)
            again = only(chat.handle("unsure"), "already_noted")
            assert "you said you were sure" in again.text
    assert due(card_of(engine, "bob", qid)) == clock.now + timedelta(days=1)

    # Not right after an answer: "sure" says when it can be said, and records nothing.
    chat.handle("/as Cat")
    chat.handle("/score")
    assert "right after an answer" in only(chat.handle("sure"), "notice").text

    # A day later each reviews the question and gets it right, each saying something else.
    clock.advance(days=1)
    graded: dict[str, tuple[str | None, datetime]] = {}
    for name, said, wait in (
        ("Bob", " unsure", 0),  # right but unsure: Hard
        ("Cat", "", 0),  # no confidence: Good, as before
        ("Dan", " sure", 5),  # right, sure and fast on a review: Easy
        ("Eve", " sure", 120),  # right and sure, not fast: Good
        ("Fay", "", 0),  # right; "unsure" on the next line re-grades the click's Good as Hard
    ):
        chat.handle(f"/as {name}")
        review = only(chat.handle("/review"), "question")
        assert review.data["round_kind"] == "review" and review.data["question_id"] == qid
        clock.advance(seconds=wait)
        answered = only(chat.handle(letters(review, test_bank)[0] + said), "feedback")
        assert answered.data["correct"] is True and answered.data["points"] == 0
        noted = answered.data.get("confidence")
        if name == "Fay":
            noted = only(chat.handle("unsure"), "confidence").data
        graded[name] = (None if noted is None else noted["grade"], due(card_of(engine, name.lower(), qid)))
        clock.advance(seconds=-wait)
    assert {name: grade for name, (grade, _) in graded.items()} == {
        "Bob": "Hard",
        "Cat": None,
        "Dan": "Easy",
        "Eve": "Good",
        "Fay": "Hard",
    }
    hard, good, easy = graded["Bob"][1], graded["Cat"][1], graded["Dan"][1]
    assert clock.now < hard < good < easy
    assert graded["Fay"][1] == hard  # re-graded from the card as it was before the click
    assert graded["Eve"][1] - timedelta(seconds=120) == good


def test_a_confident_miss_brings_back_a_card_it_did_not_review(
    chat: Console, engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    first = only(chat.handle("/daily"), "question")
    qid = first.data["question_id"]
    chat.handle("daily " + letters(first, test_bank)[1])
    clock.advance(days=1)
    review = only(chat.handle("/review"), "question")
    only(chat.handle(letters(review, test_bank)[0]), "feedback")  # reviewed right: the card goes days out
    assert due(card_of(engine, "ann", qid)) > clock.now + timedelta(days=1)
    for _ in range(len(test_bank.questions) - 1):  # the daily rounds come round to the question again
        chat.handle("/daily")
        clock.advance(days=1)
    again = only(chat.handle("/daily"), "question")
    assert again.data["question_id"] == qid
    _, wrong = letters(again, test_bank)
    without = only(chat.handle(f"daily {wrong}"), "feedback")  # no confidence: an existing card keeps its schedule
    before = due(card_of(engine, "ann", qid))
    assert "confidence" not in without.data
    noted = only(chat.handle("sure"), "confidence")
    assert noted.text == "You were sure: this one comes back tomorrow." and noted.data["grade"] == "Again"
    assert due(card_of(engine, "ann", qid)) == clock.now + timedelta(days=1) != before


def test_calibration_in_score_after_enough_answers(chat: Console, clock: FakeClock, test_bank: Bank) -> None:
    assert only(chat.handle("/score"), "score").data["calibration"] is None
    outcomes = [(True, True)] * 6 + [(False, True)] * 2 + [(True, False), (False, False)]
    for day, (right_answer, sure) in enumerate(outcomes):
        daily = only(chat.handle("/daily"), "question")
        right, wrong = letters(daily, test_bank)
        chat.handle(f"daily {right if right_answer else wrong} {'sure' if sure else 'unsure'}")
        if day == 2:
            early = only(chat.handle("/score"), "score")
            assert early.data["calibration"] == {"sure": [3, 3], "unsure": [0, 0], "brier": None, "needed": 7}
            assert "Calibration shows after 7 more answers with sure or unsure." in early.text
        clock.advance(days=1)
    chat.handle(f"daily {wrong}")  # an answer without a confidence is not counted
    score = only(chat.handle("/score"), "score")
    expected = (6 * 0.1**2 + 2 * 0.9**2 + 0.5**2 + 0.5**2) / 10
    assert score.data["calibration"] == {"sure": [6, 8], "unsure": [1, 2], "brier": round(expected, 3), "needed": 0}
    assert "When sure: 6/8 (75%) right; when unsure: 1/2 (50%) right." in score.text
    assert f"Calibration (Brier score; 0 is perfect, 0.25 a coin toss): {expected:.3f}." in score.text


# ------------------------------------------------------------------ the pure rules


def test_grades() -> None:
    assert grade(False, True, "review", 1) is Rating.Again
    assert grade(False, None, "daily") is Rating.Again
    assert grade(True, None, "review", 1) is Rating.Good  # no confidence: today's mapping
    assert grade(True, False, "review", 1) is Rating.Hard
    assert grade(True, True, "review", 1) is Rating.Easy
    assert grade(True, True, "review", 60) is Rating.Good
    assert grade(True, True, "daily", 1) is Rating.Good  # Easy only on a review


def test_button_ids_and_lines() -> None:
    assert encode_confidence(42, True) == "sb1:cf:42:s" and decode_confidence("sb1:cf:42:u") == (42, False)
    for bad in ("sb1:cf:0:s", "sb1:cf:042:s", "sb1:cf:42:x", "sb1:cf:42:s ", "sb1:a:42:1", None, "sb1:cf:" + "9" * 99):
        assert decode_confidence(bad) is None
    assert split_confidence("b sure") == ("b", True) and split_confidence("B)  UNSURE") == ("B)", False)
    assert split_confidence("sure") == ("sure", None) and split_confidence("b") == ("b", None)


def test_calibration_counts() -> None:
    assert calibration({}) is None
    few = calibration({("sure", True): 2, ("unsure", False): 1})
    assert few is not None and few.brier is None and few.needed == MIN_ANSWERS - 3
    perfect_ish = calibration({("sure", True): 9, ("sure", False): 1})
    assert perfect_ish is not None and perfect_ish.brier == pytest.approx(0.09)
    coin = calibration({("unsure", True): 5, ("unsure", False): 5})
    assert coin is not None and coin.brier == pytest.approx(0.25) and coin.unsure.accuracy == 0.5


def test_parameters_pick_their_own_scheduler() -> None:
    now = datetime(2026, 11, 23, 9, tzinfo=timezone.utc)
    state, _ = spaced.first_miss(1, now)
    default = spaced.after_review(state, True, now + timedelta(days=1))
    assert spaced.after_review(state, True, now + timedelta(days=1), None) == default
    weights = tuple(w * 5 if i == 0 else w for i, w in enumerate(spaced.scheduler().parameters))
    # each set of weights schedules with those weights, None with FSRS's defaults, whatever was asked before
    assert tuple(spaced.scheduler(weights).parameters) == weights
    assert tuple(spaced.scheduler().parameters) == tuple(Scheduler().parameters) != weights
    fitted, fitted_due = spaced.first_miss(1, now, weights)
    assert spaced.first_miss(1, now)[0] == state and spaced.first_miss(1, now, weights) == (fitted, fitted_due)
    assert json.loads(fitted)["stability"] == pytest.approx(5 * json.loads(state)["stability"])
