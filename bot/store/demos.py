"""Demo jobs: queued by members, claimed by the runner (one running per community, the
communities in turn), their progress, message and end."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import and_, func, insert, or_, select, text, update
from sqlmodel import col

from bot.core.records import DemoJobRecord
from bot.store.community_numbers import take_number
from bot.store.rows import Repo, demo_record, row_id
from bot.store.tables import Community, DemoJob

# The PostgreSQL advisory lock key that serializes demo claims (any constant of our own).
_DEMO_CLAIM_LOCK = 0x5B_DE_30


class DemosRepo(Repo):
    """Demo jobs' part of one transaction's queries (DemosTx)."""

    __slots__ = ()

    def _jobs(self) -> Any:
        return select(DemoJob, col(Community.platform), col(Community.external_id)).join(
            Community, col(Community.id) == col(DemoJob.community_id)
        )

    def last_demo_at(self, community_id: int, user_id: str, exempt: tuple[str, ...]) -> datetime | None:
        """When this member last asked for a demo that was not lost to a failure of ours: every
        job counts but a failed one whose `failure` is in `exempt` (or unrecorded, before 0021)."""
        return self.conn.execute(
            select(func.max(col(DemoJob.created_at))).where(
                col(DemoJob.community_id) == community_id,
                col(DemoJob.user_id) == user_id,
                or_(
                    col(DemoJob.state) != "failed",
                    and_(col(DemoJob.failure).is_not(None), col(DemoJob.failure).not_in(exempt)),
                ),
            )
        ).scalar()

    def demos_waiting(self, community_id: int) -> int:
        return int(
            self.conn.execute(
                select(func.count())
                .select_from(DemoJob)
                .where(col(DemoJob.community_id) == community_id, col(DemoJob.state) == "queued")
            ).scalar_one()
        )

    def add_demo(
        self,
        community_id: int,
        channel_id: str,
        user_id: str,
        user_name: str,
        module: str,
        args: tuple[str, ...],
        now: datetime,
    ) -> int:
        return row_id(
            self.conn.execute(
                insert(DemoJob)
                .values(
                    community_id=community_id,
                    channel_id=channel_id,
                    user_id=user_id,
                    user_name=user_name,
                    module=module,
                    args=json.dumps(list(args)),
                    state="queued",
                    progress="{}",
                    created_at=now,
                    number=take_number(self.conn, "demos_numbered", community_id),
                )
                .returning(col(DemoJob.id))
            ).scalar_one()
        )

    def demo_position(self, job_id: int, community_id: int) -> int:
        """1 when nothing in its community runs or waits before it."""
        ahead = self.conn.execute(
            select(func.count())
            .select_from(DemoJob)
            .where(
                col(DemoJob.community_id) == community_id,
                or_(col(DemoJob.state) == "running", and_(col(DemoJob.state) == "queued", col(DemoJob.id) < job_id)),
            )
        ).scalar_one()
        return int(ahead) + 1

    def get_demo(self, job_id: int) -> DemoJobRecord | None:
        row = self.conn.execute(self._jobs().where(col(DemoJob.id) == job_id)).first()
        return demo_record(row) if row else None

    def claim_demo(
        self, worker: str, backend: str, now: datetime, serves: Callable[[str, str], bool] | None = None
    ) -> DemoJobRecord | None:
        """The oldest queued job of a community with nothing running, marked running, taking the
        communities in turn: the one whose last demo started longest ago (or never) first, so one
        community's full queue does not hold up the others'. With `serves` (platform, community
        id -> bool), only of the communities it accepts (a Discord shard process runs its own
        guilds' demos, so their progress edits come from it)."""
        if self.dialect == "postgresql":
            # Row locks alone let two processes both see a community idle and each start one of
            # its jobs; claims are rare, so one transaction-scoped lock serializes them.
            self.conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DEMO_CLAIM_LOCK})
        busy = select(col(DemoJob.community_id)).where(col(DemoJob.state) == "running")
        started = DemoJob.__table__.alias("started")  # type: ignore[attr-defined]
        last_start = (
            select(func.max(started.c.started_at))
            .where(started.c.community_id == col(DemoJob.community_id))
            .scalar_subquery()
        )
        query = (
            select(col(DemoJob.id), col(Community.platform), col(Community.external_id))
            .join(Community, col(Community.id) == col(DemoJob.community_id))
            .where(col(DemoJob.state) == "queued", col(DemoJob.community_id).not_in(busy))
            .order_by(last_start.is_not(None), last_start, col(DemoJob.id))
        )
        if serves is None:
            query = query.limit(1)
        if self.dialect == "postgresql":
            query = query.with_for_update(skip_locked=True, of=DemoJob)
        candidates = self.conn.execute(query).all()
        job_id = next((r.id for r in candidates if serves is None or serves(r.platform, r.external_id)), None)
        if job_id is None:
            return None
        self.conn.execute(
            update(DemoJob)
            .where(col(DemoJob.id) == job_id)
            .values(state="running", started_at=now, worker=worker[:64], backend=backend[:16])
        )
        return self.get_demo(job_id)

    def set_demo_progress(self, job_id: int, progress: str) -> None:
        self.conn.execute(update(DemoJob).where(col(DemoJob.id) == job_id).values(progress=progress[:20000]))

    def set_demo_ref(self, job_id: int, message_ref: str) -> None:
        self.conn.execute(update(DemoJob).where(col(DemoJob.id) == job_id).values(message_ref=message_ref[:128]))

    def finish_demo(
        self,
        job_id: int,
        state: str,
        now: datetime,
        result: str | None,
        chart_path: str | None,
        error: str | None,
        failure: str | None = None,
    ) -> bool:
        """Record a running (or queued) job's end (and, failed, why); False when it had ended already."""
        done = self.conn.execute(
            update(DemoJob)
            .where(col(DemoJob.id) == job_id, col(DemoJob.state).in_(("queued", "running")))
            .values(
                state=state,
                finished_at=now,
                result=result,
                chart_path=None if chart_path is None else chart_path[:500],
                error=None if error is None else error[:500],
                failure=None if failure is None else failure[:16],
            )
        ).rowcount
        return bool(done)

    def demo_ids(self, states: tuple[str, ...]) -> list[int]:
        return [
            cast(int, i)
            for i in self.conn.execute(
                select(col(DemoJob.id)).where(col(DemoJob.state).in_(states)).order_by(col(DemoJob.id))
            ).scalars()
        ]

    def recent_demos(self, limit: int) -> list[DemoJobRecord]:
        rows = self.conn.execute(self._jobs().order_by(col(DemoJob.id).desc()).limit(limit)).all()
        return [demo_record(row) for row in rows]

    def community_demos(self, community_id: int, limit: int) -> list[DemoJobRecord]:
        rows = self.conn.execute(
            self._jobs().where(col(DemoJob.community_id) == community_id).order_by(col(DemoJob.id).desc()).limit(limit)
        ).all()
        return [demo_record(row) for row in rows]
