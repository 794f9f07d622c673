"""The item analysis's figures: kept in each answer's own transaction (`count_answer`; what is
kept is what bot/core/item_analysis.py's `tally` computes), taken out again for /forget-me, and read for the
flags in a few rows; and every answer, one row each, for the recount.

Choices are in the bank file's order. SqlTx inherits ItemStatsQueries."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from functools import cache
from typing import Any

from sqlalchemy import Connection, Table, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite

from bot.core.records import AnswerRow, ChoiceCount, MemberPick
from bot.store import fast
from bot.store.tables import Answer, Community, ItemCount, ItemMember, ItemPick, QuestionRating, Round

answers: Table = Answer.__table__  # type: ignore[attr-defined]
rounds: Table = Round.__table__  # type: ignore[attr-defined]
communities: Table = Community.__table__  # type: ignore[attr-defined]
item_counts: Table = ItemCount.__table__  # type: ignore[attr-defined]
item_picks: Table = ItemPick.__table__  # type: ignore[attr-defined]
item_members: Table = ItemMember.__table__  # type: ignore[attr-defined]
SLOTS = 8  # rows per question and choice: concurrent answers to one round lock different ones
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


# ------------------------------------------------------------------ kept per answer


@cache
def _upsert(dialect: str, table_name: str) -> Any:
    """Insert a row of one answer's counts, or add them to the row already there."""
    table = {t.name: t for t in (item_counts, item_picks, item_members)}[table_name]
    stmt = (sqlite if dialect == "sqlite" else postgresql).insert(table)
    keys = [c.name for c in table.primary_key.columns]
    return stmt.on_conflict_do_update(
        index_elements=keys,
        set_={"answers": table.c.answers + stmt.excluded.answers, "correct": table.c.correct + stmt.excluded.correct},
    )


def count_answer(
    conn: Connection, community_id: int, member_id: int, question_id: str, choice: int, correct: bool
) -> None:
    """Add one first answer (`choice` in the bank file's order) to the kept figures, in the
    answer's transaction. The question's shared row goes last: it is held the shortest."""
    dialect = conn.dialect.name
    right = int(correct)
    common = {"community_id": community_id, "answers": 1, "correct": right}
    fast.rows(conn, _upsert(dialect, "item_members"), {"member_id": member_id, **common})
    fast.rows(
        conn,
        _upsert(dialect, "item_picks"),
        {"member_id": member_id, "question_id": question_id, "choice": choice, **common},
    )
    fast.rows(
        conn,
        _upsert(dialect, "item_counts"),
        {"question_id": question_id, "choice": choice, "slot": member_id % SLOTS, **common},
    )


def forget_member(conn: Connection, member_id: int) -> None:
    """Take a member's answers out of the kept figures (/forget-me), before they are deleted."""
    found = conn.execute(
        select(
            item_picks.c.community_id,
            item_picks.c.question_id,
            item_picks.c.choice,
            item_picks.c.answers,
            item_picks.c.correct,
        )
        .where(item_picks.c.member_id == member_id)
        .order_by(item_picks.c.question_id, item_picks.c.choice)  # one lock order for every forget
    ).all()
    slot = member_id % SLOTS
    for row in found:
        conn.execute(
            item_counts.update()
            .where(
                item_counts.c.community_id == row.community_id,
                item_counts.c.question_id == row.question_id,
                item_counts.c.choice == row.choice,
                item_counts.c.slot == slot,
            )
            .values(answers=item_counts.c.answers - row.answers, correct=item_counts.c.correct - row.correct)
        )
    conn.execute(item_picks.delete().where(item_picks.c.member_id == member_id))
    conn.execute(item_members.delete().where(item_members.c.member_id == member_id))


