"""The queries of the views the bot opened (Slack's modals, by the external_id it gave them), so that a
view_submission for any other view is refused (bot/core/services/opened_views.py holds the rules)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Table, delete, select

from bot.core.records import OpenedView
from bot.store.database import insert_ignoring
from bot.store.rows import Repo
from bot.store.tables import SlackView

views: Table = SlackView.__table__  # type: ignore[attr-defined]


class ViewsRepo(Repo):
    """The opened views' part of one transaction's queries (ViewsTx)."""

    __slots__ = ()

    def add_view(
        self,
        view_id: str,
        team_id: str,
        holder: str,
        callback_id: str,
        reply_url: str | None,
        now: datetime,
        keep: timedelta,
    ) -> None:
        """Note a view the bot opened (views older than `keep` go)."""
        self.conn.execute(delete(views).where(views.c.opened_at < now - keep))
        self.conn.execute(
            insert_ignoring(self.conn, views, ["view_id"]).values(
                view_id=view_id[:32],
                team_id=team_id[:64],
                holder=holder[:64],
                callback_id=callback_id[:100],
                reply_url=reply_url[:500] if reply_url else None,
                opened_at=now,
            )
        )

    def find_view(
        self, view_id: str, team_id: str, holder: str, callback_id: str, since: datetime
    ) -> OpenedView | None:
        """The view if the bot opened it, in that workspace, for that member, with that callback, since `since`."""
        row = self.conn.execute(
            select(views.c.view_id, views.c.reply_url).where(
                views.c.view_id == view_id[:32],
                views.c.team_id == team_id[:64],
                views.c.holder == holder[:64],
                views.c.callback_id == callback_id[:100],
                views.c.opened_at >= since,
            )
        ).first()
        return None if row is None else OpenedView(view_id=str(row[0]), reply_url=row[1])
