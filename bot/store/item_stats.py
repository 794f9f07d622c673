"""The item analysis's figures: kept in each answer's own transaction (`count_answer`; what is
kept is what bot/core/rules/item_analysis.py's `tally` computes), taken out again for /forget-me, and read for the
flags in a few rows; and every answer, one row each, for the recount.

Choices are in the bank file's order."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timezone
from functools import cache
from typing import Any

from sqlalchemy import Connection, String, Table, bindparam, func, select, text
from sqlalchemy.dialects import postgresql, sqlite

from bot.core.records import AnswerRow, ChoiceCount, MemberPick, TopThird
from bot.store import fast
from bot.store.rows import Repo
from bot.store.tables import (
    Answer,
    Community,
    ItemCount,
    ItemMember,
    ItemPick,
    PlatformState,
    QuestionRating,
    Round,
)

answers: Table = Answer.__table__  # type: ignore[attr-defined]
rounds: Table = Round.__table__  # type: ignore[attr-defined]
communities: Table = Community.__table__  # type: ignore[attr-defined]
item_counts: Table = ItemCount.__table__  # type: ignore[attr-defined]
item_picks: Table = ItemPick.__table__  # type: ignore[attr-defined]
item_members: Table = ItemMember.__table__  # type: ignore[attr-defined]
platform_state: Table = PlatformState.__table__  # type: ignore[attr-defined]
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
    """The rating each answered question has earned (bot/core/rules/rating.py); the core gives an
    unanswered one its level's starting value."""
    table: Table = QuestionRating.__table__  # type: ignore[attr-defined]
    query = select(table.c.question_id, func.sum(table.c.rating)).group_by(table.c.question_id)  # its rows' sum
    return {str(qid): float(rating) for qid, rating in conn.execute(query)}


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
    for scope in sorted({row.community_id for row in found}):
        mark_changed(conn, scope)
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
        mark_changed(conn, scope)
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


def _changes_key(community_id: int) -> str:
    return f"item-figures-changed:{community_id}"


def mark_changed(conn: Connection, community_id: int) -> None:
    """Record that a community's kept figures changed other than by one more answer (a
    /forget-me, a rebuild): a new token, so that a verdict remembered before is not reused."""
    stmt = (sqlite if conn.dialect.name == "sqlite" else postgresql).insert(platform_state)
    values = {"key": _changes_key(community_id), "value": uuid.uuid4().hex, "updated_at": datetime.now(timezone.utc)}
    conn.execute(
        stmt.values(**values).on_conflict_do_update(
            index_elements=["key"], set_={"value": stmt.excluded.value, "updated_at": stmt.excluded.updated_at}
        )
    )


def changed_token(conn: Connection, community_id: int) -> str | None:
    """The token `mark_changed` last wrote for the community (None before any)."""
    found = conn.execute(
        select(platform_state.c.value).where(platform_state.c.key == _changes_key(community_id))
    ).scalar()
    return None if found is None else str(found)


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


