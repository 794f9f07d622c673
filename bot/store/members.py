"""Members, and forgetting one (/forget-me): what is stored under their member row goes by the
schema's ON DELETE CASCADE (and SET NULL for their approved questions); what is stored under
their platform id, or counted beside their answers, is taken out here."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import cast

from sqlalchemy import delete, or_, select, text, update
from sqlmodel import col

from bot.core.records import NamedMember
from bot.store import fast, item_stats, statements
from bot.store.database import insert_ignoring
from bot.store.rows import Repo, row_id
from bot.store.tables import Answer, Community, DemoJob, ForgottenAnswer, Member, Outbox, Round, Suggestion

FORGOTTEN_INSTALLER = "forgotten"  # what an installation row says of an installer who asked /forget-me


class MembersRepo(Repo):
    """Members' part of one transaction's queries (MembersTx)."""

    __slots__ = ()

    def upsert_member(self, community_id: int, user_id: str, display_name: str, now: datetime) -> int:
        (row,) = fast.rows(
            self.conn,
            statements.member_upsert(self.dialect),
            {"community_id": community_id, "user_id": user_id, "display_name": display_name, "created_at": now},
        )
        return int(row[0])

    def find_member(self, community_id: int, user_id: str) -> int | None:
        return self.conn.execute(
            select(col(Member.id)).where(col(Member.community_id) == community_id, col(Member.user_id) == user_id)
        ).scalar()

    def member_named(self, community_id: int, user_id: str) -> NamedMember | None:
        row = self.conn.execute(
            select(col(Member.id), col(Member.display_name)).where(
                col(Member.community_id) == community_id, col(Member.user_id) == user_id
            )
        ).first()
        return None if row is None else NamedMember(id=row_id(row[0]), name=str(row[1]))

    def points_total(self, member_id: int) -> int:
        return int(self.conn.execute(select(col(Member.points_total)).where(col(Member.id) == member_id)).scalar_one())

    def forget_user(self, community_id: int, user_id: str, forgotten_name: str = "") -> None:
        """What is stored under a person's platform id rather than a member row (/forget-me,
        also for someone who never answered): their demo jobs stay for the community's history
        with no id and `forgotten_name`, their decision messages go from the outbox, and a Slack
        installation no longer names them."""
        self.conn.execute(
            update(DemoJob)
            .where(col(DemoJob.community_id) == community_id, col(DemoJob.user_id) == user_id)
            .values(user_id="", user_name=forgotten_name[:80])
        )
        self.conn.execute(  # a decision on their question is sent to them: its channel is their id
            delete(Outbox).where(
                col(Outbox.community_id) == community_id,
                col(Outbox.kind) == "decision",
                col(Outbox.channel_id) == user_id,
            )
        )
        self._forget_slack_installer(community_id, user_id)

    def delete_member(self, member_id: int, forgotten_name: str = "") -> None:
        """Everything stored about a member (/forget-me): what is stored under their platform id
        (`forget_user`), their answers taken out of the item analysis's kept figures, their
        questions still in the queue; then the member row, whose deletion takes their answers,
        points, reviews, private rounds, ratings, streak repairs and guesses with it (ON DELETE
        CASCADE) and leaves their approved questions uncredited (SET NULL).
        tests/test_forget_me.py walks every table and column so none is missed."""
        who = self.conn.execute(
            select(col(Member.community_id), col(Member.user_id)).where(col(Member.id) == member_id)
        ).first()
        if who is not None:
            self.forget_user(who[0], who[1], forgotten_name)
        item_stats.forget_member(self.conn, member_id)
        # Their questions in the queue go; approved ones stay, no longer credited to them (SET NULL).
        self.conn.execute(
            delete(Suggestion).where(
                col(Suggestion.member_id) == member_id, col(Suggestion.state).in_(("draft", "pending"))
            )
        )
        self.conn.execute(delete(Member).where(col(Member.id) == member_id))

    def _forget_slack_installer(self, community_id: int, user_id: str) -> None:
        """A member who installed the app in their workspace: Bolt's installation row keeps
        the workspace's bot token (the bot needs it) but no longer names them or holds a user
        token of theirs. Bolt finds a workspace's installation without a user id."""
        workspace = self.conn.execute(
            select(col(Community.external_id)).where(
                col(Community.id) == community_id, col(Community.platform) == "slack"
            )
        ).scalar_one_or_none()
        if workspace is None:
            return
        self.conn.execute(
            text(
                "UPDATE slack_installations SET user_id = :forgotten, user_token = NULL, user_scopes = NULL, "
                "user_refresh_token = NULL, user_token_expires_at = NULL WHERE team_id = :team AND user_id = :user"
            ),
            {"forgotten": FORGOTTEN_INSTALLER, "team": workspace, "user": user_id},
        )

    def open_daily_answered_by(self, member_id: int, now: datetime) -> list[int]:
        """The daily rounds this member answered that still take answers."""
        return [
            cast(int, i)
            for i in self.conn.execute(
                select(col(Round.id))
                .join(Answer, col(Answer.round_id) == col(Round.id))
                .where(
                    col(Answer.member_id) == member_id,
                    col(Round.kind) == "daily",
                    col(Round.closed_at).is_(None),
                    or_(col(Round.closes_at).is_(None), col(Round.closes_at) > now),
                )
            ).scalars()
        ]

    def mark_forgotten(self, round_ids: Iterable[int], user_key: str) -> None:
        for round_id in round_ids:
            self.conn.execute(
                insert_ignoring(self.conn, ForgottenAnswer, ["round_id", "user_key"]).values(
                    round_id=round_id, user_key=user_key
                )
            )
