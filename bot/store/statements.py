"""Statements of the answer hot path, built once per dialect with bind parameters.

Building a statement costs more Python time than SQLite takes to run it, and an answer
burst runs these thousands of times a second."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Table, and_, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col

from bot.store.tables import (
    Answer,
    Community,
    ForgottenAnswer,
    Member,
    MemberRating,
    Review,
    Round,
    WeeklyPoints,
)

ANSWERS: Table = Answer.__table__  # type: ignore[attr-defined]
MEMBERS: Table = Member.__table__  # type: ignore[attr-defined]
ROUNDS: Table = Round.__table__  # type: ignore[attr-defined]
WEEKLY: Table = WeeklyPoints.__table__  # type: ignore[attr-defined]


def _dialect(name: str) -> Any:
    return sqlite if name == "sqlite" else postgresql


@cache
def answer_lookup() -> Any:
    """The round, its community's time zone, the member (if known), their earlier answer, and
    whether they answered it before asking to be forgotten (the salted hash `user_key`)."""
    return (
        select(
            Round,
            col(Community.timezone),
            col(Member.id).label("known_member"),
            col(Answer.choice).label("previous"),
            col(ForgottenAnswer.user_key).label("forgotten"),
        )
        .join(Community, col(Community.id) == col(Round.community_id))
        .outerjoin(
            Member, and_(col(Member.community_id) == col(Community.id), col(Member.user_id) == bindparam("user_id"))
        )
        .outerjoin(Answer, and_(col(Answer.round_id) == col(Round.id), col(Answer.member_id) == col(Member.id)))
        .outerjoin(
            ForgottenAnswer,
            and_(
                col(ForgottenAnswer.round_id) == col(Round.id),
                col(ForgottenAnswer.user_key) == bindparam("user_key"),
            ),
        )
        .where(
            col(Round.id) == bindparam("round_id"),
            col(Community.platform) == bindparam("platform"),
            col(Community.external_id) == bindparam("community"),
        )
    )


@cache
def member_upsert(dialect: str) -> Any:
    """Insert a member or refresh their display name; returns the member id."""
    stmt = _dialect(dialect).insert(MEMBERS)
    return stmt.on_conflict_do_update(
        index_elements=["community_id", "user_id"], set_={"display_name": stmt.excluded.display_name}
    ).returning(MEMBERS.c.id)


@cache
def community_lookup() -> Any:
    """A community by its platform and the platform's id for it (every command and page asks)."""
    return select(Community).where(
        col(Community.platform) == bindparam("platform"), col(Community.external_id) == bindparam("external_id")
    )


@cache
def answer_insert(dialect: str) -> Any:
    """Insert an answer unless that member already answered that round; returns its id."""
    return (
        _dialect(dialect)
        .insert(ANSWERS)
        .on_conflict_do_nothing(index_elements=["round_id", "member_id"])
        .returning(ANSWERS.c.id)
    )


@cache
def earlier_outcomes(limit: int) -> Any:
    """Whether a member answered each of the community's previous daily rounds correctly,
    newest first (NULL where they did not answer)."""
    return (
        select(col(Answer.correct))
        .select_from(Round)
        .outerjoin(Answer, and_(col(Answer.round_id) == col(Round.id), col(Answer.member_id) == bindparam("member_id")))
        .where(
            col(Round.community_id) == bindparam("community_id"),
            col(Round.kind) == "daily",
            col(Round.id) < bindparam("round_id"),
        )
        .order_by(col(Round.id).desc())
        .limit(limit)
    )


@cache
def add_points() -> Any:
    """Add an answer's points to its member's all-time total."""
    return (
        MEMBERS.update()
        .where(MEMBERS.c.id == bindparam("member_id"))
        .values(points_total=MEMBERS.c.points_total + bindparam("points"))
    )


@cache
def add_week_points(dialect: str) -> Any:
    """Add an answer's points to its member's total for that ISO week (a row per member and week)."""
    stmt = _dialect(dialect).insert(WEEKLY)
    return stmt.on_conflict_do_update(
        index_elements=["member_id", "week"], set_={"points": WEEKLY.c.points + stmt.excluded.points}
    )


@cache
def review_insert(dialect: str) -> Any:
    """Start a member's review card for a question unless one exists."""
    table: Table = Review.__table__  # type: ignore[attr-defined]
    return _dialect(dialect).insert(table).on_conflict_do_nothing(index_elements=["member_id", "question_id"])


@cache
def member_ratings() -> Any:
    """A member's ratings by topic ("" overall)."""
    table: Table = MemberRating.__table__  # type: ignore[attr-defined]
    return select(table.c.topic, table.c.rating, table.c.answers).where(table.c.member_id == bindparam("member_id"))


@cache
def bump_member_rating(dialect: str) -> Any:
    """Create a member's rating at `rating` (the start plus this answer's change) with one
    answer, or add the change to the one there: one statement either way."""
    table: Table = MemberRating.__table__  # type: ignore[attr-defined]
    stmt = _dialect(dialect).insert(table)
    return stmt.on_conflict_do_update(
        index_elements=["member_id", "topic"],
        set_={"rating": table.c.rating + bindparam("delta"), "answers": table.c.answers + bindparam("counted")},
    )