# One question's members ranked by rest-score (their accuracy on the other questions still in
# the pool), strongest first, ties by member key as text then choice, as bot/core/rules/item_analysis.py
# ranks them; the first third of the answers (rounded up) counted per choice, the boundary
# member's answers taken in part. Every figure is an integer but the rest-score, a double
# divided as Python divides.
_TOP_THIRDS = """
WITH here AS (
  SELECT member_id, question_id, SUM(answers) AS n, SUM(correct) AS r FROM item_picks
  WHERE community_id = :community_id AND question_id IN :wanted AND answers > 0
  GROUP BY member_id, question_id
), gone AS (
  SELECT member_id, SUM(answers) AS n, SUM(correct) AS r FROM item_picks
  WHERE community_id = :community_id AND question_id IN :outside AND answers > 0
  GROUP BY member_id
), observed AS (
  SELECT p.question_id, p.member_id, p.choice, p.answers,
    CAST(m.correct - COALESCE(g.r, 0) - h.r AS {real}) / (m.answers - COALESCE(g.n, 0) - h.n) AS rest
  FROM item_picks p
  JOIN here h ON h.member_id = p.member_id AND h.question_id = p.question_id
  JOIN item_members m ON m.member_id = p.member_id
  LEFT JOIN gone g ON g.member_id = p.member_id
  WHERE p.community_id = :community_id AND p.question_id IN :wanted AND p.answers > 0
    AND m.answers - COALESCE(g.n, 0) - h.n > 0
), ranked AS (
  SELECT question_id, choice, answers,
    SUM(answers) OVER (
      PARTITION BY question_id ORDER BY rest DESC, CAST(member_id AS {text}) {collate}, choice ROWS UNBOUNDED PRECEDING
    ) - answers AS before,
    (SUM(answers) OVER (PARTITION BY question_id) + 2) / 3 AS top
  FROM observed
)
SELECT r.question_id, r.choice, MAX(r.top) AS top,
  SUM(CASE WHEN r.before < r.top THEN {least}(r.answers, r.top - r.before) ELSE 0 END) AS taken
FROM ranked r GROUP BY r.question_id, r.choice
"""
_HEAVIEST = """
SELECT question_id, MAX(n) FROM (
  SELECT member_id, question_id, SUM(answers) AS n FROM item_picks
  WHERE community_id = :community_id AND question_id IN :wanted GROUP BY member_id, question_id
) AS per_member GROUP BY question_id
"""


@cache
def _top_statements(dialect: str) -> tuple[Any, Any]:
    if dialect == "postgresql":
        sql = _TOP_THIRDS.format(real="DOUBLE PRECISION", text="TEXT", collate='COLLATE "C"', least="LEAST")
    else:
        sql = _TOP_THIRDS.format(real="REAL", text="TEXT", collate="", least="MIN")
    expanding = (
        bindparam("wanted", type_=String(), expanding=True),
        bindparam("outside", type_=String(), expanding=True),
    )
    return text(sql).bindparams(*expanding), text(_HEAVIEST).bindparams(expanding[0])


def top_thirds(
    conn: Connection, community_id: int, question_ids: Iterable[str], outside: Iterable[str] = ()
) -> list[TopThird]:
    """For each of these questions, its strongest third of answers counted per choice, ranked
    in SQL: a few rows a question. `outside`: the answered questions no longer in the pool,
    left out of the rest-scores. A question nobody has a rest-score on gets top 0."""
    wanted = sorted(set(question_ids))
    if not wanted:
        return []
    ranked, heaviest = _top_statements(conn.dialect.name)
    found: dict[str, tuple[int, dict[int, int]]] = {}
    values = {"community_id": community_id, "wanted": wanted, "outside": sorted(set(outside))}
    for question_id, choice, top, taken in conn.execute(ranked, values):
        entry = found.setdefault(question_id, (int(top), {}))
        entry[1][int(choice)] = int(taken)
    most = {q: int(n) for q, n in conn.execute(heaviest, {"community_id": community_id, "wanted": wanted})}
    out = []
    for question_id in wanted:
        top, per_choice = found.get(question_id, (0, {}))
        width = max(per_choice, default=-1) + 1
        picks = tuple(per_choice.get(i, 0) for i in range(max(width, 0)))
        out.append(TopThird(question_id, top, picks, most.get(question_id, 0)))
    return out


class ItemStatsRepo(Repo):
    """The item analysis's part of one transaction's queries (ItemStatsTx)."""

    __slots__ = ()

    def item_counts(self, community_id: int) -> list[ChoiceCount]:
        return choice_counts(self.conn, community_id)

    def item_top_thirds(self, community_id: int, question_ids: Iterable[str], outside: Iterable[str]) -> list[TopThird]:
        return top_thirds(self.conn, community_id, question_ids, outside)

    def item_changed(self, community_id: int) -> str | None:
        return changed_token(self.conn, community_id)


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
