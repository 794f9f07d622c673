"""The engine's rules, on a real SQLite file and a real PostgreSQL server."""

from __future__ import annotations

import inspect
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from typing import get_args, get_type_hints

import pytest

import bot.core.engine as engine_module
from bot.core import values, wording
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput, NotFound
from bot.core.rules import choices as codec
from bot.core.rules.text import parse_choice
from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    AnswerWithHome,
    ChannelRef,
    CommunityRef,
    ConfirmForget,
    Forgotten,
    NothingDue,
    Notice,
    QuestionCard,
    RevealCard,
    RoundClosed,
    UserRef,
)
from bot.store.repository import SqlStore
from tests.conftest import FakeClock

CH = ChannelRef("console", "guild", "general")
COMMUNITY = CommunityRef("console", "guild")


def user(name: str, community: str = "guild") -> UserRef:
    return UserRef("console", community, name.lower(), name)


def open_round(engine: StudyEngine, channel: ChannelRef = CH) -> QuestionCard:
    card = engine.rounds.open_daily(channel)
    assert isinstance(card, QuestionCard)
    return card


def right(bank: Bank, card: QuestionCard) -> int:
    """The index of the right choice as the card shows it (each round draws its own order)."""
    question = bank.get(card.question_id)
    assert question is not None
    return card.choices.index(question.choices[question.answer_index].text)


def wrong(bank: Bank, card: QuestionCard) -> int:
    return (right(bank, card) + 1) % len(card.choices)


def test_one_daily_round_per_community_per_local_day(engine: StudyEngine, clock: FakeClock) -> None:
    first = open_round(engine)
    again = engine.rounds.open_daily(CH)
    assert again == AlreadyOpen(round_id=first.round_id, number=first.number, local_date="2026-11-23")
    # Another channel of the community the same day (the channel moved, or /daily there): the
    # community's round of the day stands, in one call and in a batch (issue 28).
    assert engine.rounds.open_daily(ChannelRef("console", "guild", "random")) == again
    assert engine.dailies.open_dailies([(ChannelRef("console", "guild", "random"), False)]) == [again]
    # The same channel id in another community is that community's own round.
    elsewhere = open_round(engine, ChannelRef("console", "other-guild", CH.channel_id))
    assert elsewhere.round_id != first.round_id
    clock.advance(days=1)
    assert open_round(engine, ChannelRef("console", "guild", "random")).round_id not in (
        first.round_id,
        elsewhere.round_id,
    )


def test_local_day_follows_the_community_time_zone(engine: StudyEngine, clock: FakeClock) -> None:
    engine.admin.config(COMMUNITY, "timezone", "America/New_York")
    clock.set(datetime(2026, 11, 24, 3, 0, tzinfo=timezone.utc))  # still the 23rd in New York
    first = open_round(engine)
    clock.set(datetime(2026, 11, 24, 4, 59, tzinfo=timezone.utc))  # 23:59 on the 23rd
    assert isinstance(engine.rounds.open_daily(CH), AlreadyOpen)
    clock.set(datetime(2026, 11, 24, 5, 0, tzinfo=timezone.utc))  # midnight: the 24th
    assert open_round(engine).round_id != first.round_id


