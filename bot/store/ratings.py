"""Adaptive practice's ratings: members' per topic ("" overall) and questions' difficulty
(spread over a few rows each: bot/store/question_ratings.py)."""

from __future__ import annotations

from collections.abc import Iterable

from bot.store import fast, question_ratings, statements
from bot.store.rows import Repo


class RatingsRepo(Repo):
    """Ratings' part of one transaction's queries (RatingsTx)."""

    __slots__ = ()

    def member_ratings(self, member_id: int) -> dict[str, tuple[float, int]]:
        """The member's ratings by topic ("" overall): (rating, answers)."""
        rows = fast.rows(self.conn, statements.member_ratings(), {"member_id": member_id})
        return {topic: (float(rating), int(answers)) for topic, rating, answers in rows}

    def question_ratings(self, question_ids: Iterable[str] | None = None) -> dict[str, tuple[float, int]]:
        """Questions' difficulty ratings: (rating, answers); every rated one without ids."""
        return question_ratings.read(self.conn, question_ids)

    def bump_member_rating(self, member_id: int, topic: str, start: float, delta: float) -> None:
        """Add `delta` to a member's rating (created at `start`), counting one more answer."""
        fast.rows(
            self.conn,
            statements.bump_member_rating(self.dialect),
            {
                "member_id": member_id,
                "topic": topic,
                "rating": start + delta,
                "answers": 1,
                "delta": delta,
                "counted": 1,
            },
        )

    def bump_question_rating(self, question_id: str, start: float, delta: float) -> None:
        """Add `delta` to a question's difficulty (created at `start`), in place, so that
        concurrent answers in other communities add up rather than overwrite each other (on
        PostgreSQL in one of a few rows, so that they do not queue on one lock)."""
        question_ratings.bump(self.conn, question_id, start, delta)
