"""The scheduler's community queries: the communities a process serves (its platforms and a
Discord shard's guilds, in SQL), those whose settings changed since a version, and each
community's next close, due reveals and today's claims, each in one statement. Settings
versions are taken in bot/store/communities.py."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, case, cast, func, or_, select
from sqlmodel import col

from bot.core.scope import OnlyIds, Scheduled, Scope, ShardsOf
from bot.core.values import CommunityRef
from bot.store.rows import Repo, community_config
from bot.store.tables import Community, LeaderboardPost, Round

_CHUNK = 500  # ids per IN (...) list


def _served(scope: Scope, dialect: str) -> list[Any]:
    """WHERE clauses for `scope` on the communities table."""
    where: list[Any] = []
    if scope.platforms is not None:
        where.append(col(Community.platform).in_(scope.platforms))
    for platform, rule in scope.narrow:
        if isinstance(rule, OnlyIds):
            keep: Any = col(Community.external_id).in_(rule.ids)
        elif isinstance(rule, ShardsOf):
            shard = cast(col(Community.external_id), BigInteger).op(">>")(22) % rule.count
            if dialect == "postgresql":  # a non-numeric id would fail the cast there
                keep = case((col(Community.external_id).op("~")("^[0-9]{1,18}$"), shard.in_(rule.ids)), else_=False)
            else:  # SQLite casts anything; the scheduler checks the id again in Python
                keep = shard.in_(rule.ids)
        else:  # pragma: no cover - Narrowing is closed
            raise TypeError(f"unknown narrowing {rule!r}")
        where.append(or_(col(Community.platform) != platform, keep))
    return where


class SchedulingRepo(Repo):
    """The scheduler's reads (SchedulingTx)."""

    __slots__ = ()

    def scheduled(
        self, scope: Scope, after_version: int | None = None, ids: Iterable[int] | None = None
    ) -> list[Scheduled]:
        """The communities `scope` serves (changed after `after_version`, or with these ids)."""
        where = _served(scope, self.dialect)
        if after_version is not None:
            where.append(col(Community.version) > after_version)
        query = select(Community).where(*where).order_by(col(Community.id))
        if ids is None:
            rows = self.conn.execute(query).all()
        else:
            wanted = sorted(set(ids))
            rows = []
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                rows.extend(self.conn.execute(query.where(col(Community.id).in_(chunk))).all())
        return [Scheduled(CommunityRef(r.platform, r.external_id), community_config(r), int(r.version)) for r in rows]

    def next_closes(self, scope: Scope) -> dict[CommunityRef, datetime]:
        """Each served community's earliest close among its open daily rounds."""
        rows = self.conn.execute(
            select(col(Community.platform), col(Community.external_id), func.min(col(Round.closes_at)))
            .join(Community, col(Community.id) == col(Round.community_id))
            .where(col(Round.kind) == "daily", col(Round.closed_at).is_(None), *_served(scope, self.dialect))
            .group_by(col(Community.platform), col(Community.external_id))
        ).all()
        return {CommunityRef(platform, external): moment for platform, external, moment in rows if moment is not None}

    def due_rounds(self, scope: Scope, now: datetime) -> list[tuple[CommunityRef, int]]:
        """Open daily rounds of served communities whose window has ended, oldest first."""
        rows = self.conn.execute(
            select(col(Community.platform), col(Community.external_id), col(Round.id))
            .join(Community, col(Community.id) == col(Round.community_id))
            .where(
                col(Round.kind) == "daily",
                col(Round.closed_at).is_(None),
                col(Round.closes_at) <= now,
                *_served(scope, self.dialect),
            )
            .order_by(col(Round.id))
        ).all()
        return [(CommunityRef(platform, external), int(round_id or 0)) for platform, external, round_id in rows]

    def dailies_since(self, scope: Scope, since: datetime) -> set[tuple[CommunityRef, str, str]]:
        """(community, channel, local date) of the daily rounds opened since `since`."""
        rows = self.conn.execute(
            select(col(Community.platform), col(Community.external_id), col(Round.channel_id), col(Round.local_date))
            .join(Community, col(Community.id) == col(Round.community_id))
            .where(col(Round.kind) == "daily", col(Round.opened_at) >= since, *_served(scope, self.dialect))
        ).all()
        return {(CommunityRef(p, e), channel, day) for p, e, channel, day in rows if day is not None}

    def boards_posted(self, scope: Scope, weeks: Iterable[str]) -> set[tuple[CommunityRef, str]]:
        """(community, week) of the leaderboards already claimed in these weeks."""
        weeks = sorted(set(weeks))
        if not weeks:
            return set()
        rows = self.conn.execute(
            select(col(Community.platform), col(Community.external_id), col(LeaderboardPost.week))
            .join(Community, col(Community.id) == col(LeaderboardPost.community_id))
            .where(col(LeaderboardPost.week).in_(weeks), *_served(scope, self.dialect))
        ).all()
        return {(CommunityRef(p, e), week) for p, e, week in rows}
