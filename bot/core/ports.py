"""What the engine needs from storage, as protocols: bot/store implements them with SQL,
and the rules in bot/core never import the database layer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from bot.core.records import (
    AnswerContext,
    AnsweredReview,
    ChoiceCount,
    ConfidenceContext,
    DailyOutcome,
    DemoGuess,
    DemoJobRecord,
    ExportedAnswer,
    FsrsFit,
    MissedAnswer,
    NamedMember,
    NewAnswer,
    NewDaily,
    NewPost,
    OpenedView,
    OutboxRecord,
    QuestionOutcome,
    RankedRow,
    RoundRecord,
    SettingChange,
    SuggestionCounts,
    SuggestionRecord,
    TopThird,
    WeekRank,
)
from bot.core.rules.community import CommunityConfig
from bot.core.scope import Scheduled, Scope
from bot.core.values import CommunityRef, LinkVersions

T = TypeVar("T")


class CommunitiesTx(Protocol):
    """The communities and their settings."""

    def find_community(self, platform: str, external_id: str) -> CommunityConfig | None: ...
    def find_communities(self, refs: Iterable[CommunityRef]) -> dict[CommunityRef, CommunityConfig]: ...
    def ensure_community(
        self, platform: str, external_id: str, name: str, timezone: str, window_hours: int, now: datetime
    ) -> CommunityConfig: ...
    def change_setting(self, community_id: int, change: SettingChange) -> CommunityConfig: ...
    def set_paused(self, community_id: int, paused: bool) -> CommunityConfig: ...
    def all(self) -> list[tuple[CommunityRef, CommunityConfig]]: ...


class SchedulingTx(Protocol):
    """The scheduler's reads of the communities a process serves (bot/store/scheduling.py)."""

    def scheduled(
        self, scope: Scope, after_version: int | None = None, ids: Iterable[int] | None = None
    ) -> list[Scheduled]: ...
    def next_closes(self, scope: Scope) -> dict[CommunityRef, datetime]: ...
    def due_rounds(self, scope: Scope, now: datetime) -> list[tuple[CommunityRef, int]]: ...
    def dailies_since(self, scope: Scope, since: datetime) -> set[tuple[CommunityRef, str, str]]: ...
    def boards_posted(self, scope: Scope, weeks: Iterable[str]) -> set[tuple[CommunityRef, str]]: ...


class MembersTx(Protocol):
    """Members, and forgetting one (/forget-me)."""

    def upsert_member(self, community_id: int, user_id: str, display_name: str, now: datetime) -> int: ...
    def find_member(self, community_id: int, user_id: str) -> int | None: ...
    def member_named(self, community_id: int, user_id: str) -> NamedMember | None: ...
    def points_total(self, member_id: int) -> int: ...
    def delete_member(self, member_id: int, forgotten_name: str = "") -> None: ...
    def forget_user(self, community_id: int, user_id: str, forgotten_name: str = "") -> None: ...
    def open_daily_answered_by(self, member_id: int, now: datetime) -> list[int]: ...
    def mark_forgotten(self, round_ids: Iterable[int], user_key: str) -> None: ...


class RoundsTx(Protocol):
    """Daily, practice and review rounds."""

    def get_round(self, round_id: int) -> RoundRecord: ...
    def many(self, round_ids: Iterable[int]) -> dict[int, RoundRecord]: ...
    def daily_round_id(self, daily_key: str) -> int | None: ...
    def daily_last_asked(self, community_id: int) -> dict[str, datetime]: ...
    def insert_daily(self, new: NewDaily) -> RoundRecord | None: ...
    def insert_private(
        self,
        community_id: int,
        member_id: int,
        channel_id: str,
        question_id: str,
        kind: str,
        now: datetime,
        choice_order: str,
    ) -> RoundRecord: ...
    def close_private(self, round_id: int, now: datetime) -> None: ...
    def close_daily(self, round_id: int, now: datetime) -> bool: ...
    def is_daily(self, round_id: int) -> bool: ...
    def open_daily_in(self, community_id: int, channel_id: str, now: datetime | None) -> RoundRecord | None: ...
    def pending_private(self, member_id: int) -> RoundRecord | None: ...
    def due_daily_rounds(self, community_id: int | None, now: datetime) -> list[int]: ...
    def next_close(self, community_id: int) -> datetime | None: ...
    def set_round_ref(self, round_id: int, message_ref: str) -> None: ...
    def daily_by_ref(self, community_id: int, message_ref: str) -> RoundRecord | None: ...
    def daily_questions(self, community_id: int) -> tuple[set[str], set[str]]: ...


