"""The item analysis where admins see it: /config's alerts and the weekly leaderboard post,
from answers given through the engine (a planted wrong key)."""

from __future__ import annotations

from bot.background.delivery import Deliverer
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, CommunityRef, LeaderboardCard, QuestionCard, UserRef
from bot.platforms.console import render
from tests.conftest import FakeClock

CH = ChannelRef("console", "club", "study")
REF = CommunityRef("console", "club")
STRONG = [f"strong{i}" for i in range(4)]
WEAK = [f"weak{i}" for i in range(8)]


def member(name: str) -> UserRef:
    return UserRef("console", "club", name, name.capitalize())


def shown_index(bank: Bank, card: QuestionCard, correct: bool, other: int = 0) -> int:
    """The shown index of the right choice, or of the `other`-th wrong one."""
    question = bank.get(card.question_id)
    assert question is not None
    if correct:
        return card.choices.index(question.choices[question.answer_index].text)
    wrong = [c.text for c in question.choices if not c.correct]
    return card.choices.index(wrong[other % len(wrong)])


def test_a_planted_wrong_key_reaches_config_and_the_weekly_post(
    engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    engine.admin.config(REF, "channel", "study")
    planted: QuestionCard | None = None
    for day in range(3):  # the test bank has three questions: one daily round each
        card = engine.rounds.open_daily(CH)
        assert isinstance(card, QuestionCard)
        if day == 0:
            planted = card
            for name in STRONG:  # the strongest members agree on one wrong choice
                engine.rounds.answer(member(name), card.round_id, shown_index(test_bank, card, False, 0))
            for i, name in enumerate(WEAK):  # half of the rest right, half another wrong choice
                engine.rounds.answer(member(name), card.round_id, shown_index(test_bank, card, i % 2 == 0, 1))
        else:
            for name in STRONG:
                engine.rounds.answer(member(name), card.round_id, shown_index(test_bank, card, True))
            for name in WEAK:
                engine.rounds.answer(member(name), card.round_id, shown_index(test_bank, card, False))
        clock.advance(days=1)
    assert planted is not None
    question = test_bank.get(planted.question_id)
    assert question is not None
    suspect = [c.text for c in question.choices if not c.correct][0]

    alerts = engine.admin.config(REF).alerts
    [wrong_key] = [a for a in alerts if "likely wrong key" in a]
    assert wrong_key.startswith(f"Question {planted.question_id}: likely wrong key: 33% right")
    assert f'"{suspect[:40]}"' in wrong_key  # named by its text: every round shows its own order
    console = render(engine.admin.config(REF))[0].text
    assert wrong_key in console

    card = engine.boards.weekly_post(REF, "2026-W48")
    assert isinstance(card, LeaderboardCard) and planted.question_id in card.flagged
    posted: list[str] = []
    Deliverer(engine, "console").deliver_due(lambda _c, c: posted.extend(m.text for m in render(c)) or "ref")
    [board] = [text for text in posted if text.startswith("Leaderboard for 2026-W48")]
    assert "For admins: the answers suggest" in board and planted.question_id in board


def test_no_flags_without_enough_answers(engine: StudyEngine, test_bank: Bank) -> None:
    engine.admin.config(REF, "channel", "study")
    card = engine.rounds.open_daily(CH)
    assert isinstance(card, QuestionCard)
    engine.rounds.answer(member("ann"), card.round_id, shown_index(test_bank, card, False))
    assert not any("Question " in alert for alert in engine.admin.config(REF).alerts)
    board = engine.boards.weekly_post(REF, "2026-W48")
    assert board is not None and board.flagged == ()
