"""The rules of the platform seam (issue 8): the button codec, the shown order of choices, the
two bugs it fixed (one daily round per community, a forgotten member's first answer stays
final), the bridge, one wording for every platform, demo names and result cards, which
platforms `studybot run` starts. What each layer may import: tests/test_import_graph.py."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from bot.background.bridge import Bridge, guarded
from bot.config import Settings
from bot.core import wording
from bot.core.bank import Bank, Question
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput, NotFound, StudyBotError
from bot.core.rules import choices as codec
from bot.core.rules.demo_request import CHOICES, PRESETS, STRATEGIES, parse_demo
from bot.core.rules.demo_result import MIB, result_card
from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ChannelRef,
    ChoiceReveal,
    CommunityRef,
    ConfigCard,
    ConfirmForget,
    DemoResultCard,
    Forgotten,
    LeaderboardCard,
    LeaderboardRow,
    NothingDue,
    Problem,
    QuestionCard,
    RevealCard,
    RoundClosed,
    ScoreCard,
    StatsLine,
    UserRef,
    letter,
)
from bot.platforms.console import render
from bot.platforms.launch import LaunchError, choose_platforms
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import ROOT, TEST_BANK, FakeClock

CH = ChannelRef("console", "guild", "general")
COMMUNITY = CommunityRef("console", "guild")


def user(name: str, community: str = "guild") -> UserRef:
    return UserRef("console", community, name.lower(), name)


@pytest.fixture
def seeded(monkeypatch: pytest.MonkeyPatch) -> random.Random:
    """The order each round draws, from a seeded generator so that every run is the same."""
    rng = random.Random(20261123)
    monkeypatch.setattr(codec, "_RANDOM", rng)
    return rng


def question_of(bank: Bank, card: QuestionCard) -> Question:
    question = bank.get(card.question_id)
    assert question is not None
    return question


def shown_right(bank: Bank, card: QuestionCard) -> int:
    """Where the card shows the right answer (each round draws its own order)."""
    question = question_of(bank, card)
    return card.choices.index(question.choices[question.answer_index].text)


def open_round(engine: StudyEngine, channel: ChannelRef = CH) -> QuestionCard:
    card = engine.rounds.open_daily(channel)
    assert isinstance(card, QuestionCard)
    return card


# ------------------------------------------------------------------ button ids

ROUND_SAMPLES = (1, 2, 9, 10, 99, 100, 12_345, 2**31 - 1, 2**31, 2**63 // 10**1, 10**18 - 1)


@pytest.mark.parametrize("round_id", ROUND_SAMPLES)
@pytest.mark.parametrize("choice", range(5))
def test_button_ids_round_trip(round_id: int, choice: int) -> None:
    encoded = codec.encode_answer(round_id, choice)
    assert len(encoded) <= codec.MAX_ID == 100  # Discord's custom_id limit
    assert codec.decode_answer(encoded) == (round_id, choice)


@pytest.mark.parametrize(
    "tampered",
    [
        "",
        "sb1:a:",
        "sb1:a:5",
        "sb1:a:5:",
        "sb1:a::1",
        "sb2:a:5:1",  # another prefix
        "SB1:a:5:1",
        "sb1:A:5:1",
        "sb1:b:5:1",
        "xsb1:a:5:1",
        "round:5:1",
        "sb1:a:-5:1",  # negative
        "sb1:a:5:-1",
        "sb1:a:+5:1",
        "sb1:a:05:1",  # leading zero
        "sb1:a:0:1",  # no round 0
        "sb1:a:5:01",
        "sb1:a:5:5",  # only choices 0-4
        "sb1:a:5:9",
        "sb1:a:5:1x",  # extra characters
        "sb1:a:5:1:2",
        "sb1:a:5.0:1",
        "sb1:a:5:1.0",
        "sb1:a:0x5:1",
        "sb1:a:\u0665:1",  # an Arabic-Indic five
        " sb1:a:5:1",  # whitespace
        "sb1:a:5:1 ",
        "sb1:a:5:1\n",
        "sb1:a: 5:1",
        "sb1:a:5\t:1",
        "sb1:a:5:1" + " " * 92,  # 101 characters
        "sb1:a:" + "1" * 95 + ":1",  # 103 characters
        "sb1:a:" + "9" * 19 + ":1",  # more than 18 digits
        "sb1:a:" + "1" * 1000 + ":1",
    ],
)
def test_button_ids_that_were_tampered_with_decode_to_none(tampered: str) -> None:
    assert codec.decode_answer(tampered) is None


@pytest.mark.parametrize("value", [None, 5, 5.0, b"sb1:a:5:1", bytearray(b"sb1:a:5:1"), ("sb1:a:5:1",), ["sb1:a:5:1"]])
def test_button_ids_that_are_not_text_decode_to_none(value: object) -> None:
    assert codec.decode_answer(value) is None


@pytest.mark.parametrize(("round_id", "choice"), [(0, 0), (-1, 0), (1, -1), (1, 5)])
def test_there_is_no_button_for_an_impossible_answer(round_id: int, choice: int) -> None:
    with pytest.raises(ValueError):
        codec.encode_answer(round_id, choice)


def test_the_longest_button_id_fits_every_platform() -> None:
    longest = codec.encode_answer(10**18 - 1, 4)
    assert len(longest) <= 100
    assert codec.decode_answer(longest) == (10**18 - 1, 4)


# ---------------------------------------------------------------- choice order


@pytest.mark.usefixtures("seeded")
def test_the_right_answer_lands_on_every_position_evenly(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> None:
    four = [q for q in test_bank.questions if len(q.choices) == 4]
    assert four, "the test bank needs a question with four choices"
    bank = Bank.of(four)
    topic = four[0].topic
    assert all(q.topic == topic for q in four)
    database = Database(sqlite_url)
    try:
        engine = StudyEngine(SqlStore(database), bank, clock=clock)
        ann = user("Ann")
        positions: Counter[int] = Counter()
        rounds = 1000
        for _ in range(rounds):
            card = engine.practice.quiz(ann, CH, topic)
            question = question_of(bank, card)
            assert sorted(card.choices) == sorted(c.text for c in question.choices)  # a permutation
            positions[shown_right(bank, card)] += 1
            clock.advance(seconds=1)
    finally:
        database.dispose()
    assert sum(positions.values()) == rounds
    for position in range(4):
        share = positions[position] / rounds
        assert 0.20 <= share <= 0.30, f"{letter(position)} holds the answer {share:.1%} of the time: {positions}"


def test_file_order_is_kept_when_no_order_fits() -> None:
    assert codec.parse_order("2,0,3,1", 4) == (2, 0, 3, 1)
    assert codec.parse_order(None, 3) == (0, 1, 2)  # rounds from before the seam
    assert codec.parse_order("2,0,1", 4) == (0, 1, 2, 3)  # the question gained a choice since
    assert codec.parse_order("0,0,1", 3) == (0, 1, 2)
    assert codec.parse_order("0,1,x", 3) == (0, 1, 2)
    order = codec.draw_order(5, random.Random(1))
    assert codec.parse_order(codec.format_order(order), 5) == order


@pytest.mark.usefixtures("seeded")
def test_a_round_shows_one_order_to_everyone_and_after_a_restart(
    db_url: str, engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    card = open_round(engine)
    (delivery,) = engine.outbox.due_posts("console", "worker")  # the card rebuilt from the database
    assert isinstance(delivery.card, QuestionCard)
    assert delivery.card.choices == card.choices

    database = Database(db_url)  # a restart: another engine on the same database
    try:
        restarted = StudyEngine(SqlStore(database), test_bank, clock=clock)
        for index, name in enumerate(["Ann", "Bob", "Cy", "Di", "Ed"][: len(card.choices)]):
            answering = engine if index % 2 else restarted
            feedback = answering.rounds.answer(user(name), card.round_id, index)
            assert isinstance(feedback, AnswerFeedback)
            assert feedback.chosen == letter(index)
            assert feedback.chosen_text == card.choices[index]
            assert feedback.answer == letter(shown_right(test_bank, card))
            assert feedback.correct == (index == shown_right(test_bank, card))
        again = restarted.rounds.answer(user("Ann"), card.round_id, 1)
        assert again == AlreadyAnswered(round_id=card.round_id, number=card.number, chosen="A")
    finally:
        database.dispose()


@pytest.mark.usefixtures("seeded")
def test_a_text_answer_by_letter_uses_the_shown_order(engine: StudyEngine, test_bank: Bank) -> None:
    for number in range(40):  # a round whose shuffle moved the right answer (one a community a day)
        community = f"guild-{number}"
        channel = ChannelRef("console", community, "room")
        card = open_round(engine, channel)
        question = question_of(test_bank, card)
        if shown_right(test_bank, card) != question.answer_index:
            break
    else:
        pytest.fail("no round moved its right answer in 40 draws")
    right = shown_right(test_bank, card)

    by_shown = engine.rounds.answer_text(user("Ann", community), channel, f"daily {letter(right).lower()})")
    assert isinstance(by_shown, AnswerFeedback) and by_shown.correct and by_shown.chosen == letter(right)
    by_file = engine.rounds.answer_text(user("Bob", community), channel, "daily " + letter(question.answer_index))
    assert isinstance(by_file, AnswerFeedback) and not by_file.correct
    assert by_file.chosen_text == card.choices[question.answer_index]
    by_text = engine.rounds.answer_text(
        user("Cy", community), channel, "daily " + question.choices[question.answer_index].text.upper()
    )
    assert isinstance(by_text, AnswerFeedback) and by_text.correct and by_text.chosen == letter(right)


@pytest.mark.usefixtures("seeded")
def test_the_reveal_and_its_counts_speak_the_shown_letters(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    picks = {"Ann": 0, "Bob": 0, "Cy": 1}
    for name, index in picks.items():
        assert isinstance(engine.rounds.answer(user(name), card.round_id, index), AnswerFeedback)
    reveal = engine.rounds.close_round(card.round_id)
    assert isinstance(reveal, RevealCard)
    right = shown_right(test_bank, card)
    assert reveal.answer == letter(right)
    assert [c.letter for c in reveal.choices] == [letter(i) for i in range(len(card.choices))]
    assert tuple(c.text for c in reveal.choices) == card.choices
    assert [c.correct for c in reveal.choices] == [i == right for i in range(len(card.choices))]
    assert [c.count for c in reveal.choices] == [2, 1] + [0] * (len(card.choices) - 2)
    assert reveal.answered == 3
    rendered = render(reveal)[0]
    assert rendered.data["counts"] == {letter(i): c.count for i, c in enumerate(reveal.choices)}


# --------------------------------------------------------------- issue 8's bugs


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (ChannelRef("console", "club", "console"), ChannelRef("console", "other", "console")),
        (ChannelRef("slack", "T0001", "C0SHARED"), ChannelRef("slack", "T0002", "C0SHARED")),  # Slack Connect
    ],
)
def test_two_communities_with_one_channel_id_each_get_their_daily_round(
    engine: StudyEngine, first: ChannelRef, second: ChannelRef
) -> None:
    one = engine.rounds.open_daily(first)
    two = engine.rounds.open_daily(second)
    assert isinstance(one, QuestionCard) and isinstance(two, QuestionCard)
    assert one.round_id != two.round_id
    again_one, again_two = engine.rounds.open_daily(first), engine.rounds.open_daily(second)
    assert isinstance(again_one, AlreadyOpen) and again_one.round_id == one.round_id
    assert isinstance(again_two, AlreadyOpen) and again_two.round_id == two.round_id
    for channel, card in ((first, one), (second, two)):
        (delivery,) = engine.outbox.due_posts(channel.platform, "worker", channel.community_id)
        assert delivery.channel == channel and isinstance(delivery.card, QuestionCard)
        assert delivery.card.round_id == card.round_id


def forgotten_markers(db_url: str) -> list[tuple[int, str]]:
    db = create_engine(db_url)
    try:
        with db.connect() as conn:
            return [(r, k) for r, k in conn.execute(text("SELECT round_id, user_key FROM forgotten_answers"))]
    finally:
        db.dispose()


def test_forgetting_a_member_does_not_let_them_answer_again(
    db_url: str, engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    card = open_round(engine)
    right = shown_right(test_bank, card)
    wrong = (right + 1) % len(card.choices)
    ann, bob = user("Ann"), user("Bob")
    first = engine.rounds.answer(ann, card.round_id, wrong)
    assert isinstance(first, AnswerFeedback) and not first.correct
    assert isinstance(engine.rounds.answer(bob, card.round_id, right), AnswerFeedback)

    assert engine.admin.forget_me(ann) == ConfirmForget(user="Ann", answers=1)
    assert engine.admin.forget_me(ann, confirm=True) == Forgotten(user="Ann", answers_deleted=1)

    # the data is gone: no answer, no score, no row in the export, no place on the board
    assert [row["user_id"] for row in engine.admin.export_rows(COMMUNITY)] == ["bob"]
    markers = forgotten_markers(db_url)
    assert [r for r, _ in markers] == [card.round_id]
    assert all("ann" not in key.lower() for _, key in markers)  # only a salted hash is kept

    # and yet the first answer stays final
    assert engine.rounds.answer(ann, card.round_id, right) == AlreadyAnswered(
        round_id=card.round_id, number=card.number, chosen=None
    )
    assert engine.rounds.answer_text(ann, CH, "daily " + letter(right)) == AlreadyAnswered(
        round_id=card.round_id, number=card.number, chosen=None
    )
    assert engine.boards.score(ann).total_points == 0 and engine.boards.score(ann).week_points == 0
    board = engine.boards.leaderboard(COMMUNITY)
    assert [row.user for row in board.rows] == ["Bob"]
    assert [row.user for row in engine.boards.leaderboard(COMMUNITY, all_time=True).rows] == ["Bob"]
    assert [row["user_id"] for row in engine.admin.export_rows(COMMUNITY)] == ["bob"]

    reveal = engine.rounds.close_round(card.round_id)
    assert isinstance(reveal, RevealCard)
    assert forgotten_markers(db_url) == []  # the marker goes with the open round
    assert isinstance(engine.rounds.answer(ann, card.round_id, right), RoundClosed)

    clock.advance(days=1)  # forgetting is not a ban: tomorrow's round counts
    tomorrow = open_round(engine)
    again = engine.rounds.answer(ann, tomorrow.round_id, shown_right(test_bank, tomorrow))
    assert isinstance(again, AnswerFeedback) and again.correct and again.points > 0


def test_forgetting_a_member_who_did_not_answer_leaves_no_marker(db_url: str, engine: StudyEngine) -> None:
    card = open_round(engine)
    engine.practice.quiz(user("Ann"), CH)  # known in the community, but the daily round is unanswered
    assert isinstance(engine.admin.forget_me(user("Ann"), confirm=True), Forgotten)
    assert forgotten_markers(db_url) == []
    assert isinstance(engine.rounds.answer(user("Ann"), card.round_id, 0), AnswerFeedback)


# ---------------------------------------------------------------------- bridge


def test_a_study_bot_error_becomes_its_own_sentence(caplog: pytest.LogCaptureFixture) -> None:
    def refuse() -> None:
        raise InvalidInput("Choose one of A, B, C.")

    with caplog.at_level("DEBUG"):
        problem = guarded(refuse)
    assert problem == Problem("Choose one of A, B, C.")
    assert problem.incident is None
    assert [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")] == []
    assert guarded(lambda: 42) == 42


def test_a_bug_becomes_an_apology_with_an_incident_id_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> int:
        table: dict[str, int] = {}
        return table["missing-key"]

    with caplog.at_level("ERROR"):
        problem = guarded(broken)
    assert isinstance(problem, Problem)
    assert problem.incident is not None and re.fullmatch(r"[0-9a-f]{8}", problem.incident)
    assert problem.text == wording.BUG.format(incident=problem.incident)
    assert "missing-key" not in problem.text  # the user never sees the internals
    (record,) = [r for r in caplog.records if problem.incident in r.getMessage()]
    assert record.levelname == "ERROR"
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert "Traceback" in caplog.text and "missing-key" in caplog.text


async def test_the_bridge_handles_errors_as_the_console_does(caplog: pytest.LogCaptureFixture) -> None:
    def not_found() -> None:
        raise NotFound("There is no question #7 in this community.")

    def broken() -> None:
        raise RuntimeError("bug")

    bridge = Bridge(threads=2)
    try:
        assert await bridge.call(not_found) == Problem("There is no question #7 in this community.")
        with caplog.at_level("ERROR"):
            problem = await bridge.call(broken)
        assert isinstance(problem, Problem) and problem.incident
        assert any(problem.incident in r.getMessage() and r.exc_info for r in caplog.records)

        def add(a: int, b: int = 0) -> int:
            return a + b

        assert await bridge.call(add, 2, b=3) == 5
        with pytest.raises(RuntimeError):  # run: errors reach the deliverer and the scheduler
            await bridge.run(broken)
        with pytest.raises(StudyBotError):
            await bridge.run(not_found)
    finally:
        bridge.close()


async def test_the_bridge_never_runs_more_calls_than_its_threads() -> None:
    threads = 4
    lock = threading.Lock()
    running = 0
    most = 0
    together = threading.Barrier(threads)  # passes only when `threads` calls run at once

    def blocking(number: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        try:
            together.wait(timeout=60)
        finally:
            with lock:
                running -= 1
        return number

    bridge = Bridge(threads=threads)
    try:
        results = await asyncio.gather(*(bridge.call(blocking, n) for n in range(64)))
    finally:
        bridge.close()
    assert results == list(range(64))  # every call completed, none became a Problem
    assert most == threads


async def test_the_event_loop_keeps_serving_while_engine_calls_block() -> None:
    ticks = 0
    released = threading.Event()

    async def ticker() -> None:
        nonlocal ticks
        while ticks < 5:
            await asyncio.sleep(0.01)
            ticks += 1
        released.set()  # only a loop that kept running gets here

    def blocking() -> bool:
        return released.wait(timeout=60)

    bridge = Bridge(threads=4)
    try:
        tick = asyncio.create_task(ticker())
        results = await asyncio.gather(*(bridge.call(blocking) for _ in range(4)))
        await tick
    finally:
        bridge.close()
    assert results == [True] * 4
    assert ticks == 5


async def test_engine_calls_through_the_bridge(engine: StudyEngine, test_bank: Bank) -> None:
    bridge = Bridge(threads=4)
    try:
        card = await bridge.call(engine.rounds.open_daily, CH)
        assert isinstance(card, QuestionCard)
        right = shown_right(test_bank, card)
        answers = await asyncio.gather(
            *(bridge.call(engine.rounds.answer, user(f"u{i}"), card.round_id, right) for i in range(16))
        )
        assert all(isinstance(a, AnswerFeedback) and a.correct for a in answers)
        repeat = await asyncio.gather(
            *(bridge.call(engine.rounds.answer, user("u0"), card.round_id, 0) for _ in range(8))
        )
        assert set(repeat) == {AlreadyAnswered(card.round_id, card.number, letter(right))}
        missing = await bridge.call(engine.rounds.answer, user("u0"), 10_000, 0)
        assert missing == Problem(wording.NOT_THIS_COMMUNITYS_QUESTION)  # the row id is never shown
    finally:
        bridge.close()


# --------------------------------------------------------------------- wording

CLOSES = datetime(2026, 11, 23, 21, 0, tzinfo=timezone.utc)
QUESTION = QuestionCard(  # the row id (7000) is shared by every community; members see the number (7)
    7000, 7, "t-trade", "daily", "fundamentals", 1, "What is traded?", ("Memory", "Compute", "Disk"), CLOSES
)
RIGHT = AnswerFeedback(7000, 7, "daily", True, 10, "B", "Compute", "B", "Compute", "It reruns.", None)
WRONG = AnswerFeedback(7000, 7, "daily", False, 0, "A", "Memory", "C", "Extra compute", "Nothing is lost.", "A trap.")
STREAK = AnswerFeedback(7000, 7, "daily", True, 12, "B", "Compute", "B", "Compute", "It reruns.", None, streak_bonus=2)
REVEAL = RevealCard(
    7000,
    7,
    "t-trade",
    "What is traded?",
    "B",
    "Compute",
    (ChoiceReveal("A", "Memory", False, "No.", 3), ChoiceReveal("B", "Compute", True, "Yes.", 5)),
    "Checkpointing recomputes.",
    "A trap.",
    ("https://example.org/ref",),
    "general",
    8,
    "msg-1",
)
SCORE = ScoreCard("Ann", "2026-W48", 20, 1, 50, StatsLine(3, 2), StatsLine(4, 1), 2, 3, 1)
BOARD = LeaderboardCard("guild", "2026-W48", (LeaderboardRow(1, "Ann", 20), LeaderboardRow(2, "Bob", 10)))
DEMO = DemoResultCard(
    "demos.checkpoint", "Checkpoint demo:", ("strategy", "peak MiB"), (("none", "1.00"),), (), None, 1.5
)

RENDERED: list[tuple[object, list[str]]] = [  # what a member reads, written out (not the wording's own calls)
    (
        QUESTION,
        [
            "Daily question #7 [fundamentals, level 1]",
            "A) Memory",
            "B) Compute",
            "C) Disk",
            "Answer with daily and a letter (daily b) or daily and the choice's text; a daily answer is final.",
        ],
    ),
    (
        RIGHT,
        [
            "Correct! +10 points",
            "You chose B) Compute: It reruns.",
            "This answered daily round #7; a daily answer is final.",
        ],
    ),
    (
        WRONG,
        ["Not quite: the answer is C) Extra compute.", "You chose A) Memory: Nothing is lost.", "Common trap: A trap."],
    ),
    (STREAK, ["Correct! +12 points (streak bonus +2)"]),
    (AlreadyAnswered(7000, 7, "B"), ["You already answered B; your first answer is the one that counts."]),
    (
        AlreadyAnswered(7000, 7, None),
        ["You answered this round before you asked to be forgotten; that first answer stays final."],
    ),
    (
        RoundClosed(7000, 7, "C"),
        ["Round #7 is closed, so this answer was not scored. The answer was C.", "The answer was C."],
    ),
    (
        REVEAL,
        [
            "Answer to #7: B) Compute",
            "A) Memory [3 picked, wrong]: No.",
            "B) Compute [5 picked, right]: Yes.",
            "Read more: https://example.org/ref",
        ],
    ),
    (AlreadyOpen(7000, 7, "2026-11-23"), ["Today's round (#7, 2026-11-23) is already open here."]),
    (
        SCORE,
        [
            "Ann: 20 points in 2026-W48 (rank 1), 50 all time.",
            "Daily accuracy 2/3 (67%); practice 1/4 (25%).",
            "Streak 2 (best 3). Reviews due: 1.",
        ],
    ),
    (BOARD, ["Leaderboard for 2026-W48", "1. Ann: 20", "2. Bob: 10"]),
    (LeaderboardCard("guild", "all", ()), ["All-time leaderboard", "No points yet."]),
    (NothingDue(None), ["No reviews are due."]),
    (
        ConfirmForget("Ann", 2),
        ["This deletes everything stored about Ann here (2 answers). Type /forget-me confirm to go ahead."],
    ),
    (Forgotten("Ann", 2), ["Done: 2 answers and your reviews are deleted."]),
    (ConfigCard("guild", (("timezone", "UTC"),), alerts=("Could not post.",)), ["timezone: UTC", "Could not post."]),
    (Problem("Say who: /as NAME."), ["Say who: /as NAME."]),
    (DEMO, ["Checkpoint demo:", "strategy  peak MiB", "none          1.00"]),
]


@pytest.mark.parametrize(("card", "sentences"), RENDERED, ids=[type(c).__name__ for c, _ in RENDERED])
def test_the_console_lays_out_the_shared_wording(card: object, sentences: list[str]) -> None:
    shown = "\n".join(message.text for message in render(card))
    for sentence in sentences:
        assert sentence in shown


def test_engine_feedback_reads_as_the_wording_says(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    question = question_of(test_bank, card)
    right = shown_right(test_bank, card)
    good = engine.rounds.answer(user("Ann"), card.round_id, right)
    bad = engine.rounds.answer(user("Bob"), card.round_id, (right + 1) % len(card.choices))
    assert render(good)[0].text.startswith("Correct! +10 points")
    answer_text = question.choices[question.answer_index].text
    assert render(bad)[0].text.startswith(f"Not quite: the answer is {letter(right)}) {answer_text}.")


# ----------------------------------------------------------------------- demos


def test_demo_names_match_the_demos() -> None:
    from demos import estimate, models, strategies

    assert STRATEGIES == strategies.STRATEGIES
    assert tuple(models.PRESETS) == PRESETS
    assert vars(estimate)["PRESETS"] is models.PRESETS  # estimate uses the models' presets
    assert CHOICES["estimate"]["preset"] == PRESETS
    assert CHOICES["checkpoint"]["model"] == models.MODEL_KINDS


def test_a_validated_demo_request_is_accepted_by_the_demo() -> None:
    from demos import checkpoint

    request = parse_demo("checkpoint model=chain layers=2 tokens=64 width=16 repeat=1 device=cpu strategies=none,block")
    config = checkpoint.parse_args(list(request.args))
    assert (config.model, config.layers, config.tokens, config.width) == ("chain", 2, 64, 16)
    assert config.strategies == ("none", "block")
    with pytest.raises(InvalidInput):
        parse_demo("checkpoint strategies=none,quantum")


def test_engine_request_demo_validates_before_anything_runs(engine: StudyEngine) -> None:
    for bad in ("estimate preset=gpt-5", "checkpoint strategies=none,quantum", "checkpoint layers=0", "rm -rf /"):
        with pytest.raises(InvalidInput):
            engine.demos.request_demo(user("Ann"), CH, bad)


def test_a_checkpoint_result_becomes_a_card() -> None:
    command = [
        sys.executable,
        "-m",
        "demos.checkpoint",
        "--json",
        "--layers",
        "2",
        "--tokens",
        "64",
        "--width",
        "16",
        "--strategies",
        "none,block",
        "--device",
        "cpu",
    ]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    card = result_card("demos.checkpoint", data, "charts/run.png", 2.5)
    assert isinstance(card, DemoResultCard)
    assert card.header[:2] == ("strategy", "peak MiB")
    assert [row[0] for row in card.rows] == ["none", "block"]
    assert [row[1] for row in card.rows] == [f"{r['peak_bytes'] / MIB:.2f}" for r in data["results"]]
    assert card.rows[0][card.header.index("vs none")] == "1.00x"
    assert all(len(row) == len(card.header) for row in card.rows)
    assert card.chart == "charts/run.png" and card.wall_s == 2.5
    assert "Ran in 2.5 s." in card.notes
    shown = render(card)[0].text
    assert "none" in shown and "block" in shown


def test_an_unknown_demo_result_still_becomes_a_card() -> None:
    card = result_card("demos.other", {"answer": 42}, None, 0.1)
    assert card.rows == (('{"answer": 42}',),)


# ---------------------------------------------------------------------- launch

TOKENS = (
    "DISCORD_TOKEN",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_CLIENT_ID",
    "SLACK_CLIENT_SECRET",
)


@pytest.fixture
def settings_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Settings]:
    """Settings from exactly the given environment: no tokens of this shell, no .env."""
    monkeypatch.chdir(tmp_path)
    for name in TOKENS:
        monkeypatch.delenv(name, raising=False)

    def build(**env: str) -> Settings:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return Settings()

    return build


def test_no_tokens_start_the_console(settings_from: Callable[..., Settings]) -> None:
    settings = settings_from()
    assert choose_platforms(settings, None) == ("console",)
    assert choose_platforms(settings, "console") == ("console",)


def test_a_dotenv_in_another_folder_is_not_read(settings_from: Callable[..., Settings]) -> None:
    settings = settings_from()
    assert settings.discord_token is None and settings.slack_bot_token is None


@pytest.mark.parametrize(
    ("env", "target", "chosen"),
    [
        ({"DISCORD_TOKEN": "d"}, None, ("discord",)),
        ({"DISCORD_TOKEN": "d"}, "discord", ("discord",)),
        ({"DISCORD_TOKEN": "d"}, "all", ("discord",)),
        ({"DISCORD_TOKEN": "d"}, "console", ("console",)),
        ({"SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"}, None, ("slack",)),
        ({"SLACK_BOT_TOKEN": "xoxb", "SLACK_SIGNING_SECRET": "s"}, None, ("slack",)),
        ({"SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"}, "slack", ("slack",)),
        ({"DISCORD_TOKEN": "d", "SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"}, None, ("discord", "slack")),
        ({"DISCORD_TOKEN": "d", "SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"}, "all", ("discord", "slack")),
        ({"DISCORD_TOKEN": "d", "SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"}, "slack", ("slack",)),
    ],
)
def test_the_tokens_set_choose_the_platforms(
    settings_from: Callable[..., Settings], env: dict[str, str], target: str | None, chosen: tuple[str, ...]
) -> None:
    assert choose_platforms(settings_from(**env), target) == chosen


def test_settings_given_directly_choose_the_same(settings_from: Callable[..., Settings]) -> None:
    settings_from()  # an empty environment
    settings = Settings.model_validate({"DISCORD_TOKEN": "d", "SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"})
    assert choose_platforms(settings, None) == ("discord", "slack")
    assert "xoxb" not in repr(settings)  # secrets never print


@pytest.mark.parametrize(
    ("env", "target", "named"),
    [
        ({"SLACK_BOT_TOKEN": "xoxb"}, None, ("SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")),
        ({"SLACK_BOT_TOKEN": "xoxb"}, "slack", ("SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")),
        ({"SLACK_BOT_TOKEN": "xoxb", "DISCORD_TOKEN": "d"}, None, ("SLACK_APP_TOKEN",)),  # not quietly Discord only
        ({"SLACK_APP_TOKEN": "xapp"}, None, ("SLACK_BOT_TOKEN",)),
        ({"SLACK_APP_TOKEN": "xapp"}, "slack", ("SLACK_BOT_TOKEN",)),
        ({"SLACK_SIGNING_SECRET": "s"}, None, ("SLACK_BOT_TOKEN",)),
        ({}, "discord", ("DISCORD_TOKEN",)),
        ({"SLACK_BOT_TOKEN": "xoxb", "SLACK_APP_TOKEN": "xapp"}, "discord", ("DISCORD_TOKEN",)),
        ({}, "slack", ("SLACK_BOT_TOKEN",)),
        ({}, "all", ("DISCORD_TOKEN", "SLACK_BOT_TOKEN")),
    ],
)
def test_missing_tokens_are_named_in_one_sentence(
    settings_from: Callable[..., Settings], env: dict[str, str], target: str | None, named: tuple[str, ...]
) -> None:
    with pytest.raises(LaunchError) as raised:
        choose_platforms(settings_from(**env), target)
    message = str(raised.value)
    for variable in named:
        assert variable in message
    assert "\n" not in message and message.endswith(".")


def test_an_unknown_target_is_one_sentence(settings_from: Callable[..., Settings]) -> None:
    with pytest.raises(LaunchError) as raised:
        choose_platforms(settings_from(DISCORD_TOKEN="d"), "telegram")
    message = str(raised.value)
    assert "telegram" in message and "console, discord, slack, all" in message
    assert "\n" not in message and message.endswith(".")


def test_run_slack_with_only_a_bot_token_exits_2_naming_what_is_missing(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name not in TOKENS}
    env.update(
        SLACK_BOT_TOKEN="xoxb-test-only",
        STUDYBOT_QUESTIONS_DIR=str(TEST_BANK),
        STUDYBOT_DATABASE_URL=f"sqlite:///{tmp_path / 'cli.db'}",
    )
    done = subprocess.run(
        [sys.executable, "-m", "bot", "run", "slack"],
        input="",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    message = done.stderr.strip()
    assert "SLACK_APP_TOKEN" in message and "SLACK_SIGNING_SECRET" in message
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert "xoxb-test-only" not in done.stdout + done.stderr
