"""Questions' difficulty ratings, spread over a few rows each on PostgreSQL.

Every answer to a round moves its question's rating, so the answers of a burst (and of every
community asked the same question) would queue on one row lock held until each commits. On
PostgreSQL an answer adds its change to one of SLOTS rows of its question, picked at random;
slot 0 carries the question's starting rating, the others only changes, and a rating is the
sum of its rows. SQLite has one writer at a time anyway: it keeps everything in slot 0."""

from __future__ import annotations

import random
from collections.abc import Iterable
from functools import cache
from typing import Any

from sqlalchemy import Connection, Table, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite

from bot.store import fast
from bot.store.tables import QuestionRating

ratings: Table = QuestionRating.__table__  # type: ignore[attr-defined]
SLOTS = 16


@cache
def _one() -> Any:
    return select(func.sum(ratings.c.rating), func.sum(ratings.c.answers)).where(
        ratings.c.question_id == bindparam("question_id")
    )


@cache
def _bump(dialect: str) -> Any:
    """Create the slot's row at `rating` with one answer, or add `delta` to the one there."""
    stmt = (sqlite if dialect == "sqlite" else postgresql).insert(ratings)
    return stmt.on_conflict_do_update(
        index_elements=["question_id", "slot"],
        set_={"rating": ratings.c.rating + bindparam("delta"), "answers": ratings.c.answers + bindparam("counted")},
    )


@cache
def _bump_beside_start() -> Any:
    """PostgreSQL, one statement: the question's slot 0 at its start unless it is there (no
    row lock when it is), and the change added to another slot."""
    start = (
        postgresql.insert(ratings)
        .values(question_id=bindparam("start_question"), slot=0, rating=bindparam("start"), answers=0)
        .on_conflict_do_nothing(index_elements=["question_id", "slot"])
        .cte("start_row")
    )
    return _bump("postgresql").add_cte(start)


def bump(conn: Connection, question_id: str, start: float, delta: float) -> None:
    """Add one answer's `delta` to a question's rating (created at `start`)."""
    slot = random.randrange(SLOTS) if conn.dialect.name == "postgresql" else 0
    if slot == 0:
        values = {"question_id": question_id, "slot": 0, "rating": start + delta, "answers": 1}
        fast.rows(conn, _bump(conn.dialect.name), {**values, "delta": delta, "counted": 1})
        return
    values = {"question_id": question_id, "slot": slot, "rating": delta, "answers": 1, "delta": delta, "counted": 1}
    fast.rows(conn, _bump_beside_start(), {**values, "start_question": question_id, "start": start})


def read(conn: Connection, question_ids: Iterable[str] | None = None) -> dict[str, tuple[float, int]]:
    """Questions' ratings (rating, answers): those asked for, or every rated one."""
    if question_ids is not None:
        wanted = list(question_ids)
        if len(wanted) == 1:  # the answer hot path: one prepared statement
            found = fast.rows(conn, _one(), {"question_id": wanted[0]})
            if not found or found[0][0] is None:
                return {}
            return {wanted[0]: (float(found[0][0]), int(found[0][1]))}
    query = select(ratings.c.question_id, func.sum(ratings.c.rating), func.sum(ratings.c.answers)).group_by(
        ratings.c.question_id
    )
    if question_ids is not None:
        query = query.where(ratings.c.question_id.in_(wanted))
    return {str(qid): (float(rating), int(answers)) for qid, rating, answers in conn.execute(query).all()}
