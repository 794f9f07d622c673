"""Members' review cards (the FSRS state as JSON and when each is due)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select, update
from sqlmodel import col

from bot.store import fast, statements
from bot.store.rows import Repo
from bot.store.tables import Review


class ReviewsRepo(Repo):
    """Review cards' part of one transaction's queries (ReviewsTx)."""

    __slots__ = ()

    def review_state(self, member_id: int, question_id: str) -> str | None:
        return self.conn.execute(
            select(col(Review.state)).where(col(Review.member_id) == member_id, col(Review.question_id) == question_id)
        ).scalar()

    def update_review(self, member_id: int, question_id: str, state: str, due: datetime) -> None:
        self.conn.execute(
            update(Review)
            .where(col(Review.member_id) == member_id, col(Review.question_id) == question_id)
            .values(state=state, due=due)
        )

    def add_review(self, member_id: int, question_id: str, state: str, due: datetime) -> None:
        fast.rows(
            self.conn,
            statements.review_insert(self.dialect),
            {"member_id": member_id, "question_id": question_id, "state": state, "due": due},
        )

    def reviews(self, member_id: int) -> list[tuple[str, datetime]]:
        rows = self.conn.execute(
            select(col(Review.question_id), col(Review.due))
            .where(col(Review.member_id) == member_id)
            .order_by(col(Review.due))
        ).all()
        return [(q, due) for q, due in rows]

    def reviews_due(self, member_id: int, now: datetime) -> int:
        return int(
            self.conn.execute(
                select(func.count())
                .select_from(Review)
                .where(col(Review.member_id) == member_id, col(Review.due) <= now)
            ).scalar_one()
        )
