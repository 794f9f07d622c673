"""The queries of a community's FSRS fit: the answers its review log is built from, and the
fitted parameters kept per community (community_fsrs)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, Table, or_, select, update

from bot.core.records import AnsweredReview, FsrsFit
from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import Answer, CommunityFsrs, Review, Round

answers: Table = Answer.__table__  # type: ignore[attr-defined]
rounds: Table = Round.__table__  # type: ignore[attr-defined]
reviews: Table = Review.__table__  # type: ignore[attr-defined]
fitted: Table = CommunityFsrs.__table__  # type: ignore[attr-defined]

def review_answers(conn: Connection, community_id: int) -> list[AnsweredReview]:
    """Every answer of the community to a question one of its members has a review card for:
    the cards' first misses and their reviews (bot.core.rules.fsrs_params.review_log reads them)."""
    query = (
        select(
            answers.c.member_id,
            rounds.c.question_id,
            answers.c.kind,
            answers.c.correct,
            answers.c.answered_at,
            answers.c.confidence,
            rounds.c.opened_at,
        )
        .select_from(
            answers.join(rounds, answers.c.round_id == rounds.c.id).join(
                reviews,
                (reviews.c.member_id == answers.c.member_id) & (reviews.c.question_id == rounds.c.question_id),
            )
        )
        .where(answers.c.community_id == community_id)
        .order_by(answers.c.member_id, rounds.c.question_id, answers.c.answered_at)
    )
    return [AnsweredReview(int(r[0]), str(r[1]), str(r[2]), bool(r[3]), r[4], r[5], r[6]) for r in conn.execute(query)]


def parameters_of(conn: Connection, community_id: int) -> FsrsFit | None:
    """The community's stored fit, None without a row."""
    row = conn.execute(
        select(fitted.c.parameters, fitted.c.fitted_at, fitted.c.reviews).where(fitted.c.community_id == community_id)
    ).first()
    return None if row is None else FsrsFit(row.parameters, row.fitted_at, int(row.reviews))


def _ensure(conn: Connection, community_id: int) -> None:
    conn.execute(insert_ignoring(conn, fitted, ["community_id"]).values(community_id=community_id, reviews=0))


def save(conn: Connection, community_id: int, parameters: str | None, reviews: int, now: datetime) -> None:
    """A fit's outcome: new parameters (None: keep the ones in use) from `reviews` counted reviews."""
    _ensure(conn, community_id)
    values: dict[str, object] = {"reviews": reviews, "checked_at": now}
    if parameters is not None:
        values |= {"parameters": parameters, "fitted_at": now}
    conn.execute(update(fitted).where(fitted.c.community_id == community_id).values(values))


def claim_week(conn: Connection, community_id: int, week: str) -> bool:
    """The weekly fit of `week`, once per community whichever process asks first."""
    _ensure(conn, community_id)
    done = conn.execute(
        update(fitted)
        .where(fitted.c.community_id == community_id, or_(fitted.c.week.is_(None), fitted.c.week != week))
        .values(week=week)
    )
    return done.rowcount == 1


class FsrsRepo(Repo):
    """A community's FSRS fit's part of one transaction's queries (FsrsTx)."""

    __slots__ = ()

    def fsrs_answers(self, community_id: int) -> list[AnsweredReview]:
        return review_answers(self.conn, community_id)

    def fsrs_parameters(self, community_id: int) -> FsrsFit | None:
        return parameters_of(self.conn, community_id)

    def fsrs_save(self, community_id: int, parameters: str | None, reviews: int, now: datetime) -> None:
        save(self.conn, community_id, parameters, reviews, now)

    def fsrs_claim_week(self, community_id: int, week: str) -> bool:
        return claim_week(self.conn, community_id, week)
