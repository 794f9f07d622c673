"""The answers the item analysis reads: one row per answer, its choice in the bank file's order."""

from __future__ import annotations

from sqlalchemy import Connection, Table, select

from bot.core.records import AnswerRow
from bot.store.tables import Answer, Community, QuestionRating, Round

answers: Table = Answer.__table__  # type: ignore[attr-defined]
rounds: Table = Round.__table__  # type: ignore[attr-defined]
communities: Table = Community.__table__  # type: ignore[attr-defined]
# Rounds that show their choices shuffled store the order drawn ("2,0,3,1": the first shown choice
# is the bank's third) and answers store the shown index; older rounds show the file order.
HAS_CHOICE_ORDER = "choice_order" in rounds.c


def file_index(displayed: int, choice_order: str | None) -> int:
    """The bank file index of the choice shown at `displayed` under a round's choice order."""
    if not choice_order:
        return displayed
    try:
        order = [int(part) for part in choice_order.split(",")]
    except ValueError:
        return displayed
    return order[displayed] if 0 <= displayed < len(order) else displayed


def answer_rows(
    conn: Connection, platform: str | None = None, external_id: str | None = None, community_id: int | None = None
) -> list[AnswerRow]:
    """Every answer, or those of the communities matching platform and/or external id (or id)."""
    columns = [rounds.c.question_id, answers.c.member_id, answers.c.choice, answers.c.correct]
    if HAS_CHOICE_ORDER:
        columns.append(rounds.c.choice_order)
    query = select(*columns).select_from(answers.join(rounds, answers.c.round_id == rounds.c.id))
    if platform is not None or external_id is not None:
        query = query.join(communities, answers.c.community_id == communities.c.id)
        if platform is not None:
            query = query.where(communities.c.platform == platform)
        if external_id is not None:
            query = query.where(communities.c.external_id == external_id)
    if community_id is not None:
        query = query.where(answers.c.community_id == community_id)
    query = query.order_by(answers.c.id)
    return [
        AnswerRow(
            question_id=row.question_id,
            member=str(row.member_id),
            choice=file_index(row.choice, row.choice_order if HAS_CHOICE_ORDER else None),
            correct=bool(row.correct),
        )
        for row in conn.execute(query)
    ]


def question_ratings(conn: Connection) -> dict[str, float]:
    """The rating each answered question has earned (bot/core/rating.py); the core gives an
    unanswered one its level's starting value."""
    table: Table = QuestionRating.__table__  # type: ignore[attr-defined]
    return {row.question_id: float(row.rating) for row in conn.execute(select(table.c.question_id, table.c.rating))}
