"""Answers: the hot path's read and write (prepared statements, bot/store/statements.py), the
reveal's counts, and what a member's pages count of their answers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import case, func, select
from sqlmodel import col

from bot.core.records import AnswerContext, ExportedAnswer, MissedAnswer, NewAnswer, QuestionOutcome
from bot.store import fast, item_stats, statements
from bot.store.rows import Repo, round_record
from bot.store.tables import Answer, Member, Round


class AnswersRepo(Repo):
    """Answers' part of one transaction's queries (AnswersTx)."""

    __slots__ = ()

    def answer_context(
        self, round_id: int, user_id: str, platform: str, community: str, user_key: str
    ) -> AnswerContext | None:
        found_rows = fast.rows(
            self.conn,
            statements.answer_lookup(),
            {
                "round_id": round_id,
                "user_id": user_id,
                "platform": platform,
                "community": community,
                "user_key": user_key,
            },
        )
        if not found_rows:
            return None
        found = found_rows[0]
        return AnswerContext(
            round=round_record(found),
            timezone=found.timezone,
            known_member=found.known_member,
            previous=found.previous,
            forgotten=found.forgotten is not None,
        )

    def insert_answer(self, answer: NewAnswer) -> bool:
        """Store a first answer; False when that member had answered that round already."""
        inserted = fast.rows(
            self.conn,
            statements.answer_insert(self.dialect),
            {
                "round_id": answer.round_id,
                "member_id": answer.member_id,
                "community_id": answer.community_id,
                "kind": answer.kind,
                "choice": answer.choice,
                "correct": answer.correct,
                "points": answer.points,
                "answered_at": answer.answered_at,
                "week": answer.week,
            },
        )
        if inserted:
            item_stats.count_answer(
                self.conn, answer.community_id, answer.member_id, answer.question_id, answer.file_choice, answer.correct
            )
        if inserted and answer.points:
            fast.rows(self.conn, statements.add_points(), {"member_id": answer.member_id, "points": answer.points})
            fast.rows(
                self.conn,
                statements.add_week_points(self.dialect),
                {
                    "member_id": answer.member_id,
                    "week": answer.week,
                    "community_id": answer.community_id,
                    "points": answer.points,
                },
            )
        return bool(inserted)

    def answer_choice(self, round_id: int, member_id: int) -> int | None:
        return self.conn.execute(
            select(col(Answer.choice)).where(col(Answer.round_id) == round_id, col(Answer.member_id) == member_id)
        ).scalar()

    def earlier_outcomes(self, community_id: int, member_id: int, round_id: int, limit: int) -> list[bool | None]:
        return [
            row[0]
            for row in fast.rows(
                self.conn,
                statements.earlier_outcomes(limit),
                {"member_id": member_id, "community_id": community_id, "round_id": round_id},
            )
        ]

    def choice_counts(self, round_id: int) -> dict[int, int]:
        return {
            int(choice): int(count)
            for choice, count in self.conn.execute(
                select(col(Answer.choice), func.count())
                .where(col(Answer.round_id) == round_id)
                .group_by(col(Answer.choice))
            ).all()
        }

    def answer_stats(self, member_id: int) -> dict[tuple[str, bool], int]:
        return {
            (kind, bool(correct)): int(count)
            for kind, correct, count in self.conn.execute(
                select(col(Answer.kind), col(Answer.correct), func.count())
                .where(col(Answer.member_id) == member_id)
                .group_by(col(Answer.kind), col(Answer.correct))
            ).all()
        }

    def answer_count(self, member_id: int) -> int:
        return int(
            self.conn.execute(
                select(func.count()).select_from(Answer).where(col(Answer.member_id) == member_id)
            ).scalar_one()
        )

    def seen_counts(self, member_id: int) -> dict[str, int]:
        return {
            question_id: int(count)
            for question_id, count in self.conn.execute(
                select(col(Round.question_id), func.count())
                .join(Answer, col(Answer.round_id) == col(Round.id))
                .where(col(Answer.member_id) == member_id)
                .group_by(col(Round.question_id))
            ).all()
        }

    def seen_since(self, member_id: int, since: datetime) -> set[str]:
        """The questions a member answered, or was given privately, since `since`."""
        answered = self.conn.execute(
            select(col(Round.question_id))
            .join(Answer, col(Answer.round_id) == col(Round.id))
            .where(col(Answer.member_id) == member_id, col(Answer.answered_at) >= since)
        ).scalars()
        given = self.conn.execute(
            select(col(Round.question_id)).where(col(Round.member_id) == member_id, col(Round.opened_at) >= since)
        ).scalars()
        return set(answered) | set(given)

    def question_outcomes(self, member_id: int) -> list[QuestionOutcome]:
        """Per question a member answered: its answers and the right ones."""
        correct = func.sum(case((col(Answer.correct), 1), else_=0))
        rows = self.conn.execute(
            select(col(Round.question_id), func.count(), correct)
            .select_from(Answer)
            .join(Round, col(Round.id) == col(Answer.round_id))
            .where(col(Answer.member_id) == member_id)
            .group_by(col(Round.question_id))
        ).all()
        return [QuestionOutcome(question_id, int(count), int(right or 0)) for question_id, count, right in rows]

    def missed_answers(self, member_id: int, limit: int) -> list[MissedAnswer]:
        """A member's wrong answers, newest first."""
        rows = self.conn.execute(
            select(col(Round.question_id), col(Answer.choice), col(Round.choice_order), col(Answer.answered_at))
            .select_from(Answer)
            .join(Round, col(Round.id) == col(Answer.round_id))
            .where(col(Answer.member_id) == member_id, col(Answer.correct).is_(False))
            .order_by(col(Answer.answered_at).desc(), col(Answer.id).desc())
            .limit(limit)
        ).all()
        return [MissedAnswer(r[0], int(r[1]), r[2], r[3]) for r in rows]

    def export(self, community_id: int) -> list[ExportedAnswer]:
        """Every answer of the community, oldest first (the choice as its round showed it)."""
        return [
            ExportedAnswer(
                answered_at=r.answered_at,
                week=r.week,
                user_id=r.user_id,
                display_name=r.display_name,
                kind=r.kind,
                question_id=r.question_id,
                choice=int(r.choice),
                choice_order=r.choice_order,
                correct=bool(r.correct),
                points=int(r.points),
            )
            for r in self.conn.execute(
                select(
                    col(Answer.answered_at),
                    col(Answer.week),
                    col(Member.user_id),
                    col(Member.display_name),
                    col(Answer.kind),
                    col(Round.question_id),
                    col(Answer.choice),
                    col(Round.choice_order),
                    col(Answer.correct),
                    col(Answer.points),
                )
                .join(Member, col(Member.id) == col(Answer.member_id))
                .join(Round, col(Round.id) == col(Answer.round_id))
                .where(col(Answer.community_id) == community_id)
                .order_by(col(Answer.id))
            )
        ]