def test_questions_are_not_repeated_until_all_were_asked(
    engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    asked = []
    for _ in range(len(test_bank)):
        asked.append(open_round(engine).question_id)
        clock.advance(days=1)
    assert sorted(asked) == sorted(q.id for q in test_bank.questions)
    # Then the least recently asked comes back first.
    assert open_round(engine).question_id == asked[0]
    clock.advance(days=1)
    assert open_round(engine).question_id == asked[1]


def test_admins_are_told_when_few_unasked_questions_remain(
    engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    notes = []
    for _ in range(len(test_bank)):
        notes.append(open_round(engine).admin_note)
        clock.advance(days=1)
    # The three-question bank: after each round, the questions left unasked (2, then 1, then none)
    counted = [
        int(m.group(1))
        if note and (m := re.fullmatch(r"Questions not yet asked in this community: (\d+)\. .*", note))
        else None
        for note in notes
    ]
    assert counted == [2, 1, 0], notes
    assert notes == [wording.low_bank(left) for left in (2, 1, 0)]


def test_first_answer_is_final(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    ann = user("Ann")
    first = engine.rounds.answer(ann, card.round_id, wrong(test_bank, card))
    assert isinstance(first, AnswerFeedback) and not first.correct and first.points == 0
    second = engine.rounds.answer(ann, card.round_id, right(test_bank, card))
    assert second == AlreadyAnswered(round_id=card.round_id, number=card.number, chosen=first.chosen)
    assert engine.boards.score(ann).total_points == 0


def test_answer_with_home_brings_the_home_of_a_scored_answer_only(
    engine: StudyEngine, test_bank: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = open_round(engine)
    button = codec.encode_answer(card.round_id, right(test_bank, card))
    first = engine.answers.click(user("Ann"), button, home=True)
    assert isinstance(first, AnswerWithHome) and isinstance(first.feedback, AnswerFeedback)
    assert first.home is not None and first.home.score.total_points == first.feedback.points > 0
    assert [row.user for row in first.home.board.rows] == ["Ann"]
    again = engine.answers.click(user("Ann"), button, home=True)
    assert again == AnswerWithHome(
        AlreadyAnswered(round_id=card.round_id, number=card.number, chosen=first.feedback.chosen), None
    )

    def broken(_: UserRef) -> None:
        raise RuntimeError("the board could not be read")

    monkeypatch.setattr(engine.boards, "home", broken)
    kept = engine.answers.click(user("Bob"), button, home=True)  # the answer stands; only the Home is missing
    assert isinstance(kept, AnswerWithHome) and isinstance(kept.feedback, AnswerFeedback) and kept.home is None
    assert engine.boards.score(user("Bob")).daily.answered == 1
    with pytest.raises(InvalidInput):  # an id that is no answer button's
        engine.answers.click(user("Cy"), "sb1:cf:1:s", home=True)


def test_feedback_names_the_right_choice_the_why_of_the_pick_and_the_trap(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    question = test_bank.get(card.question_id)
    assert question is not None
    pick = wrong(test_bank, card)
    feedback = engine.rounds.answer(user("Ann"), card.round_id, pick)
    assert isinstance(feedback, AnswerFeedback)
    picked = next(c for c in question.choices if c.text == card.choices[pick])
    assert feedback.why == picked.why and feedback.chosen_text == picked.text
    assert feedback.answer_text == question.choices[question.answer_index].text
    assert feedback.trap == question.trap


def test_answer_after_close_is_not_scored(engine: StudyEngine, clock: FakeClock, test_bank: Bank) -> None:
    card = open_round(engine)
    reveal = engine.rounds.close_round(card.round_id)
    assert isinstance(reveal, RevealCard)
    late = engine.rounds.answer(user("Ann"), card.round_id, right(test_bank, card))
    assert isinstance(late, RoundClosed) and late.answer == reveal.answer
    assert engine.boards.score(user("Ann")).total_points == 0
    # The window ending closes it for answers too, even before the reveal job runs.
    clock.advance(days=1)
    card2 = open_round(engine)
    clock.advance(hours=12)
    assert isinstance(engine.rounds.answer(user("Ann"), card2.round_id, 0), RoundClosed)


def test_reveal_counts_each_choice_and_happens_once(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    ok, bad = right(test_bank, card), wrong(test_bank, card)
    for name, pick in [("Ann", ok), ("Bob", bad), ("Cy", ok)]:
        engine.rounds.answer(user(name), card.round_id, pick)
    reveal = engine.rounds.close_round(card.round_id)
    assert isinstance(reveal, RevealCard)
    counts = {c.letter: c.count for c in reveal.choices}
    assert counts[reveal.answer] == 2 and sum(counts.values()) == 3
    assert all(len(c.why) >= 40 for c in reveal.choices)
    assert isinstance(engine.rounds.close_round(card.round_id), Notice)
    assert engine.rounds.close_due() == []


def test_streak_bonus_grows_by_one_per_earlier_correct_round_up_to_five(
    engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    ann = user("Ann")
    points = []
    for _ in range(8):
        card = open_round(engine)
        feedback = engine.rounds.answer(ann, card.round_id, right(test_bank, card))
        assert isinstance(feedback, AnswerFeedback)
        points.append(feedback.points)
        clock.advance(days=1)
    assert points == [10, 11, 12, 13, 14, 15, 15, 15]
    # A miss (here: a round not answered at all) resets the bonus.
    open_round(engine)
    clock.advance(days=1)
    card = open_round(engine)
    feedback = engine.rounds.answer(ann, card.round_id, right(test_bank, card))
    assert isinstance(feedback, AnswerFeedback) and feedback.points == 10
    score = engine.boards.score(ann)
    assert score.best_streak == 8 and score.streak == 1


@pytest.mark.usefixtures("test_bank")
def test_text_answers() -> None:
    choices = ["Extra compute for lower memory", "Model accuracy for speed", "Disk space"]
    assert parse_choice("b", choices) == 1
    assert parse_choice(" B) ", choices) == 1
    assert parse_choice("c.", choices) == 2
    assert parse_choice("extra COMPUTE, for lower-memory!", choices) == 0
    assert parse_choice("d", choices) is None  # no fourth choice
    assert parse_choice("maybe b?", choices) is None
    assert parse_choice("", choices) is None


def test_text_reply_answers_the_open_round_and_ignores_chatter(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    assert engine.rounds.answer_text(user("Ann"), CH, "good morning everyone") is None
    feedback = engine.rounds.answer_text(user("Ann"), CH, "daily " + card.choices[right(test_bank, card)].upper())
    assert isinstance(feedback, AnswerFeedback) and feedback.correct
    assert isinstance(engine.rounds.answer_text(user("Ann"), CH, "daily a"), AlreadyAnswered)


@pytest.mark.usefixtures("test_bank")
def test_a_line_answers_exactly_one_round_and_a_bare_letter_never_the_daily(engine: StudyEngine) -> None:
    ann, bob = user("Ann"), user("Bob")
    daily = open_round(engine)
    [post] = engine.outbox.due_posts("console", "worker-1")
    engine.outbox.delivered(post.outbox_id, "console:post-1")  # the daily round's post, as a platform keeps it
    practice = engine.practice.quiz(ann, CH, "fundamentals")
    first = engine.answers.line(ann, CH, "a")  # /daily, /quiz, a: the practice question
    assert isinstance(first, AnswerFeedback) and first.round_id == practice.round_id and first.kind == "practice"
    second = engine.answers.line(ann, CH, "a")  # ... a: the daily round is not spent
    assert isinstance(second, Notice) and f"To answer daily round #{daily.round_id}" in second.text
    assert engine.answers.line(ann, CH, "good morning") is None  # chatter stays chatter
    with engine.store.read() as tx:
        assert tx.answers.choice_counts(daily.round_id) == {}
    # with a practice question pending, a reply to the daily's post or `daily b` answers the daily
    engine.practice.quiz(ann, CH, "fundamentals")
    engine.practice.quiz(bob, CH, "fundamentals")
    by_reply = engine.answers.line(ann, CH, "b sure", reply_to="console:post-1")
    assert isinstance(by_reply, AnswerFeedback) and by_reply.round_id == daily.round_id and by_reply.noted
    by_word = engine.answers.line(bob, CH, "daily B)")
    assert isinstance(by_word, AnswerFeedback) and by_word.round_id == daily.round_id and by_word.chosen == "B"
    assert engine.answers.line(bob, CH, "b", reply_to="console:elsewhere") is None  # a reply to another post
    with engine.store.read() as tx:
        assert sum(tx.answers.choice_counts(daily.round_id).values()) == 2
    kept = engine.answers.line(bob, CH, "a")  # Bob's practice question was still his to answer
    assert isinstance(kept, AnswerFeedback) and kept.kind == "practice"


def test_a_level_is_named_only_after_a_few_answers(engine: StudyEngine, test_bank: Bank) -> None:
    ann, bob = user("Ann"), user("Bob")
    for who, correct in ((ann, True), (bob, False)):  # one right answer, one miss
        card = engine.practice.quiz(who, CH, "fundamentals")
        at = right(test_bank, card)
        engine.rounds.answer(who, card.round_id, at if correct else (at + 1) % len(card.choices))
        [line] = [t for t in wording.score_lines(engine.boards.score(who)) if t.startswith("fundamentals:")]
        assert line == "fundamentals: 1 answer so far; a level shows after 5."  # no "expert", no "about 7%"
    for _ in range(4):
        card = engine.practice.quiz(ann, CH, "fundamentals")
        engine.rounds.answer(ann, card.round_id, right(test_bank, card))
    [named] = engine.boards.score(ann).levels
    assert named.answers == 5 and named.name is not None and named.chance is not None


def test_a_letter_with_nothing_open_gets_a_sentence(engine: StudyEngine) -> None:
    reply = engine.rounds.answer_text(user("Ann"), CH, "b")
    assert isinstance(reply, Notice) and "no open question" in reply.text


def test_practice_gives_no_leaderboard_points_but_counts_in_stats(engine: StudyEngine, test_bank: Bank) -> None:
    ann = user("Ann")
    card = engine.practice.quiz(ann, CH, "fundamentals")
    assert card.kind == "practice"
    feedback = engine.rounds.answer_text(ann, CH, "abc-not-an-answer")
    assert feedback is None
    question = test_bank.get(card.question_id)
    assert question is not None
    feedback = engine.rounds.answer(ann, card.round_id, right(test_bank, card))
    assert isinstance(feedback, AnswerFeedback) and feedback.correct and feedback.points == 0
    score = engine.boards.score(ann)
    assert (score.practice.answered, score.practice.correct, score.total_points) == (1, 1, 0)
    assert engine.boards.leaderboard(COMMUNITY).rows == ()


def test_quiz_rejects_an_unknown_topic(engine: StudyEngine) -> None:
    with pytest.raises(InvalidInput, match="Unknown topic"):
        engine.practice.quiz(user("Ann"), CH, "astrology")


def test_practice_question_belongs_to_its_user(engine: StudyEngine) -> None:
    card = engine.practice.quiz(user("Ann"), CH)
    with pytest.raises(NotFound):
        engine.rounds.answer(user("Bob"), card.round_id, 0)


def test_leaderboard_ties_share_a_rank_then_sort_by_name(
    engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    card = open_round(engine)
    for name in ["dora", "Bob", "Ann"]:
        engine.rounds.answer(user(name), card.round_id, right(test_bank, card))
    engine.rounds.answer(user("Cy"), card.round_id, wrong(test_bank, card))
    clock.advance(days=1)
    card = open_round(engine)
    engine.rounds.answer(user("Eve"), card.round_id, right(test_bank, card))
    engine.rounds.answer(user("Ann"), card.round_id, right(test_bank, card))
    board = engine.boards.leaderboard(COMMUNITY)
    assert [(r.rank, r.user, r.points) for r in board.rows] == [
        (1, "Ann", 21),
        (2, "Bob", 10),
        (2, "dora", 10),
        (2, "Eve", 10),
    ]
    assert board.scope == "2026-W48"


def test_weeks_are_iso_weeks_in_the_community_time_zone(engine: StudyEngine, clock: FakeClock, test_bank: Bank) -> None:
    engine.admin.config(COMMUNITY, "timezone", "Asia/Tokyo")
    engine.admin.config(COMMUNITY, "window_hours", "12")
    # Sunday 2026-11-29 20:00 UTC is already Monday 05:00 in Tokyo: ISO week 49 there.
    clock.set(datetime(2026, 11, 29, 20, 0, tzinfo=timezone.utc))
    card = open_round(engine)
    engine.rounds.answer(user("Ann"), card.round_id, right(test_bank, card))
    assert [r.user for r in engine.boards.leaderboard(COMMUNITY, week="2026-W49").rows] == ["Ann"]
    assert engine.boards.leaderboard(COMMUNITY, week="2026-W48").rows == ()
    assert engine.boards.leaderboard(COMMUNITY, all_time=True).rows[0].points == 10
    with pytest.raises(InvalidInput, match="ISO week"):
        engine.boards.leaderboard(COMMUNITY, week="last week")


def test_score_reports_week_rank_accuracy_and_reviews(engine: StudyEngine, clock: FakeClock, test_bank: Bank) -> None:
    ann, bob = user("Ann"), user("Bob")
    card = open_round(engine)
    engine.rounds.answer(ann, card.round_id, right(test_bank, card))
    engine.rounds.answer(bob, card.round_id, wrong(test_bank, card))
    score = engine.boards.score(bob)
    assert (score.week_points, score.week_rank, score.daily.answered, score.daily.correct) == (0, None, 1, 0)
    assert score.reviews_due == 0  # a miss comes back the next day
    clock.advance(days=1)
    assert engine.boards.score(bob).reviews_due == 1
    ann_score = engine.boards.score(ann)
    assert (ann_score.week_points, ann_score.week_rank, ann_score.streak) == (10, 1, 1)


def test_missed_questions_come_back_on_a_spaced_schedule(
    engine: StudyEngine, clock: FakeClock, test_bank: Bank
) -> None:
    bob = user("Bob")
    card = open_round(engine)
    engine.rounds.answer(bob, card.round_id, wrong(test_bank, card))
    assert isinstance(engine.practice.review(bob, CH), NothingDue)
    clock.advance(days=1)
    review = engine.practice.review(bob, CH)
    assert isinstance(review, QuestionCard) and review.kind == "review" and review.question_id == card.question_id
    feedback = engine.rounds.answer(bob, review.round_id, right(test_bank, card))
    assert isinstance(feedback, AnswerFeedback) and feedback.points == 0
    later = engine.practice.review(bob, CH)
    assert isinstance(later, NothingDue) and later.next_due is not None
    assert later.next_due - clock.now >= timedelta(days=1)  # a right answer pushes it further out


def test_forget_me_asks_first_then_deletes_only_that_user(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    engine.rounds.answer(user("Ann"), card.round_id, right(test_bank, card))
    engine.rounds.answer(user("Bob"), card.round_id, right(test_bank, card))
    assert engine.admin.forget_me(user("Ann")) == ConfirmForget(user="Ann", answers=1)
    assert [r.user for r in engine.boards.leaderboard(COMMUNITY).rows] == ["Ann", "Bob"]
    assert engine.admin.forget_me(user("Ann"), confirm=True) == Forgotten(user="Ann", answers_deleted=1)
    assert [r.user for r in engine.boards.leaderboard(COMMUNITY).rows] == ["Bob"]


def test_communities_never_leak(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    engine.rounds.answer(user("Ann"), card.round_id, right(test_bank, card))
    stranger = user("Mallory", community="other")
    with pytest.raises(NotFound):
        engine.rounds.answer(stranger, card.round_id, 0)
    assert engine.boards.leaderboard(CommunityRef("console", "other")).rows == ()
    assert engine.boards.score(user("Ann", community="other")).total_points == 0


def test_config_validates_each_setting(engine: StudyEngine) -> None:
    card = engine.admin.config(COMMUNITY, "daily_time", "7:05")
    assert dict(card.settings)["daily_time"] == "07:05"
    for key, value, message in [
        ("timezone", "Mars/Olympus", "IANA"),
        ("daily_time", "25:00", "time of day"),
        ("window_hours", "0", "1 to 48"),
        ("topics", "fundamentals,astrology", "Unknown topic"),
        ("paused", "maybe", "on or off"),
        ("colour", "blue", "Unknown setting"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            engine.admin.config(COMMUNITY, key, value)
    assert dict(engine.admin.config(COMMUNITY).settings)["daily_time"] == "07:05"


def test_concurrent_answers_are_all_stored_once(engine: StudyEngine, test_bank: Bank) -> None:
    card = open_round(engine)
    users = [user(f"user{i}") for i in range(40)]
    jobs = [(u, pick) for u in users for pick in (right(test_bank, card), 0)]  # each user clicks twice
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda job: engine.rounds.answer(job[0], card.round_id, job[1]), jobs))
    assert sum(isinstance(r, AnswerFeedback) for r in results) == 40
    assert sum(isinstance(r, AlreadyAnswered) for r in results) == 40
    reveal = engine.rounds.close_round(card.round_id)
    assert isinstance(reveal, RevealCard) and reveal.answered == 40


@pytest.mark.usefixtures("database")
def test_two_processes_open_the_daily_round_once(
    test_bank: Bank, clock: FakeClock, db_url: str
) -> None:
    from bot.store.database import Database

    engines = [StudyEngine(SqlStore(Database(db_url)), test_bank, clock=clock) for _ in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        cards = list(pool.map(lambda e: e.rounds.open_daily(CH), engines))
    opened = [c for c in cards if isinstance(c, QuestionCard)]
    assert len(opened) == 1
    assert all(isinstance(c, AlreadyOpen) and c.round_id == opened[0].round_id for c in cards if c not in opened)


def value_types(hint: object) -> set[type]:
    """The bot.core.values classes a type hint names (each defined in one of its feature
    modules), inside unions and generics too."""
    found = {hint} if isinstance(hint, type) and hint.__module__.startswith(values.__name__ + ".") else set()
    for arg in get_args(hint):
        found |= value_types(arg)
    return found


def test_the_card_union_is_every_card_a_user_can_be_shown() -> None:
    """values.Card is what each platform's render must lay out (mypy checks its match ends in
    assert_never): every card a use case returns, posts through the outbox (Delivery) or sends
    with an answer (AnswerWithHome), and the bridge's Problem; a new card left out of Card
    would go unrendered on some platform."""
    returned: set[type] = set()
    classes = inspect.getmembers(engine_module, inspect.isclass)
    services = [cls for _, cls in classes if cls.__module__.startswith("bot.core")]  # the engine and its services
    assert {"Rounds", "Boards", "Answers", "Practice", "WebPages"} <= {cls.__name__ for cls in services}
    for service in services:
        for name, method in inspect.getmembers(service, inspect.isfunction):
            if not name.startswith("_"):
                returned |= value_types(get_type_hints(method, vars(sys.modules[method.__module__]))["return"])
    for wrapper in (values.AnswerWithHome, values.Delivery):
        returned |= {found for hint in get_type_hints(wrapper).values() for found in value_types(hint)}
    web_pages = {values.WebCommunity, values.LeaderboardPage, values.MemberPage, values.BankPage}
    web_pages |= {values.DemosPage, values.AdminPage}
    wrappers = {values.AnswerWithHome, values.Delivery, values.ChannelRef, values.CommunityRef, values.UserRef}
    wrappers |= {values.SuggestionForm}  # what a member typed, handed back to fill a form in again
    wrappers |= {values.FieldProblem}  # one field's problem as a form checks it while typed (in SuggestionRefused too)
    wrappers |= {values.TopicLevel}  # a topic's level, as Boards reads it from Practice for the Score and Home cards
    cards = returned - web_pages - wrappers
    assert cards | {values.Problem} == set(get_args(values.Card))
    assert set(get_args(values.Posted)) <= cards