class DailyBatchTx(Protocol):
    """Many daily rounds in one transaction (bot/core/services/daily_batch.py)."""

    def daily_round_ids(self, keys: Iterable[str]) -> dict[str, int]: ...
    def with_approved_questions(self, community_ids: Iterable[int]) -> set[int]: ...
    def dailies_last_asked(self, community_ids: Iterable[int]) -> dict[int, dict[str, datetime]]: ...
    def insert_dailies(self, new: Sequence[NewDaily]) -> dict[str, int]: ...
    def enqueue_posts(self, posts: Sequence[NewPost], now: datetime) -> None: ...


class AnswersTx(Protocol):
    """Answers: the hot path's reads and write, and what members' pages count of them."""

    def answer_context(
        self, round_id: int, user_id: str, platform: str, community: str, user_key: str
    ) -> AnswerContext | None: ...
    def insert_answer(self, answer: NewAnswer) -> bool: ...
    def answer_choice(self, round_id: int, member_id: int) -> int | None: ...
    def earlier_outcomes(self, community_id: int, member_id: int, round_id: int, limit: int) -> list[bool | None]: ...
    def choice_counts(self, round_id: int) -> dict[int, int]: ...
    def answer_stats(self, member_id: int) -> dict[tuple[str, bool], int]: ...
    def answer_count(self, member_id: int) -> int: ...
    def seen_counts(self, member_id: int) -> dict[str, int]: ...
    def seen_since(self, member_id: int, since: datetime) -> set[str]: ...
    def question_outcomes(self, member_id: int) -> list[QuestionOutcome]: ...
    def missed_answers(self, member_id: int, limit: int) -> list[MissedAnswer]: ...
    def export(self, community_id: int) -> list[ExportedAnswer]: ...


class BoardsTx(Protocol):
    """Leaderboards: all time and weekly, ranked and paged in SQL, and the weekly post's claim."""

    def board(self, community_id: int, week: str | None) -> list[tuple[str, int, int]]: ...
    def board_size(self, community_id: int, week: str | None) -> int: ...
    def board_slice(self, community_id: int, week: str | None, start: int, size: int) -> list[RankedRow]: ...
    def week_rank(self, community_id: int, week: str, member_id: int) -> WeekRank | None: ...
    def week_points(self, member_id: int) -> dict[str, int]: ...
    def claim_week(self, community_id: int, week: str, now: datetime) -> bool: ...


class ReviewsTx(Protocol):
    """Members' review cards."""

    def review_state(self, member_id: int, question_id: str) -> str | None: ...
    def update_review(self, member_id: int, question_id: str, state: str, due: datetime) -> None: ...
    def add_review(self, member_id: int, question_id: str, state: str, due: datetime) -> None: ...
    def reviews(self, member_id: int) -> list[tuple[str, datetime]]: ...
    def reviews_due(self, member_id: int, now: datetime) -> int: ...


class OutboxTx(Protocol):
    """Posts to send, claimed on a lease by the deliverers."""

    def enqueue(self, community_id: int, channel_id: str, kind: str, key: str, now: datetime) -> None: ...
    def outbox_due(self, platform: str, now: datetime) -> bool: ...
    def claim_outbox(
        self,
        platform: str,
        community: str | None,
        worker: str,
        now: datetime,
        lease: timedelta,
        limit: int,
        serves: Callable[[str], bool] | None = None,
    ) -> list[OutboxRecord]: ...
    def outbox_row(self, outbox_id: int) -> OutboxRecord | None: ...
    def outbox_sent(self, outbox_id: int, message_ref: str | None, now: datetime) -> None: ...
    def outbox_retry(self, outbox_id: int, error: str, next_try: datetime) -> None: ...
    def outbox_give_up(self, outbox_id: int, error: str) -> None: ...
    def outbox_ref(self, community_id: int, kind: str, key: str) -> str | None: ...
    def undelivered(self, community_id: int | None) -> list[OutboxRecord]: ...