def rebuild(conn: Connection, community_id: int | None = None) -> int:
    """Replace the kept figures (of one community, or all) by the recount of every answer;
    returns the answers counted. For a database filled before they were kept."""
    scopes = (
        [community_id]
        if community_id is not None
        else [int(r[0]) for r in conn.execute(select(answers.c.community_id).distinct())]
    )
    counted = 0
    for scope in scopes:
        for table in (item_counts, item_picks, item_members):
            conn.execute(table.delete().where(table.c.community_id == scope))
        rows = answer_rows(conn, community_id=scope)
        counted += len(rows)
        picks: dict[tuple[int, str, int], list[int]] = defaultdict(lambda: [0, 0])
        slots: dict[tuple[str, int, int], list[int]] = defaultdict(lambda: [0, 0])
        totals: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for row in rows:
            member = int(row.member)
            for found in (
                picks[(member, row.question_id, row.choice)],
                slots[(row.question_id, row.choice, member % SLOTS)],
                totals[member],
            ):
                found[0] += 1
                found[1] += row.correct
        pick_rows = [
            {"member_id": m, "question_id": q, "choice": c, "community_id": scope, "answers": n, "correct": r}
            for (m, q, c), (n, r) in picks.items()
        ]
        if pick_rows:
            conn.execute(item_picks.insert(), pick_rows)
            conn.execute(
                item_members.insert(),
                [{"member_id": m, "community_id": scope, "answers": n, "correct": r} for m, (n, r) in totals.items()],
            )
            conn.execute(
                item_counts.insert(),
                [
                    {"community_id": scope, "question_id": q, "choice": c, "slot": s, "answers": n, "correct": r}
                    for (q, c, s), (n, r) in slots.items()
                ],
            )
    return counted


# ------------------------------------------------------------------ read


def choice_counts(conn: Connection, community_id: int) -> list[ChoiceCount]:
    """Every question's kept answers and right ones per choice: a few rows a community."""
    query = (
        select(
            item_counts.c.question_id,
            item_counts.c.choice,
            func.sum(item_counts.c.answers),
            func.sum(item_counts.c.correct),
        )
        .where(item_counts.c.community_id == bindparam("community_id"))
        .group_by(item_counts.c.question_id, item_counts.c.choice)
    )
    return [
        ChoiceCount(q, int(c), int(n), int(r))
        for q, c, n, r in conn.execute(query, {"community_id": community_id})
        if n
    ]


def member_picks(conn: Connection, community_id: int, question_ids: Iterable[str] | None = None) -> list[MemberPick]:
    """The members' kept picks of these questions (or of all), beside each member's totals."""
    query = (
        select(
            item_picks.c.member_id,
            item_picks.c.question_id,
            item_picks.c.choice,
            item_picks.c.answers,
            item_picks.c.correct,
            item_members.c.answers.label("member_answers"),
            item_members.c.correct.label("member_correct"),
        )
        .select_from(item_picks.join(item_members, item_members.c.member_id == item_picks.c.member_id))
        .where(item_picks.c.community_id == community_id)
    )
    if question_ids is not None:
        wanted = sorted(set(question_ids))
        if not wanted:
            return []
        query = query.where(item_picks.c.question_id.in_(wanted))
    return [
        MemberPick(
            str(r.member_id),
            r.question_id,
            int(r.choice),
            int(r.answers),
            int(r.correct),
            int(r.member_answers),
            int(r.member_correct),
        )
        for r in conn.execute(query)
        if r.answers
    ]


class ItemStatsQueries:
    """The item analysis's part of one transaction's queries."""

    conn: Connection

    def item_counts(self, community_id: int) -> list[ChoiceCount]:
        return choice_counts(self.conn, community_id)

    def item_picks(self, community_id: int, question_ids: Iterable[str]) -> list[MemberPick]:
        return member_picks(self.conn, community_id, question_ids)


def kept_figures(
    conn: Connection, platform: str | None = None, external_id: str | None = None
) -> tuple[list[ChoiceCount], list[MemberPick], int]:
    """The kept counts and every member's picks of the communities matching platform and/or
    external id (all without either), for the CLI's full table; and how many answers those
    communities have stored, which the counts add up to unless answers were written some
    other way than through the store (a bulk load)."""
    query = select(communities.c.id).order_by(communities.c.id)
    if platform is not None:
        query = query.where(communities.c.platform == platform)
    if external_id is not None:
        query = query.where(communities.c.external_id == external_id)
    counts: list[ChoiceCount] = []
    picks: list[MemberPick] = []
    stored = 0
    for (community_id,) in conn.execute(query):
        counts += choice_counts(conn, community_id)
        picks += member_picks(conn, community_id)
        stored += int(
            conn.execute(
                select(func.count()).select_from(answers).where(answers.c.community_id == community_id)
            ).scalar_one()
        )
    return counts, picks, stored
