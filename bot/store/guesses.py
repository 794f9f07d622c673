"""The queries of guess-then-run: members' guesses of a checkpoint demo's saving, one per
member and demo (bot/core/services/guesses.py holds the rules)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Table, select

from bot.core.records import DemoGuess
from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import DemoGuess as GuessRow
from bot.store.tables import DemoJob, Member

guesses: Table = GuessRow.__table__  # type: ignore[attr-defined]
jobs: Table = DemoJob.__table__  # type: ignore[attr-defined]
members: Table = Member.__table__  # type: ignore[attr-defined]


class GuessesRepo(Repo):
    """Guess-then-run's part of one transaction's queries (GuessesTx)."""

    __slots__ = ()

    def add_guess(self, job_id: int, community_id: int, member_id: int, band: int, now: datetime) -> int | None:
        """Store a member's guess; None when stored, else the band they guessed before."""
        inserted = self.conn.execute(
            insert_ignoring(self.conn, guesses, ["job_id", "member_id"])
            .values(job_id=job_id, community_id=community_id, member_id=member_id, band=band, guessed_at=now)
            .returning(guesses.c.id)
        ).first()
        if inserted is not None:
            return None
        earlier = self.conn.execute(
            select(guesses.c.band).where(guesses.c.job_id == job_id, guesses.c.member_id == member_id)
        ).scalar()
        return band if earlier is None else int(earlier)

    def demo_guesses(self, job_id: int) -> list[DemoGuess]:
        """Every guess on a demo, first guess first."""
        rows = self.conn.execute(
            select(members.c.display_name, guesses.c.band)
            .select_from(guesses.join(members, members.c.id == guesses.c.member_id))
            .where(guesses.c.job_id == job_id)
            .order_by(guesses.c.id)
        ).all()
        return [DemoGuess(name=str(r[0]), band=int(r[1])) for r in rows]

    def open_checkpoint_demo(self, community_id: int, channel_id: str) -> int | None:
        """The newest checkpoint demo of a channel still queued or running, if any."""
        return self.conn.execute(
            select(jobs.c.id)
            .where(
                jobs.c.community_id == community_id,
                jobs.c.channel_id == channel_id,
                jobs.c.module == "demos.checkpoint",
                jobs.c.state.in_(("queued", "running")),
            )
            .order_by(jobs.c.id.desc())
            .limit(1)
        ).scalar()