class PlatformTx(Protocol):
    """What the platforms keep between events: small state by key, and events handled."""

    def state_get(self, key: str) -> str | None: ...
    def state_put(self, key: str, value: str, now: datetime) -> None: ...
    def claim_event(self, platform: str, event_id: str, now: datetime, keep: timedelta) -> bool: ...


class LinksTx(Protocol):
    """The versions of the web pages' links (advancing one revokes the links given before)."""

    def link_versions(self, community_id: int, holders: tuple[str, ...]) -> dict[str, int]: ...
    def advance_link_version(self, community_id: int, holder: str, create: bool = True) -> bool: ...
    def note_link_holder(self, community_id: int, holder: str) -> None: ...


class ViewsTx(Protocol):
    """The forms the bot opened (bot/core/services/opened_views.py)."""

    def add_view(
        self,
        view_id: str,
        team_id: str,
        holder: str,
        callback_id: str,
        reply_url: str | None,
        now: datetime,
        keep: timedelta,
    ) -> None: ...
    def find_view(
        self, view_id: str, team_id: str, holder: str, callback_id: str, since: datetime
    ) -> OpenedView | None: ...


class DemosTx(Protocol):
    """Demo jobs: queued by members, claimed by the runner."""

    def last_demo_at(self, community_id: int, user_id: str, exempt: tuple[str, ...]) -> datetime | None: ...
    def demos_waiting(self, community_id: int) -> int: ...
    def add_demo(
        self,
        community_id: int,
        channel_id: str,
        user_id: str,
        user_name: str,
        module: str,
        args: tuple[str, ...],
        now: datetime,
    ) -> int: ...
    def demo_position(self, job_id: int, community_id: int) -> int: ...
    def get_demo(self, job_id: int) -> DemoJobRecord | None: ...
    def claim_demo(
        self, worker: str, backend: str, now: datetime, serves: Callable[[str, str], bool] | None = None
    ) -> DemoJobRecord | None: ...
    def set_demo_progress(self, job_id: int, progress: str) -> None: ...
    def set_demo_ref(self, job_id: int, message_ref: str) -> None: ...
    def finish_demo(
        self,
        job_id: int,
        state: str,
        now: datetime,
        result: str | None,
        chart_path: str | None,
        error: str | None,
        failure: str | None = None,
    ) -> bool: ...
    def demo_ids(self, states: tuple[str, ...]) -> list[int]: ...
    def recent_demos(self, limit: int) -> list[DemoJobRecord]: ...
    def community_demos(self, community_id: int, limit: int) -> list[DemoJobRecord]: ...


class GuessesTx(Protocol):
    """Guess-then-run (bot/core/services/guesses.py)."""

    def add_guess(self, job_id: int, community_id: int, member_id: int, band: int, now: datetime) -> int | None: ...
    def demo_guesses(self, job_id: int) -> list[DemoGuess]: ...
    def open_checkpoint_demo(self, community_id: int, channel_id: str) -> int | None: ...


class SuggestionsTx(Protocol):
    """Members' questions, from draft to decided."""

    def add_suggestion(
        self, community_id: int, member_id: int, channel_id: str, state: str, topic: str, body: str, now: datetime
    ) -> int: ...
    def set_draft_body(self, suggestion_id: int, body: str) -> None: ...
    def send_draft(self, suggestion_id: int, topic: str, body: str, now: datetime) -> None: ...
    def decide_suggestion(
        self, suggestion_id: int, state: str, question_id: str | None, note: str | None, now: datetime
    ) -> None: ...
    def remove_suggestion(self, suggestion_id: int, now: datetime) -> None: ...
    def suggestion_by_number(self, community_id: int, number: int) -> int | None: ...
    def get_suggestion(self, suggestion_id: int) -> SuggestionRecord | None: ...
    def suggestion_by_question(self, question_id: str) -> SuggestionRecord | None: ...
    def suggestions(self, community_id: int, states: tuple[str, ...], limit: int = 1000) -> list[SuggestionRecord]: ...
    def count_suggestions(self, community_id: int, state: str) -> int: ...
    def member_suggestions(self, member_id: int, since: datetime) -> SuggestionCounts: ...
    def drop_drafts(self, member_id: int) -> None: ...


