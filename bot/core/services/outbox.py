"""The engine's use cases for the outbox: a platform's deliverer claims the posts due (their
cards rebuilt from the database), says which were delivered and which failed (retried with
backoff, or given up), and admins read what could not be posted. bot/core/engine.py builds it
as `engine.outbox`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from bot.core import wording
from bot.core.errors import NotFound
from bot.core.records import OutboxRecord
from bot.core.rules import scoring
from bot.core.rules.demo_result import outcome_card
from bot.core.rules.numbers import ascii_int
from bot.core.services.base import EngineBase, Shared
from bot.core.services.boards import Boards, FlaggedTx
from bot.core.services.guesses import Guesses
from bot.core.services.practice import Practice
from bot.core.services.rounds import RevealTx, Rounds
from bot.core.units import UnitsOfWork, WithBoards, WithCommunities, WithDemos, WithGuesses, WithRounds, WithSuggestions
from bot.core.values import (
    ChannelRef,
    CommunityRef,
    Delivery,
    LeaderboardCard,
    Posted,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeliveryPolicy:
    """How the outbox retries a post that failed: `max_attempts` tries in all, waiting
    `base_delay_s` doubled after each failure up to `max_delay_s` (6 tries span about 30
    minutes with the defaults), or longer when the platform asked (a retry-after)."""

    max_attempts: int = 6
    base_delay_s: float = 60.0
    max_delay_s: float = 960.0
    lease_s: float = 120.0

    def delay(self, attempts: int, retry_after: float | None = None) -> timedelta:
        """The wait after the `attempts`-th failed try (1 for the first)."""
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** max(0, attempts - 1))
        return timedelta(seconds=max(backoff, retry_after or 0.0))


class AlertsTx(WithDemos, WithRounds, WithSuggestions, Protocol):
    """What the undelivered posts' alerts read (the admin's and the web page's units of work
    call them too)."""


class OutboxPort(RevealTx, FlaggedTx, WithCommunities, WithBoards, WithDemos, WithGuesses, Protocol):
    """The features Outbox's units of work touch."""


