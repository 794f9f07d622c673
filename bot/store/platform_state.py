"""What the platforms keep between events: small values by key, and the events handled
(so that a platform's retry of one is noticed)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlmodel import col

from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import PlatformEvent, PlatformState


class PlatformRepo(Repo):
    """Platform state's part of one transaction's queries (PlatformTx)."""

    __slots__ = ()

    def state_get(self, key: str) -> str | None:
        return self.conn.execute(select(col(PlatformState.value)).where(col(PlatformState.key) == key)).scalar()

    def state_put(self, key: str, value: str, now: datetime) -> None:
        changed = self.conn.execute(
            update(PlatformState).where(col(PlatformState.key) == key).values(value=value, updated_at=now)
        ).rowcount
        if not changed:
            self.conn.execute(
                insert_ignoring(self.conn, PlatformState, ["key"]).values(key=key, value=value, updated_at=now)
            )

    def claim_event(self, platform: str, event_id: str, now: datetime, keep: timedelta) -> bool:
        """Note a platform event as handled; False when it was noted before (a retry). Events
        older than `keep` are forgotten on the way."""
        self.conn.execute(delete(PlatformEvent).where(col(PlatformEvent.seen_at) < now - keep))
        claimed = self.conn.execute(
            insert_ignoring(self.conn, PlatformEvent, ["platform", "event_id"])
            .values(platform=platform, event_id=event_id[:64], seen_at=now)
            .returning(col(PlatformEvent.event_id))
        ).scalar()
        return claimed is not None