class RatingsTx(Protocol):
    """Adaptive practice's ratings: members' per topic, questions' difficulty."""

    def member_ratings(self, member_id: int) -> dict[str, tuple[float, int]]: ...
    def question_ratings(self, question_ids: Iterable[str] | None = None) -> dict[str, tuple[float, int]]: ...
    def bump_member_rating(self, member_id: int, topic: str, start: float, delta: float) -> None: ...
    def bump_question_rating(self, question_id: str, start: float, delta: float) -> None: ...


class ItemStatsTx(Protocol):
    """The item analysis's kept figures (bot/store/item_stats.py)."""

    def item_counts(self, community_id: int) -> list[ChoiceCount]: ...
    def item_top_thirds(
        self, community_id: int, question_ids: Iterable[str], outside: Iterable[str]
    ) -> list[TopThird]: ...
    def item_changed(self, community_id: int) -> str | None: ...


class FsrsTx(Protocol):
    """A community's FSRS fit: the answers its review log is built from, its fitted parameters."""

    def fsrs_answers(self, community_id: int) -> list[AnsweredReview]: ...
    def fsrs_parameters(self, community_id: int) -> FsrsFit | None: ...
    def fsrs_save(self, community_id: int, parameters: str | None, reviews: int, now: datetime) -> None: ...
    def fsrs_claim_week(self, community_id: int, week: str) -> bool: ...


class StreaksTx(Protocol):
    """Streak repair (bot/core/services/streak_repair.py)."""

    def daily_history(self, community_id: int, member_id: int) -> list[DailyOutcome]: ...
    def streak_repairs(self, member_id: int) -> dict[int, datetime]: ...
    def add_streak_repair(self, community_id: int, member_id: int, round_id: int, now: datetime) -> bool: ...


class ConfidenceTx(Protocol):
    """How sure a member was of an answer, and calibration (bot/core/services/confidence.py)."""

    def set_review_before(self, round_id: int, member_id: int, state: str) -> None: ...
    def confidence_context(self, round_id: int, member_id: int) -> ConfidenceContext | None: ...
    def set_confidence(self, round_id: int, member_id: int, value: str) -> bool: ...
    def confidence_counts(
        self, member_id: int | None = None, community_id: int | None = None
    ) -> dict[tuple[str, bool], int]: ...


# One protocol per feature, so that a service can name exactly the features its units of
# work touch (its port) and mypy holds it to them.


class WithCommunities(Protocol):
    """A unit of work offering the communities queries (CommunitiesTx)."""

    @property
    def communities(self) -> CommunitiesTx: ...


class WithScheduling(Protocol):
    """A unit of work offering the scheduling queries (SchedulingTx)."""

    @property
    def scheduling(self) -> SchedulingTx: ...


class WithMembers(Protocol):
    """A unit of work offering the members queries (MembersTx)."""

    @property
    def members(self) -> MembersTx: ...


class WithRounds(Protocol):
    """A unit of work offering the rounds queries (RoundsTx)."""

    @property
    def rounds(self) -> RoundsTx: ...


class WithDailies(Protocol):
    """A unit of work offering the dailies queries (DailyBatchTx)."""

    @property
    def dailies(self) -> DailyBatchTx: ...


class WithAnswers(Protocol):
    """A unit of work offering the answers queries (AnswersTx)."""

    @property
    def answers(self) -> AnswersTx: ...


class WithBoards(Protocol):
    """A unit of work offering the boards queries (BoardsTx)."""

    @property
    def boards(self) -> BoardsTx: ...


