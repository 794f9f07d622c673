"""The communities and their settings.

`communities.version` is a counter shared by all rows: every settings change (and every new
community) takes the next value, so "changed since version v" is `version > v`. Taking it is
serialized (SQLite has one writer; PostgreSQL takes a transaction-scoped advisory lock), so
a change that becomes visible never carries a smaller version than one already seen."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Table, func, select, text, update
from sqlmodel import col

from bot.core.records import SettingChange
from bot.core.rules.community import CommunityConfig
from bot.core.values import CommunityRef
from bot.store import fast, statements
from bot.store.database import insert_ignoring
from bot.store.rows import Repo, community_config
from bot.store.tables import Community

# The PostgreSQL advisory lock key that serializes community version numbers (our own constant).
_VERSION_LOCK = 0x5B_C0_14
_CHUNK = 500  # ids per IN (...) list
communities: Table = Community.__table__  # type: ignore[attr-defined]
_SETTINGS = frozenset(("channel_id", "timezone", "daily_time", "window_hours", "topics", "web_public", "paused"))


class CommunitiesRepo(Repo):
    """The communities' queries (CommunitiesTx)."""

    __slots__ = ()

    def find_community(self, platform: str, external_id: str) -> CommunityConfig | None:
        # A statement built once, on the driver (an ORM-entity select built per call cost 0.3 ms).
        found = fast.rows(self.conn, statements.community_lookup(), {"platform": platform, "external_id": external_id})
        return community_config(found[0]) if found else None

    def find_communities(self, refs: Iterable[CommunityRef]) -> dict[CommunityRef, CommunityConfig]:
        """The settings of those of `refs` that exist, by key."""
        by_platform: dict[str, set[str]] = defaultdict(set)
        for ref in refs:
            by_platform[ref.platform].add(ref.community_id)
        found: dict[CommunityRef, CommunityConfig] = {}
        for platform, ids in by_platform.items():
            wanted = sorted(ids)
            for start in range(0, len(wanted), _CHUNK):
                rows = self.conn.execute(
                    select(communities).where(
                        communities.c.platform == platform,
                        communities.c.external_id.in_(wanted[start : start + _CHUNK]),
                    )
                ).all()
                found.update((CommunityRef(platform, row.external_id), community_config(row)) for row in rows)
        return found

    def ensure_community(
        self, platform: str, external_id: str, name: str, timezone: str, window_hours: int, now: datetime
    ) -> CommunityConfig:
        found = self.find_community(platform, external_id)
        if found is not None:
            return found
        self.conn.execute(
            insert_ignoring(self.conn, Community, ["platform", "external_id"]).values(
                platform=platform,
                external_id=external_id,
                name=name,
                timezone=timezone,
                window_hours=window_hours,
                created_at=now,
            )
        )
        created = self.find_community(platform, external_id)
        if created is None:  # pragma: no cover - inserted above or by a concurrent writer
            raise RuntimeError(f"community {platform}/{external_id} vanished after insert")
        self._bump_version(created.id)  # new: the schedulers' refresh picks it up
        return created

    def change_setting(self, community_id: int, change: SettingChange) -> CommunityConfig:
        """Store one setting (checked by bot/core/rules/community.py's `parse_setting`)."""
        if change.column not in _SETTINGS:  # the type says so; a column name reaches SQL
            raise ValueError(f"not a community setting: {change.column!r}")
        self.conn.execute(
            update(Community).where(col(Community.id) == community_id).values({change.column: change.value})
        )
        self._bump_version(community_id)  # the schedulers' refresh reads what changed
        return community_config(self.conn.execute(select(Community).where(col(Community.id) == community_id)).one())

    def set_paused(self, community_id: int, paused: bool) -> CommunityConfig:
        return self.change_setting(community_id, SettingChange("paused", paused))

    def all(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        rows = self.conn.execute(select(Community).order_by(col(Community.id))).all()
        return [(CommunityRef(r.platform, r.external_id), community_config(r)) for r in rows]

    def _bump_version(self, community_id: int) -> None:
        """Give the community the next settings version (in the change's own transaction)."""
        if self.dialect == "postgresql":
            self.conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _VERSION_LOCK})
        latest = select(func.coalesce(func.max(col(Community.version)), 0) + 1).scalar_subquery()
        self.conn.execute(update(Community).where(col(Community.id) == community_id).values(version=latest))
