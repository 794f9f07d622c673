"""The queries of streak repair: a member's daily history with round ids, and the rounds they
earned back (bot/core/services/streak_repair.py holds the rules)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Table, and_, select

from bot.core.records import DailyOutcome
from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import Answer, Round, StreakRepair

answers: Table = Answer.__table__  # type: ignore[attr-defined]
rounds: Table = Round.__table__  # type: ignore[attr-defined]
repairs: Table = StreakRepair.__table__  # type: ignore[attr-defined]


class StreaksRepo(Repo):
    """Streak repair's part of one transaction's queries (StreaksTx)."""

    __slots__ = ()

    def daily_history(self, community_id: int, member_id: int) -> list[DailyOutcome]:
        """Every daily round of the community, newest first, and whether the member answered it
        right (None where they did not answer)."""
        rows = self.conn.execute(
            select(rounds.c.id, rounds.c.local_date, rounds.c.closed_at, rounds.c.closes_at, answers.c.correct)
            .select_from(
                rounds.outerjoin(answers, and_(answers.c.round_id == rounds.c.id, answers.c.member_id == member_id))
            )
            .where(rounds.c.community_id == community_id, rounds.c.kind == "daily")
            .order_by(rounds.c.id.desc())
        ).all()
        return [DailyOutcome(r[0], r[1], r[2], r[3], None if r[4] is None else bool(r[4])) for r in rows]

    def streak_repairs(self, member_id: int) -> dict[int, datetime]:
        """The daily rounds the member earned back: round id -> when."""
        rows = self.conn.execute(
            select(repairs.c.round_id, repairs.c.repaired_at).where(repairs.c.member_id == member_id)
        ).all()
        return {int(r[0]): r[1] for r in rows}

    def add_streak_repair(self, community_id: int, member_id: int, round_id: int, now: datetime) -> bool:
        """Record a repaired round; False when it was repaired already (a concurrent answer)."""
        inserted = self.conn.execute(
            insert_ignoring(self.conn, repairs, ["member_id", "round_id"])
            .values(community_id=community_id, member_id=member_id, round_id=round_id, repaired_at=now)
            .returning(repairs.c.id)
        ).first()
        return inserted is not None
