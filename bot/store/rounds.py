"""Rounds: daily ones (one per community and day, by a unique key), practice and review ones
(one open per member)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import cast

from sqlalchemy import delete, func, select, update
from sqlmodel import col

from bot.core.records import NewDaily, RoundRecord
from bot.store import statements
from bot.store.community_numbers import take_number
from bot.store.dailies import DailyBatchRepo
from bot.store.rows import Repo, round_record
from bot.store.tables import ForgottenAnswer, Round


class RoundsRepo(Repo):
    """Rounds' part of one transaction's queries (RoundsTx)."""

    __slots__ = ()

    def get_round(self, round_id: int) -> RoundRecord:
        return round_record(self.conn.execute(select(Round).where(col(Round.id) == round_id)).one())

    def many(self, round_ids: Iterable[int]) -> dict[int, RoundRecord]:
        """These rounds by id (one query per 500); ids with no round are left out."""
        wanted = sorted(set(round_ids))
        found: dict[int, RoundRecord] = {}
        for start in range(0, len(wanted), 500):
            rows = self.conn.execute(select(Round).where(col(Round.id).in_(wanted[start : start + 500]))).all()
            found.update((row.id, round_record(row)) for row in rows)
        return found

    def daily_round_id(self, daily_key: str) -> int | None:
        return self.conn.execute(select(col(Round.id)).where(col(Round.daily_key) == daily_key)).scalar()

    def daily_last_asked(self, community_id: int) -> dict[str, datetime]:
        rows = self.conn.execute(
            select(col(Round.question_id), func.max(col(Round.opened_at)))
            .where(col(Round.community_id) == community_id, col(Round.kind) == "daily")
            .group_by(col(Round.question_id))
        ).all()
        return {question_id: moment for question_id, moment in rows}

    def insert_daily(self, new: NewDaily) -> RoundRecord | None:
        """The new round, or None when another writer opened this key first."""
        new_id = DailyBatchRepo(self.conn).insert_dailies([new]).get(new.daily_key)
        return None if new_id is None else self.get_round(new_id)

    def insert_private(
        self,
        community_id: int,
        member_id: int,
        channel_id: str,
        question_id: str,
        kind: str,
        now: datetime,
        choice_order: str,
    ) -> RoundRecord:
        """A practice or review round; it replaces the member's private round left unanswered."""
        self.conn.execute(
            update(Round)
            .where(col(Round.member_id) == member_id, col(Round.closed_at).is_(None), col(Round.kind) != "daily")
            .values(closed_at=now)
        )
        round_id = self.conn.execute(
            statements.ROUNDS.insert()
            .values(
                community_id=community_id,
                channel_id=channel_id,
                question_id=question_id,
                kind=kind,
                member_id=member_id,
                opened_at=now,
                choice_order=choice_order,
                number=take_number(self.conn, "rounds_numbered", community_id),
            )
            .returning(statements.ROUNDS.c.id)
        ).scalar_one()
        return self.get_round(round_id)

    def close_private(self, round_id: int, now: datetime) -> None:
        self.conn.execute(update(Round).where(col(Round.id) == round_id).values(closed_at=now))

    def close_daily(self, round_id: int, now: datetime) -> bool:
        """Close an open daily round; False when it was closed already (or is not daily)."""
        closed = self.conn.execute(
            update(Round)
            .where(col(Round.id) == round_id, col(Round.kind) == "daily", col(Round.closed_at).is_(None))
            .values(closed_at=now)
        ).rowcount
        if closed:  # the first answers are final from now on by the closed round itself
            self.conn.execute(delete(ForgottenAnswer).where(col(ForgottenAnswer.round_id) == round_id))
        return bool(closed)

    def is_daily(self, round_id: int) -> bool:
        return (
            self.conn.execute(
                select(col(Round.id)).where(col(Round.id) == round_id, col(Round.kind) == "daily")
            ).scalar()
            is not None
        )

    def open_daily_in(self, community_id: int, channel_id: str, now: datetime | None) -> RoundRecord | None:
        """The newest open daily round of a channel (`now`: only one still taking answers)."""
        query = select(Round).where(
            col(Round.community_id) == community_id,
            col(Round.channel_id) == channel_id,
            col(Round.kind) == "daily",
            col(Round.closed_at).is_(None),
        )
        if now is not None:
            query = query.where(col(Round.closes_at) > now)
        row = self.conn.execute(query.order_by(col(Round.id).desc()).limit(1)).first()
        return round_record(row) if row else None

    def pending_private(self, member_id: int) -> RoundRecord | None:
        row = self.conn.execute(
            select(Round)
            .where(col(Round.member_id) == member_id, col(Round.closed_at).is_(None), col(Round.kind) != "daily")
            .order_by(col(Round.id).desc())
            .limit(1)
        ).first()
        return round_record(row) if row else None

    def due_daily_rounds(self, community_id: int | None, now: datetime) -> list[int]:
        query = select(col(Round.id)).where(
            col(Round.kind) == "daily", col(Round.closed_at).is_(None), col(Round.closes_at) <= now
        )
        if community_id is not None:
            query = query.where(col(Round.community_id) == community_id)
        return [cast(int, i) for i in self.conn.execute(query.order_by(col(Round.id))).scalars().all()]

    def next_close(self, community_id: int) -> datetime | None:
        return self.conn.execute(
            select(func.min(col(Round.closes_at))).where(
                col(Round.community_id) == community_id, col(Round.kind) == "daily", col(Round.closed_at).is_(None)
            )
        ).scalar()

    def set_round_ref(self, round_id: int, message_ref: str) -> None:
        self.conn.execute(update(Round).where(col(Round.id) == round_id).values(message_ref=message_ref[:128]))

    def daily_by_ref(self, community_id: int, message_ref: str) -> RoundRecord | None:
        """The community's daily round whose question post has this platform reference."""
        row = self.conn.execute(
            select(Round)
            .where(
                col(Round.community_id) == community_id,
                col(Round.kind) == "daily",
                col(Round.message_ref) == message_ref[:128],
            )
            .order_by(col(Round.id).desc())
            .limit(1)
        ).first()
        return round_record(row) if row else None

    def daily_questions(self, community_id: int) -> tuple[set[str], set[str]]:
        """The questions of the community's daily rounds: (revealed in a closed round, in an open one)."""
        rows = self.conn.execute(
            select(col(Round.question_id), col(Round.closed_at).is_(None))
            .where(col(Round.community_id) == community_id, col(Round.kind) == "daily")
            .distinct()
        ).all()
        revealed = {question_id for question_id, still_open in rows if not still_open}
        open_now = {question_id for question_id, still_open in rows if still_open}
        return revealed, open_now