class WithReviews(Protocol):
    """A unit of work offering the reviews queries (ReviewsTx)."""

    @property
    def reviews(self) -> ReviewsTx: ...


class WithOutbox(Protocol):
    """A unit of work offering the outbox queries (OutboxTx)."""

    @property
    def outbox(self) -> OutboxTx: ...


class WithPlatform(Protocol):
    """A unit of work offering the platform queries (PlatformTx)."""

    @property
    def platform(self) -> PlatformTx: ...


class WithLinks(Protocol):
    """A unit of work offering the links queries (LinksTx)."""

    @property
    def links(self) -> LinksTx: ...


class WithViews(Protocol):
    """A unit of work offering the views queries (ViewsTx)."""

    @property
    def views(self) -> ViewsTx: ...


class WithDemos(Protocol):
    """A unit of work offering the demos queries (DemosTx)."""

    @property
    def demos(self) -> DemosTx: ...


class WithGuesses(Protocol):
    """A unit of work offering the guesses queries (GuessesTx)."""

    @property
    def guesses(self) -> GuessesTx: ...


class WithSuggestions(Protocol):
    """A unit of work offering the suggestions queries (SuggestionsTx)."""

    @property
    def suggestions(self) -> SuggestionsTx: ...


class WithRatings(Protocol):
    """A unit of work offering the ratings queries (RatingsTx)."""

    @property
    def ratings(self) -> RatingsTx: ...


class WithItemStats(Protocol):
    """A unit of work offering the item stats queries (ItemStatsTx)."""

    @property
    def item_stats(self) -> ItemStatsTx: ...


class WithFsrs(Protocol):
    """A unit of work offering the fsrs queries (FsrsTx)."""

    @property
    def fsrs(self) -> FsrsTx: ...


class WithStreaks(Protocol):
    """A unit of work offering the streaks queries (StreaksTx)."""

    @property
    def streaks(self) -> StreaksTx: ...


class WithConfidence(Protocol):
    """A unit of work offering the confidence queries (ConfidenceTx)."""

    @property
    def confidence(self) -> ConfidenceTx: ...


class StoreTx(
    WithCommunities,
    WithScheduling,
    WithMembers,
    WithRounds,
    WithDailies,
    WithAnswers,
    WithBoards,
    WithReviews,
    WithOutbox,
    WithPlatform,
    WithLinks,
    WithViews,
    WithDemos,
    WithGuesses,
    WithSuggestions,
    WithRatings,
    WithItemStats,
    WithFsrs,
    WithStreaks,
    WithConfidence,
    Protocol,
):
    """The queries of one unit of work (a transaction), by feature: `tx.rounds.get_round(...)`.
    Every feature at once: the store implements this; a service names the narrower port it
    uses (bot/core/services/*.py, `...Port`)."""


TxT_co = TypeVar("TxT_co", covariant=True)


class UnitsOfWork(Protocol[TxT_co]):
    """Units of work whose transactions offer the features of `TxT_co`: `read()` for queries,
    `write()` for a transaction that commits on success and rolls back on any error (raising
    StoreUnavailable when the database is). A service takes `UnitsOfWork[ItsPort]`, so that it
    can reach only the features its port names."""

    def read(self) -> AbstractContextManager[TxT_co]: ...

    def write(self) -> AbstractContextManager[TxT_co]: ...

    def grouped(self, unit: Callable[[TxT_co], T]) -> T:
        """`unit(tx)` as one write unit of work, its result or its exception. The store may
        run units that arrive together in one transaction (group commit), each isolated in a
        savepoint: one that raises has its writes undone and does not affect the others."""
        ...


class Store(UnitsOfWork[StoreTx], Protocol):
    """The whole store: units of work over every feature (bot/store implements it)."""


class Links(Protocol):
    """Signed, expiring links to the web pages (bot/web/links.py signs them), or none when the
    page has no public URL."""

    def member(self, community: CommunityRef, user_id: str, versions: LinkVersions) -> str: ...

    def admin(self, community: CommunityRef, user_id: str, versions: LinkVersions) -> str:
        """An admin's link names its admin, so that their losing the right revokes it."""
        ...
