"""Many daily rounds opened in one unit of work, for the scheduler's pass when thousands of
communities are due at one moment: the rules of `open_daily` (bot/core/services/rounds.py), with
their reads and writes done once per batch instead of once per round. StudyEngine mixes
this in."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.core.bank import Question
from bot.core.records import NewDaily, NewPost
from bot.core.rules import scoring
from bot.core.rules.community import CommunityConfig
from bot.core.services.base import EngineBase, Shared
from bot.core.services.rounds import Rounds, channel_daily_key, daily_key, low_bank_note, new_daily
from bot.core.units import UnitsOfWork, WithCommunities, WithDailies, WithRounds, WithSuggestions
from bot.core.values import AlreadyOpen, ChannelRef, CommunityRef, QuestionCard

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Planned:
    """A round of the batch, its question picked, before it is written."""

    index: int  # its place in the request
    channel: ChannelRef
    new: NewDaily
    question: Question
    unasked_left: int


class DailyBatchPort(WithCommunities, WithRounds, WithDailies, WithSuggestions, Protocol):
    """The features DailyBatch's units of work touch."""


class DailyBatch(EngineBase[DailyBatchPort]):
    """`open_dailies`."""

    def __init__(self, shared: Shared, store: UnitsOfWork[DailyBatchPort], rounds: Rounds) -> None:
        super().__init__(shared, store)
        self.rounds = rounds

    # Complex (C901): one unit of work that reads, plans each channel, inserts and queues the posts.
    def open_dailies(  # noqa: C901
        self, wanted: Sequence[tuple[ChannelRef, bool]]
    ) -> list[QuestionCard | AlreadyOpen]:
        """Open today's round in each channel (`late` as `open_daily` takes it), each at most
        once, and queue their posts, all in one unit of work: what `open_daily` would return
        for each, in the order asked. The unique daily key still decides: a round opened
        before, by another process meanwhile or twice in `wanted` comes back AlreadyOpen."""
        now = self.now()
        results: dict[int, QuestionCard | AlreadyOpen] = {}
        with self.store.write() as tx:
            configs = tx.communities.find_communities({CommunityRef(c.platform, c.community_id) for c, _ in wanted})
            asks: list[tuple[ChannelRef, bool, CommunityConfig, str, str]] = []
            for channel, late in wanted:
                ref = CommunityRef(channel.platform, channel.community_id)
                community = configs.get(ref)
                if community is None:  # first use: created with the defaults, as open_daily does
                    community = configs[ref] = self._community(tx, channel)
                day = scoring.local_date(now, community.timezone).isoformat()
                asks.append((channel, late, community, day, daily_key(community.id, day)))
            legacy = {
                channel_daily_key(community.id, channel.channel_id, day): key
                for channel, _, community, day, key in asks
            }
            existing = tx.dailies.daily_round_ids([*(key for *_, key in asks), *legacy])
            for old, key in legacy.items():  # a round opened under the per-channel key counts too
                if old in existing:
                    existing.setdefault(key, existing[old])
            fresh = {community.id for _, _, community, _, key in asks if key not in existing}
            with_own = tx.dailies.with_approved_questions(fresh)
            last_asked = tx.dailies.dailies_last_asked(fresh)
            own: dict[int, list[Question]] = {}
            planned: dict[str, _Planned] = {}
            already: list[tuple[int, int, str]] = []  # (index, round id, day) of rounds open already
            repeats: list[tuple[int, str, str]] = []  # (index, key, day) of keys asked twice
            for index, (channel, late, community, day, key) in enumerate(asks):
                if key in existing:
                    already.append((index, existing[key], day))
                    continue
                if key in planned:
                    repeats.append((index, key, day))
                    continue
                if community.id not in own:
                    own[community.id] = self._community_questions(tx, community.id) if community.id in with_own else []
                asked = last_asked.setdefault(community.id, {})
                question, unasked_left = self.rounds.pick_daily(community, own[community.id], asked)
                asked[question.id] = now  # a second channel of the community picks as if after it
                new = new_daily(community, channel.channel_id, question, day, now, late)
                planned[key] = _Planned(index, channel, new, question, unasked_left)
            opened = tx.dailies.insert_dailies([plan.new for plan in planned.values()])
            rows = tx.rounds.many(opened.values())
            taken = tx.dailies.daily_round_ids(key for key in planned if key not in opened)  # by another process
            for key, plan in planned.items():
                if key not in opened:
                    already.append((plan.index, taken.get(key, 0), plan.new.local_date))
            for index, key, day in repeats:
                already.append((index, opened.get(key) or taken.get(key, 0), day))
            known = tx.rounds.many(round_id for _, round_id, _ in already)  # their numbers
            tx.dailies.enqueue_posts(
                [
                    NewPost(
                        plan.new.community_id,
                        plan.channel.platform,
                        plan.channel.channel_id,
                        "question",
                        str(opened[key]),
                    )
                    for key, plan in planned.items()
                    if key in opened
                ],
                now,
            )
        for index, round_id, day in already:
            number = known[round_id].number if round_id in known else 0
            results[index] = AlreadyOpen(round_id=round_id, number=number, local_date=day)
        for key, plan in planned.items():
            if key not in opened:
                continue
            row = rows[opened[key]]
            log.info("opened daily round %s (%s) in %s", row.id, plan.question.id, plan.channel)
            results[plan.index] = self._card(row, plan.question, admin_note=low_bank_note(plan.unasked_left))
        return [results[index] for index in range(len(wanted))]
