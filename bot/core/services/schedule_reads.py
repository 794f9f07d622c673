"""What the scheduler reads: the communities a process serves (by scope,
by version, by id, one by key), their next closes, due reveals and today's claims, each in
one query however many communities there are."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from bot.core.rules.community import CommunityConfig
from bot.core.rules.timing import as_utc
from bot.core.scope import Scheduled, Scope
from bot.core.services.base import EngineBase
from bot.core.units import WithCommunities, WithScheduling
from bot.core.values import CommunityRef


class ScheduleReadsPort(WithCommunities, WithScheduling, Protocol):
    """The features ScheduleReads's units of work touch."""


class ScheduleReads(EngineBase[ScheduleReadsPort]):
    """Read-only queries for the scheduler (bot/background/schedule/)."""

    def community(self, ref: CommunityRef) -> CommunityConfig | None:
        """One community's settings, read by its key; None when it does not exist."""
        with self.store.read() as tx:
            return tx.communities.find_community(ref.platform, ref.community_id)

    def scheduled(
        self, scope: Scope, after_version: int | None = None, ids: Iterable[int] | None = None
    ) -> list[Scheduled]:
        """The communities `scope` serves: all, those changed after a version, or these ids."""
        with self.store.read() as tx:
            return tx.scheduling.scheduled(scope, after_version, ids)

    def next_closes(self, scope: Scope) -> dict[CommunityRef, datetime]:
        """When each served community's earliest open daily round closes (aware UTC)."""
        with self.store.read() as tx:
            return {ref: as_utc(moment) for ref, moment in tx.scheduling.next_closes(scope).items()}

    def due_rounds(self, scope: Scope) -> list[tuple[CommunityRef, int]]:
        """The served communities' open daily rounds whose answer window has ended."""
        with self.store.read() as tx:
            return tx.scheduling.due_rounds(scope, self.now())

    def claimed(
        self, scope: Scope, since: datetime, weeks: Iterable[str]
    ) -> tuple[set[tuple[CommunityRef, str, str]], set[tuple[CommunityRef, str]]]:
        """What is claimed already: (community, channel, local date) of daily rounds opened
        since `since`, and (community, week) of the leaderboards of these weeks."""
        with self.store.read() as tx:
            return tx.scheduling.dailies_since(scope, since), tx.scheduling.boards_posted(scope, weeks)
