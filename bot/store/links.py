"""The versions of the web pages' signed links, per community and holder ("" the community's):
advancing one revokes the links signed before."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlmodel import col

from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import LinkVersion


class LinksRepo(Repo):
    """Link versions' part of one transaction's queries (LinksTx)."""

    __slots__ = ()

    def link_versions(self, community_id: int, holders: tuple[str, ...]) -> dict[str, int]:
        """The stored versions of these holders' links ("" the community's); a holder without
        a row is left out (version 0)."""
        rows = self.conn.execute(
            select(col(LinkVersion.holder), col(LinkVersion.version)).where(
                col(LinkVersion.community_id) == community_id, col(LinkVersion.holder).in_(holders)
            )
        ).all()
        return {str(holder): int(version) for holder, version in rows}

    def advance_link_version(self, community_id: int, holder: str, create: bool = True) -> bool:
        """One more than the holder's version (1 for a new row; without `create`, only a row
        that exists is advanced). Whether a row changed."""
        changed = self.conn.execute(
            update(LinkVersion)
            .where(col(LinkVersion.community_id) == community_id, col(LinkVersion.holder) == holder)
            .values(version=col(LinkVersion.version) + 1)
        ).rowcount
        if changed or not create:
            return bool(changed)
        self.conn.execute(
            insert_ignoring(self.conn, LinkVersion, ["community_id", "holder"]).values(
                community_id=community_id, holder=holder, version=1
            )
        )
        return True

    def note_link_holder(self, community_id: int, holder: str) -> None:
        """A row (version 0) for a holder given a link, so that a later advance without
        `create` finds it."""
        self.conn.execute(
            insert_ignoring(self.conn, LinkVersion, ["community_id", "holder"]).values(
                community_id=community_id, holder=holder, version=0
            )
        )