class Outbox(EngineBase[OutboxPort]):
    """What deliverers ask of the outbox: the posts due, and how each try went."""

    def __init__(
        self,
        shared: Shared,
        store: UnitsOfWork[OutboxPort],
        rounds: Rounds,
        boards: Boards,
        practice: Practice,
        guesses: Guesses,
        delivery: DeliveryPolicy | None = None,
    ) -> None:
        super().__init__(shared, store)
        self.rounds = rounds
        self.boards = boards
        self.practice = practice
        self.guesses = guesses
        self.delivery = delivery or DeliveryPolicy()

    # ------------------------------------------------------------------ outbox

    def due_posts(
        self,
        platform: str,
        worker: str,
        community: str | None = None,
        limit: int = 20,
        serves: Callable[[str], bool] | None = None,
    ) -> list[Delivery]:
        """Claim the posts due for `platform` (optionally one community, or those `serves`
        accepts by community id) for `worker`, with their cards rebuilt from the database. A
        post whose card can no longer be built (its question left the bank) is given up at once."""
        now = self.now()
        lease = timedelta(seconds=self.delivery.lease_s)
        with self.store.read() as tx:  # most passes find nothing: no write lock for them
            if not tx.outbox.outbox_due(platform, now):
                return []
        with self.store.write() as tx:
            rows = tx.outbox.claim_outbox(platform, community, worker, now, lease, limit, serves=serves)
            deliveries = []
            for row in rows:
                try:
                    card = self._outbox_card(tx, row)
                except NotFound as exc:
                    tx.outbox.outbox_give_up(row.id, exc.message)
                    log.warning("gave up post %s (%s %s): %s", row.id, row.kind, row.key, exc.message)
                    continue
                channel = ChannelRef(row.platform, row.community, row.channel_id)
                deliveries.append(Delivery(row.id, channel, card, row.attempts))
        return deliveries

    def _outbox_card(self, tx: OutboxPort, row: OutboxRecord) -> Posted:
        if row.kind == "demo":
            job = tx.demos.get_demo(int(row.key))
            if job is None:
                raise NotFound(wording.DEMO_GONE)
            return self.guesses.with_guesses(tx, outcome_card(job))
        if row.kind == "question":
            round_row = tx.rounds.get_round(int(row.key))
            return self._card(round_row, self._question(round_row.question_id, tx))
        if row.kind == "reveal":
            return self.rounds.reveal(tx, int(row.key))
        if row.kind == "decision":  # to the author of a member's question, privately
            return self.practice.decided(tx, int(row.key), CommunityRef(row.platform, row.community))
        board = scoring.rank_rows(tx.boards.board(row.community_id, row.key))
        flagged = tuple(stats.question_id for stats in self.boards.flagged(tx, row.community_id))
        return LeaderboardCard(community=row.community, scope=row.key, rows=tuple(r for _, r in board), flagged=flagged)

    def delivered(self, outbox_id: int, message_ref: str | None) -> None:
        """A post reached its channel: keep the platform's reference to it (the question's is
        also kept on its round, so the reveal can edit or thread under it)."""
        with self.store.write() as tx:
            tx.outbox.outbox_sent(outbox_id, message_ref, self.now())
            row = tx.outbox.outbox_row(outbox_id)
            if row is not None and row.kind == "question" and message_ref:
                tx.rounds.set_round_ref(int(row.key), message_ref)

    def delivery_failed(
        self, outbox_id: int, error: str, permanent: bool = False, retry_after: float | None = None
    ) -> bool:
        """A try failed: schedule the next one with backoff, or give up (a permanent error,
        or the last allowed try). Returns True when the post was given up."""
        now = self.now()
        with self.store.write() as tx:
            row = tx.outbox.outbox_row(outbox_id)
            if row is None or row.state != "pending":
                return True
            attempts = row.attempts + 1
            if permanent or attempts >= self.delivery.max_attempts:
                tx.outbox.outbox_give_up(outbox_id, error)
                log.warning(
                    "gave up posting %s %s in %s/%s after %s tries: %s",
                    row.kind,
                    row.key,
                    row.platform,
                    row.channel_id,
                    attempts,
                    error,
                )
                return True
            tx.outbox.outbox_retry(outbox_id, error, now + self.delivery.delay(attempts, retry_after))
        return False

    def undelivered(self, community: CommunityRef | None = None) -> list[str]:
        """Sentences for admins about posts that failed: given up, or waiting for a retry."""
        with self.store.read() as tx:
            return self.alerts(tx, tx.outbox.undelivered(self._community_filter(tx, community)))

    @staticmethod
    def alerts(tx: AlertsTx, rows: Sequence[OutboxRecord]) -> list[str]:
        """A sentence for admins per failed post; a round or a suggestion by the number its
        community knows it by (the outbox's key is the row's id, shared by every community)."""
        keys = {row.id: ascii_int(row.key) for row in rows}
        rounds = tx.rounds.many(
            k for row in rows if row.kind in ("question", "reveal") and (k := keys[row.id]) is not None
        )
        shown: dict[int, str] = {}
        for row in rows:
            key = keys[row.id]
            if key is not None and row.kind in ("question", "reveal") and key in rounds:
                shown[row.id] = str(rounds[key].number)
            elif (
                key is not None and row.kind == "decision" and (found := tx.suggestions.get_suggestion(key)) is not None
            ):
                shown[row.id] = str(found.number)
            elif key is not None and row.kind == "demo" and (job := tx.demos.get_demo(key)) is not None:
                shown[row.id] = str(job.number)
        return [Outbox._alert(row, shown.get(row.id, row.key)) for row in rows]

    @staticmethod
    def _alert(row: OutboxRecord, number: str) -> str:
        return wording.delivery_alert(row, number)
