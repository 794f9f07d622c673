"""Leaderboards: all time (the totals kept on members) and weekly (kept in weekly_points),
ranked and paged in SQL on the boards' indexes, and the weekly post's claim."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import func, select
from sqlmodel import col

from bot.core.records import RankedRow, WeekRank
from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import LeaderboardPost, Member, WeeklyPoints


class BoardsRepo(Repo):
    """The boards' part of one transaction's queries (BoardsTx)."""

    __slots__ = ()

    def board(self, community_id: int, week: str | None) -> list[tuple[str, int, int]]:
        """(name, points, member id) of members with points: in one ISO week (the week's totals
        kept in weekly_points), or all time (the totals kept on members)."""
        points, where = self._board_source(community_id, week)
        query = select(col(Member.display_name), points, col(Member.id)).where(*where, points > 0)
        if week is not None:
            query = query.select_from(WeeklyPoints).join(Member, col(Member.id) == col(WeeklyPoints.member_id))
        return [(name, int(total), cast(int, mid)) for name, total, mid in self.conn.execute(query).all()]

    @staticmethod
    def _board_source(community_id: int, week: str | None) -> tuple[Any, list[Any]]:
        """The points column of a board and the conditions that pick its rows (the board is those
        with points above 0: each caller adds its own lower bound, one range on the index)."""
        if week is None:
            return col(Member.points_total), [col(Member.community_id) == community_id]
        return col(WeeklyPoints.points), [
            col(WeeklyPoints.community_id) == community_id,
            col(WeeklyPoints.week) == week,
        ]

    def _board_count(self, points: Any, where: list[Any]) -> int:
        return int(self.conn.execute(select(func.count()).select_from(points.table).where(*where)).scalar_one())

    def board_size(self, community_id: int, week: str | None) -> int:
        """How many members have points on the board (an index-only count)."""
        points, where = self._board_source(community_id, week)
        return self._board_count(points, [*where, points > 0])

    def board_slice(self, community_id: int, week: str | None, start: int, size: int) -> list[RankedRow]:
        """Rows `start:start + size` of the board as `scoring.rank_rows` orders it (points,
        then the name without case), each (rank, name, points), ranked and paged in SQL on
        the board's index: the points at `start` (an index-only offset), how many have more
        (so the first row's rank), then only that page's rows, the ties at its top skipped
        by name. Names order as SQLite's lower() and code points (PostgreSQL: collation "C")."""
        points, where = self._board_source(community_id, week)
        at = self.conn.execute(
            select(points).where(*where, points > 0).order_by(points.desc()).limit(1).offset(start)
        ).scalar()
        if at is None:
            return []
        above = self._board_count(points, [*where, points > at])
        name: Any = col(Member.display_name)
        folded: Any = func.lower(name)
        if self.dialect == "postgresql":
            name, folded = name.collate("C"), folded.collate("C")
        query = (
            select(col(Member.display_name), points)
            .where(*where, points <= at, points > 0)
            .order_by(points.desc(), folded, name)
            .limit(size)
            .offset(start - above)
        )
        if week is not None:
            query = query.select_from(WeeklyPoints).join(Member, col(Member.id) == col(WeeklyPoints.member_id))
        rows: list[RankedRow] = []
        for position, (shown, total) in enumerate(self.conn.execute(query).all(), start=start):
            if not rows:
                rank = above + 1  # the first row is at `at` points: a tie shares its first row's rank
            elif rows[-1].points == total:
                rank = rows[-1].rank
            else:
                rank = position + 1  # everyone before it has more points
            rows.append(RankedRow(rank, shown, int(total)))
        return rows

    def week_rank(self, community_id: int, week: str, member_id: int) -> WeekRank | None:
        """A member's points and rank on one week's board (1 + how many have more), or None
        without points that week."""
        mine = self.conn.execute(
            select(col(WeeklyPoints.points)).where(
                col(WeeklyPoints.member_id) == member_id, col(WeeklyPoints.week) == week, col(WeeklyPoints.points) > 0
            )
        ).scalar()
        if mine is None:
            return None
        points, where = self._board_source(community_id, week)
        return WeekRank(int(mine), 1 + self._board_count(points, [*where, points > mine]))

    def week_points(self, member_id: int) -> dict[str, int]:
        """Points per ISO week of one member (weeks with points only; kept in weekly_points)."""
        rows = self.conn.execute(
            select(col(WeeklyPoints.week), col(WeeklyPoints.points)).where(col(WeeklyPoints.member_id) == member_id)
        ).all()
        return {week: int(points) for week, points in rows}

    def claim_week(self, community_id: int, week: str, now: datetime) -> bool:
        claimed = self.conn.execute(
            insert_ignoring(self.conn, LeaderboardPost, ["community_id", "week"])
            .values(community_id=community_id, week=week, posted_at=now)
            .returning(col(LeaderboardPost.id))
        ).scalar()
        return claimed is not None
