"""Statements of the answer hot path, built once per dialect with bind parameters.

Building a statement costs more Python time than SQLite takes to run it, and an answer
burst runs these thousands of times a second."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Table, and_, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from bot.store.tables import Answer, Community, Member, Round

ANSWERS: Table = Answer.__table__  # type: ignore[assignment]
MEMBERS: Table = Member.__table__  # type: ignore[assignment]


def _dialect(name: str) -> Any:
    return sqlite if name == "sqlite" else postgresql


@cache
def answer_lookup() -> Any:
    """The round, its community's time zone, the member (if known) and their earlier answer."""
    return (
        select(Round, Community.timezone, Member.id.label("known_member"), Answer.choice.label("previous"))
        .join(Community, Community.id == Round.community_id)
        .outerjoin(Member, and_(Member.community_id == Community.id, Member.user_id == bindparam("user_id")))
        .outerjoin(Answer, and_(Answer.round_id == Round.id, Answer.member_id == Member.id))
        .where(
            Round.id == bindparam("round_id"),
            Community.platform == bindparam("platform"),
            Community.external_id == bindparam("community"),
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
def answer_insert(dialect: str) -> Any:
    """Insert an answer unless that member already answered that round; returns its id."""
    return (
        _dialect(dialect)
        .insert(ANSWERS)
        .on_conflict_do_nothing(index_elements=["round_id", "member_id"])
        .returning(ANSWERS.c.id)
    )
