"""The engine's use cases for scores and boards: /score, the member's Home, /leaderboard, the
weekly post, streaks, and the questions the item analysis flags (shown on the weekly post,
in /config and on the admin page). bot/core/engine.py builds it as `engine.boards`."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Protocol

from bot.core.errors import InvalidInput
from bot.core.rules import scoring
from bot.core.rules.calibration import calibration
from bot.core.rules.community import CommunityConfig
from bot.core.rules.item_analysis import UNANSWERED, ItemStats, TopThirds, flags_kept, wanted_picks
from bot.core.rules.text import clean_name
from bot.core.services.base import EngineBase, Shared
from bot.core.services.practice import Practice
from bot.core.services.streak_repair import Streaks
from bot.core.units import (
    UnitsOfWork,
    WithAnswers,
    WithBoards,
    WithCommunities,
    WithConfidence,
    WithItemStats,
    WithLinks,
    WithMembers,
    WithOutbox,
    WithRatings,
    WithReviews,
    WithStreaks,
    WithSuggestions,
)
from bot.core.values import CommunityRef, HomeCard, LeaderboardCard, ScoreCard, StatsLine, UserRef


class FlaggedTx(WithItemStats, WithRatings, WithSuggestions, Protocol):
    """What the flagged questions' reads touch (the outbox's, the admin's and the web page's units
    of work call them too)."""


class ScoreTx(
    WithAnswers, WithBoards, WithConfidence, WithLinks, WithMembers, WithRatings, WithReviews, WithStreaks, Protocol
):
    """What a score card reads (the member page's unit of work reads one too)."""


class BoardsPort(
    WithCommunities,
    WithMembers,
    WithAnswers,
    WithBoards,
    WithReviews,
    WithOutbox,
    WithLinks,
    WithSuggestions,
    WithRatings,
    WithItemStats,
    WithConfidence,
    WithStreaks,
    Protocol,
):
    """The features Boards's units of work touch."""


class Boards(EngineBase[BoardsPort]):
    """Scores, the member's Home, leaderboards and the questions the item analysis flags."""

    def __init__(self, shared: Shared, store: UnitsOfWork[BoardsPort], streaks: Streaks, practice: Practice) -> None:
        super().__init__(shared, store)
        self.streaks = streaks
        self.practice = practice

    # ---------------------------------------------------------- scores, boards

    def score(self, user: UserRef) -> ScoreCard:
        now = self.now()
        with self.store.read() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            member_id = tx.members.find_member(community.id, user.user_id) if community else None
            return self.score_card(tx, user, community, member_id, now)

    def score_card(
        self, tx: ScoreTx, user: UserRef, community: CommunityConfig | None, member_id: int | None, now: datetime
    ) -> ScoreCard:
        """`score` in a unit of work already open (the member page's), the community and the
        member already found."""
        name = clean_name(user.display_name)
        week = scoring.iso_week(now, community.timezone if community else self.default_timezone)
        if community is None or member_id is None:
            empty = StatsLine(0, 0)
            return ScoreCard(name, week, 0, None, 0, empty, empty, 0, 0, 0)
        stats = tx.answers.answer_stats(member_id)
        total = tx.members.points_total(member_id)
        mine = tx.boards.week_rank(community.id, week, member_id)  # not the whole board
        streaks = self.streaks.state(tx, community, member_id, now)  # repaired days counted
        due = tx.reviews.reviews_due(member_id, now)
        levels = self.practice.levels(tx.ratings.member_ratings(member_id))

        def line(kinds: tuple[str, ...]) -> StatsLine:
            answered = sum(stats.get((k, c), 0) for k in kinds for c in (True, False))
            return StatsLine(answered, sum(stats.get((k, True), 0) for k in kinds))

        return ScoreCard(
            user=name,
            week=week,
            week_points=mine.points if mine else 0,
            week_rank=mine.rank if mine else None,
            total_points=total,
            daily=line(("daily",)),
            practice=line(("practice", "review")),
            streak=streaks.streak,
            best_streak=streaks.best,
            reviews_due=due,
            link=self._member_link(user, tx, community.id),
            levels=levels,
            calibration=calibration(tx.confidence.confidence_counts(member_id=member_id)),
            repaired=streaks.repaired,
            repair=streaks.offer,
        )

    def home(self, user: UserRef) -> HomeCard:
        """A member's own page: their score, streak and reviews due, and this week's board."""
        return HomeCard(self.score(user), self.leaderboard(CommunityRef(user.platform, user.community_id)))

    def leaderboard(self, community: CommunityRef, week: str | None = None, all_time: bool = False) -> LeaderboardCard:
        """The weekly (ISO week in the community's zone; default this week) or all-time board."""
        if week is not None:
            try:
                week = scoring.parse_week(week)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            tz = config.timezone if config else self.default_timezone
            scope = "all" if all_time else (week or scoring.iso_week(self.now(), tz))
            board = [] if config is None else scoring.rank_rows(tx.boards.board(config.id, None if all_time else scope))
        return LeaderboardCard(community=community.community_id, scope=scope, rows=tuple(r for _, r in board))

    def leaderboard_for(self, community: CommunityRef, scope: str | None = None) -> LeaderboardCard:
        """`/leaderboard [week|all|2026-W48]` as typed in chat."""
        text = (scope or "").strip()
        if text.lower() in ("", "week", "this-week"):
            return self.leaderboard(community)
        if text.lower() in ("all", "all-time", "alltime"):
            return self.leaderboard(community, all_time=True)
        return self.leaderboard(community, week=text)

    def weekly_post(self, community: CommunityRef, week: str) -> LeaderboardCard | None:
        """Claim `week`'s leaderboard post and queue it; None when it was claimed before."""
        now = self.now()
        with self.store.write() as tx:
            config = self._community(tx, community)
            if not tx.boards.claim_week(config.id, week, now):
                return None
            board = scoring.rank_rows(tx.boards.board(config.id, week))
            if config.channel_id is not None:
                tx.outbox.enqueue(config.id, config.channel_id, "leaderboard", week, now)
            flagged = tuple(stats.question_id for stats in self.flagged(tx, config.id))
        return LeaderboardCard(
            community=community.community_id, scope=week, rows=tuple(r for _, r in board), flagged=flagged
        )

    def flagged(self, tx: FlaggedTx, community_id: int) -> list[ItemStats]:
        """The community's questions the item analysis flags (a likely wrong key, too easy, a
        distractor nobody picks), from its members' answers; unanswered ones are not news.
        It reads the figures kept with every answer (a few rows) and, for the questions few get
        right, their strongest third counted in the store, again only where the answers since
        the last read could have changed the verdict (bot/core/rules/item_analysis.py)."""
        found = []
        questions = self._pool(tx, community_id)
        ratings = self.practice.difficulty(questions, tx.ratings.question_ratings(q.id for q in questions))
        changed = tx.item_stats.item_changed(community_id)  # before the counts: a later change is seen as one
        counts = tx.item_stats.item_counts(community_id)
        wanted = wanted_picks(questions, counts)
        memo: TopThirds | None = self.__dict__.get("_top_thirds")
        if memo is None:
            memo = self.__dict__["_top_thirds"] = TopThirds()
        thirds, stale = memo.take(community_id, questions, changed, counts, wanted)
        if stale:
            outside = sorted({c.question_id for c in counts} - {q.id for q in questions})
            read = tx.item_stats.item_top_thirds(community_id, stale, outside)
            memo.put(community_id, questions, changed, counts, read)
            thirds.update((third.question_id, third) for third in read)
        for stats in flags_kept(questions, counts, thirds, ratings=ratings):
            flags = tuple(flag for flag in stats.flags if flag != UNANSWERED)
            if flags:
                found.append(replace(stats, flags=flags))
        return found

    def flag_alerts(self, tx: FlaggedTx, community_id: int) -> tuple[str, ...]:
        flagged = self.flagged_lines(tx, community_id)
        return tuple(f"Question {line}" for _, lines in flagged for line in lines)

    def flagged_lines(self, tx: FlaggedTx, community_id: int) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each flagged question with what the item analysis says of it, choices by their text."""
        found = []
        for stats in self.flagged(tx, community_id):
            question = self._find(stats.question_id, tx)
            texts = [c.text for c in question.choices] if question else []
            found.append((stats.question_id, tuple(stats.describe(texts))))
        return tuple(found)
