"""The leaderboard ranked and paged in SQL (SqlTx.board_slice, board_size, week_rank) gives
what scoring.rank_rows gives over the whole board, on SQLite and PostgreSQL; weekly_points,
kept in each answer's transaction, equals the sum of the answers it stands for."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.records import RankedRow, WeekRank
from bot.core.rules import scoring
from bot.core.values import ChannelRef, CommunityRef, QuestionCard, UserRef
from bot.store.repository import SqlStore
from tests.conftest import FakeClock

CH = ChannelRef("console", "guild", "general")
COMMUNITY = CommunityRef("console", "guild")
NAMES = ["ann", "Bob", "bob", "Cy", "dora", "Eve", "eve2", "Finn", "gus", "Hal", "ivy", "Jo", "kim", "Lu"]


def right(bank: Bank, card: QuestionCard) -> int:
    question = bank.get(card.question_id)
    assert question is not None
    return card.choices.index(question.choices[question.answer_index].text)


def member(name: str) -> UserRef:
    return UserRef("console", "guild", f"{name.lower()}{NAMES.index(name)}", name)


# The board fill() makes, worked out by hand from its pattern (10 points a right daily answer,
# +1 for each right daily answer in a row before it; a day missed or wrong ends the run): the
# three days are one ISO week, so the week's board is the all-time board. Equal points share a
# rank; ties go by name without case, then by case ("Bob" before "bob").
#   Bob, Eve, Lu: right, right, not answered = 10 + 11; dora, gus: right, right, wrong = 10 + 11;
#   bob, ivy: right, not answered, wrong; Finn, Jo: not answered, right, wrong = 10;
#   ann, kim: wrong thrice; Cy, eve2, Hal: wrong and not answered = no points, not on the board.
EXPECTED_BOARD = [
    (1, "Bob", 21),
    (1, "dora", 21),
    (1, "Eve", 21),
    (1, "gus", 21),
    (1, "Lu", 21),
    (6, "bob", 10),
    (6, "Finn", 10),
    (6, "ivy", 10),
    (6, "Jo", 10),
]


def fill(engine: StudyEngine, clock: FakeClock, bank: Bank) -> None:
    """Three daily rounds; members answer right or wrong in a pattern that makes ties."""
    for day in range(3):
        card = engine.rounds.open_daily(CH)
        assert isinstance(card, QuestionCard)
        for i, name in enumerate(NAMES):
            if (i + day) % 4 == 3:
                continue  # not answered
            choice = right(bank, card) if (i * (day + 1)) % 3 else (right(bank, card) + 1) % len(card.choices)
            engine.rounds.answer(member(name), card.round_id, choice)
        if day < 2:
            clock.advance(days=1)


@pytest.mark.parametrize("size", [1, 3, 5, 100])
def test_board_slices_match_the_whole_ranking(
    engine: StudyEngine, clock: FakeClock, test_bank: Bank, size: int
) -> None:
    fill(engine, clock, test_bank)
    store = engine.store
    assert isinstance(store, SqlStore)
    with store.read() as tx:
        config = tx.communities.find_community(COMMUNITY.platform, COMMUNITY.community_id)
        assert config is not None
        weeks = [week for (week,) in tx.conn.execute(text("SELECT DISTINCT week FROM answers")).all()]
        for week in [*weeks, None]:
            board = tx.boards.board(config.id, week)
            expected = [(row.rank, row.user, row.points) for _, row in scoring.rank_rows(board)]
            assert expected == EXPECTED_BOARD, (
                week
            )  # the Python ranking of the stored totals, against the hand-made board
            assert tx.boards.board_size(config.id, week) == len(expected)
            for start in range(0, len(expected) + size, size):
                assert tx.boards.board_slice(config.id, week, start, size) == [
                    RankedRow(*row) for row in expected[start : start + size]
                ]
            if week is not None:
                ranked = dict(scoring.rank_rows(board))
                for name, points, member_id in board:
                    assert tx.boards.week_rank(config.id, week, member_id) == WeekRank(
                        points, ranked[member_id].rank
                    ), name
        assert tx.boards.week_rank(config.id, "2001-W01", board[0][2]) is None


def test_weekly_points_are_the_sum_of_the_answers(engine: StudyEngine, clock: FakeClock, test_bank: Bank) -> None:
    fill(engine, clock, test_bank)
    engine.admin.forget_me(member("Bob"), confirm=True)
    store = engine.store
    assert isinstance(store, SqlStore)
    with store.read() as tx:
        summed = tx.conn.execute(
            text(
                "SELECT member_id, week, community_id, SUM(points) FROM answers "
                "GROUP BY member_id, week, community_id HAVING SUM(points) > 0 ORDER BY member_id, week"
            )
        ).all()
        kept = tx.conn.execute(
            text("SELECT member_id, week, community_id, points FROM weekly_points ORDER BY member_id, week")
        ).all()
    assert [tuple(row) for row in kept] == [tuple(row) for row in summed]
    assert summed


def test_the_web_board_and_the_score_card_use_it(engine: StudyEngine, clock: FakeClock, test_bank: Bank) -> None:
    fill(engine, clock, test_bank)
    week = scoring.iso_week(clock.now, "UTC")
    card = engine.boards.leaderboard(COMMUNITY, week=week)
    page = engine.web.leaderboard_page(COMMUNITY, week, 1)
    assert [(row.rank, row.user, row.points) for row in card.rows] == EXPECTED_BOARD
    assert page.rows == card.rows and page.members == len(EXPECTED_BOARD) and page.pages == 1
    for row in card.rows:
        score = engine.boards.score(member(row.user))
        assert (score.week_rank, score.week_points) == (row.rank, row.points)
