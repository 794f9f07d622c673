"""Members' questions (suggestions), from draft to pending to decided; a question is numbered in
its community when it is sent."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlmodel import col

from bot.core.records import SuggestionCounts, SuggestionRecord
from bot.store.community_numbers import take_number
from bot.store.rows import Repo, row_id, suggestion_record
from bot.store.tables import Member, Suggestion


class SuggestionsRepo(Repo):
    """Members' questions' part of one transaction's queries (SuggestionsTx)."""

    __slots__ = ()

    def _suggestions(self) -> Any:
        return select(Suggestion, col(Member.user_id), col(Member.display_name)).outerjoin(
            Member, col(Member.id) == col(Suggestion.member_id)
        )

    def add_suggestion(
        self, community_id: int, member_id: int, channel_id: str, state: str, topic: str, body: str, now: datetime
    ) -> int:
        sent = state != "draft"  # a draft is numbered when it is sent (send_draft)
        result = self.conn.execute(
            insert(Suggestion)
            .values(
                community_id=community_id,
                member_id=member_id,
                channel_id=channel_id,
                state=state,
                topic=topic,
                body=body,
                created_at=now,
                number=take_number(self.conn, "suggestions_numbered", community_id) if sent else None,
            )
            .returning(col(Suggestion.id))
        )
        return row_id(result.scalar_one())

    def set_draft_body(self, suggestion_id: int, body: str) -> None:
        """A draft's form as the member filled it in (the forms open again with it)."""
        self._change(suggestion_id, {"body": body})

    def send_draft(self, suggestion_id: int, topic: str, body: str, now: datetime) -> None:
        """A draft sent to the queue: pending, and numbered in its community."""
        self._change(suggestion_id, {"state": "pending", "topic": topic, "body": body, "created_at": now})

    def decide_suggestion(
        self, suggestion_id: int, state: str, question_id: str | None, note: str | None, now: datetime
    ) -> None:
        """An admin's decision: approved (with its question id), returned with a note, rejected."""
        self._change(suggestion_id, {"state": state, "question_id": question_id, "note": note, "decided_at": now})

    def remove_suggestion(self, suggestion_id: int, now: datetime) -> None:
        """An approved question taken out of the community's bank (its old rounds keep it)."""
        self._change(suggestion_id, {"state": "removed", "decided_at": now})

    def _change(self, suggestion_id: int, changes: dict[str, object]) -> None:
        if changes.get("state", "draft") != "draft":  # a draft sent: it takes its community's next number
            found = self.conn.execute(
                select(col(Suggestion.community_id), col(Suggestion.number)).where(col(Suggestion.id) == suggestion_id)
            ).first()
            if found is not None and found.number is None:
                changes["number"] = take_number(self.conn, "suggestions_numbered", found.community_id)
        self.conn.execute(update(Suggestion).where(col(Suggestion.id) == suggestion_id).values(changes))

    def suggestion_by_number(self, community_id: int, number: int) -> int | None:
        """The id of the community's question #`number` (what members and admins see and type)."""
        return self.conn.execute(
            select(col(Suggestion.id)).where(
                col(Suggestion.community_id) == community_id, col(Suggestion.number) == number
            )
        ).scalar()

    def get_suggestion(self, suggestion_id: int) -> SuggestionRecord | None:
        row = self.conn.execute(self._suggestions().where(col(Suggestion.id) == suggestion_id)).first()
        return suggestion_record(row) if row else None

    def suggestion_by_question(self, question_id: str) -> SuggestionRecord | None:
        row = self.conn.execute(self._suggestions().where(col(Suggestion.question_id) == question_id)).first()
        return suggestion_record(row) if row else None

    def suggestions(self, community_id: int, states: tuple[str, ...], limit: int = 1000) -> list[SuggestionRecord]:
        """The community's suggestions in these states, oldest first."""
        rows = self.conn.execute(
            self._suggestions()
            .where(col(Suggestion.community_id) == community_id, col(Suggestion.state).in_(states))
            .order_by(col(Suggestion.id))
            .limit(limit)
        ).all()
        return [suggestion_record(row) for row in rows]

    def count_suggestions(self, community_id: int, state: str) -> int:
        return int(
            self.conn.execute(
                select(func.count()).where(col(Suggestion.community_id) == community_id, col(Suggestion.state) == state)
            ).scalar_one()
        )

    def member_suggestions(self, member_id: int, since: datetime) -> SuggestionCounts:
        """The member's suggestions waiting now, and those sent since `since`."""
        pending = self.conn.execute(
            select(func.count()).where(col(Suggestion.member_id) == member_id, col(Suggestion.state) == "pending")
        ).scalar_one()
        recent = self.conn.execute(
            select(func.count()).where(
                col(Suggestion.member_id) == member_id,
                col(Suggestion.state) != "draft",
                col(Suggestion.created_at) >= since,
            )
        ).scalar_one()
        return SuggestionCounts(pending=int(pending), recent=int(recent))

    def drop_drafts(self, member_id: int) -> None:
        self.conn.execute(
            delete(Suggestion).where(col(Suggestion.member_id) == member_id, col(Suggestion.state) == "draft")
        )
