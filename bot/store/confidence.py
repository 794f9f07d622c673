"""The queries of confidence (how sure a member was of an answer) and calibration."""

from __future__ import annotations

from sqlalchemy import Connection, Table, func, select, update

from bot.core.records import ConfidenceContext
from bot.store.rows import Repo
from bot.store.tables import Answer, Round

answers: Table = Answer.__table__  # type: ignore[attr-defined]
rounds: Table = Round.__table__  # type: ignore[attr-defined]


def set_review_before(conn: Connection, round_id: int, member_id: int, state: str) -> None:
    conn.execute(
        update(answers)
        .where(answers.c.round_id == round_id, answers.c.member_id == member_id)
        .values(review_before=state)
    )


def context(conn: Connection, round_id: int, member_id: int) -> ConfidenceContext | None:
    row = conn.execute(
        select(
            answers.c.kind,
            answers.c.correct,
            answers.c.answered_at,
            answers.c.confidence,
            answers.c.review_before,
            rounds.c.question_id,
            rounds.c.opened_at,
            rounds.c.number,
        )
        .select_from(answers.join(rounds, answers.c.round_id == rounds.c.id))
        .where(answers.c.round_id == round_id, answers.c.member_id == member_id)
    ).first()
    if row is None:
        return None
    return ConfidenceContext(
        round_id=round_id,
        member_id=member_id,
        kind=row.kind,
        correct=bool(row.correct),
        answered_at=row.answered_at,
        confidence=row.confidence,
        review_before=row.review_before,
        question_id=row.question_id,
        opened_at=row.opened_at,
        number=row.number if row.number is not None else round_id,
    )


def set_confidence(conn: Connection, round_id: int, member_id: int, confidence: str) -> bool:
    """Record it unless one was recorded already (a second press, a concurrent one)."""
    done = conn.execute(
        update(answers)
        .where(answers.c.round_id == round_id, answers.c.member_id == member_id, answers.c.confidence.is_(None))
        .values(confidence=confidence)
    )
    return done.rowcount == 1


def counts(
    conn: Connection, *, member_id: int | None = None, community_id: int | None = None
) -> dict[tuple[str, bool], int]:
    """(confidence, correct) -> answers, of one member or of a whole community."""
    query = select(answers.c.confidence, answers.c.correct, func.count()).where(answers.c.confidence.is_not(None))
    if member_id is not None:
        query = query.where(answers.c.member_id == member_id)
    if community_id is not None:
        query = query.where(answers.c.community_id == community_id)
    query = query.group_by(answers.c.confidence, answers.c.correct)
    return {(str(sure), bool(correct)): int(n) for sure, correct, n in conn.execute(query)}


class ConfidenceRepo(Repo):
    """Confidence's part of one transaction's queries (ConfidenceTx)."""

    __slots__ = ()

    def set_review_before(self, round_id: int, member_id: int, state: str) -> None:
        set_review_before(self.conn, round_id, member_id, state)

    def confidence_context(self, round_id: int, member_id: int) -> ConfidenceContext | None:
        return context(self.conn, round_id, member_id)

    def set_confidence(self, round_id: int, member_id: int, value: str) -> bool:
        return set_confidence(self.conn, round_id, member_id, value)

    def confidence_counts(
        self, member_id: int | None = None, community_id: int | None = None
    ) -> dict[tuple[str, bool], int]:
        return counts(self.conn, member_id=member_id, community_id=community_id)
