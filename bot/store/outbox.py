"""The outbox: posts written in the transaction that decides, claimed on a lease by the
deliverers (bot/background/delivery.py), sent, retried or given up."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlmodel import col

from bot.core.records import OutboxRecord
from bot.store.database import insert_ignoring
from bot.store.rows import Repo, outbox_record
from bot.store.tables import Community, Outbox


class OutboxRepo(Repo):
    """The outbox's part of one transaction's queries (OutboxTx)."""

    __slots__ = ()

    def enqueue(self, community_id: int, channel_id: str, kind: str, key: str, now: datetime) -> None:
        """Queue a post for the community's platform, once per (community, kind, key)."""
        platform = select(col(Community.platform)).where(col(Community.id) == community_id).scalar_subquery()
        self.conn.execute(
            insert_ignoring(self.conn, Outbox, ["community_id", "kind", "key"]).values(
                community_id=community_id,
                platform=platform,
                channel_id=channel_id,
                kind=kind,
                key=key,
                state="pending",
                attempts=0,
                next_try=now,
                created_at=now,
            )
        )

    def outbox_due(self, platform: str, now: datetime) -> bool:
        """Whether any post of `platform` waits to be sent now (a read: idle passes of the
        deliverers never take the write lock)."""
        return (
            self.conn.execute(
                select(col(Outbox.id))
                .where(
                    col(Outbox.platform) == platform,
                    col(Outbox.state) == "pending",
                    col(Outbox.next_try) <= now,
                    or_(col(Outbox.claimed_until).is_(None), col(Outbox.claimed_until) < now),
                )
                .limit(1)
            ).first()
            is not None
        )

    def claim_outbox(
        self,
        platform: str,
        community: str | None,
        worker: str,
        now: datetime,
        lease: timedelta,
        limit: int,
        serves: Callable[[str], bool] | None = None,
    ) -> list[OutboxRecord]:
        """Take up to `limit` due rows for `worker` until `now + lease`. A row claimed by a
        live lease is skipped; on PostgreSQL rows another transaction is claiming are skipped
        (SKIP LOCKED), on SQLite the write transaction already holds the only write lock.
        `serves` (a community's external id -> bool) keeps only the communities this process
        serves (a Discord shard's guilds); the others' rows are left unclaimed."""
        query = (
            select(Outbox, col(Community.external_id))
            .join(Community, col(Community.id) == col(Outbox.community_id))
            .where(
                col(Outbox.platform) == platform,
                col(Outbox.state) == "pending",
                col(Outbox.next_try) <= now,
                or_(col(Outbox.claimed_until).is_(None), col(Outbox.claimed_until) < now),
            )
            .order_by(col(Outbox.next_try), col(Outbox.id))
        )
        if serves is None:
            query = query.limit(limit)
        if community is not None:
            query = query.where(col(Community.external_id) == community)
        if self.dialect == "postgresql":
            query = query.with_for_update(skip_locked=True, of=Outbox)
        rows = self.conn.execute(query).all()
        if serves is not None:
            rows = [row for row in rows if serves(row.external_id)][:limit]
        if not rows:
            return []
        ids = [row.id for row in rows]
        self.conn.execute(
            update(Outbox).where(col(Outbox.id).in_(ids)).values(claimed_by=worker, claimed_until=now + lease)
        )
        return [outbox_record(row) for row in rows]

    def outbox_row(self, outbox_id: int) -> OutboxRecord | None:
        row = self.conn.execute(
            select(Outbox, col(Community.external_id))
            .join(Community, col(Community.id) == col(Outbox.community_id))
            .where(col(Outbox.id) == outbox_id)
        ).first()
        return outbox_record(row) if row else None

    def outbox_sent(self, outbox_id: int, message_ref: str | None, now: datetime) -> None:
        self.conn.execute(
            update(Outbox)
            .where(col(Outbox.id) == outbox_id)
            .values(
                state="sent",
                attempts=col(Outbox.attempts) + 1,
                message_ref=None if message_ref is None else message_ref[:128],
                sent_at=now,
                claimed_by=None,
                claimed_until=None,
                last_error=None,
            )
        )

    def outbox_retry(self, outbox_id: int, error: str, next_try: datetime) -> None:
        self.conn.execute(
            update(Outbox)
            .where(col(Outbox.id) == outbox_id)
            .values(
                attempts=col(Outbox.attempts) + 1,
                next_try=next_try,
                last_error=error[:300],
                claimed_by=None,
                claimed_until=None,
            )
        )

    def outbox_give_up(self, outbox_id: int, error: str) -> None:
        self.conn.execute(
            update(Outbox)
            .where(col(Outbox.id) == outbox_id)
            .values(
                state="failed",
                attempts=col(Outbox.attempts) + 1,
                last_error=error[:300],
                claimed_by=None,
                claimed_until=None,
            )
        )

    def outbox_ref(self, community_id: int, kind: str, key: str) -> str | None:
        return self.conn.execute(
            select(col(Outbox.message_ref)).where(
                col(Outbox.community_id) == community_id, col(Outbox.kind) == kind, col(Outbox.key) == key
            )
        ).scalar()

    def undelivered(self, community_id: int | None) -> list[OutboxRecord]:
        """Posts given up on, and posts that failed at least once and wait for a retry."""
        query = (
            select(Outbox, col(Community.external_id))
            .join(Community, col(Community.id) == col(Outbox.community_id))
            .where(or_(col(Outbox.state) == "failed", and_(col(Outbox.state) == "pending", col(Outbox.attempts) > 0)))
            .order_by(col(Outbox.id))
        )
        if community_id is not None:
            query = query.where(col(Outbox.community_id) == community_id)
        return [outbox_record(row) for row in self.conn.execute(query).all()]
