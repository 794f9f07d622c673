"""What a service's unit of work offers: a With... protocol per store feature (compose a
service's port from them: `class GuessesPort(WithCommunities, WithMembers, WithDemos,
WithGuesses, Protocol)`), StoreTx (every feature: what the store implements), and
UnitsOfWork[Port] (read, write, grouped), which each service takes as its store."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from bot.core.ports import (
    AnswersTx,
    BoardsTx,
    CommunitiesTx,
    ConfidenceTx,
    DailyBatchTx,
    DemosTx,
    FsrsTx,
    GuessesTx,
    ItemStatsTx,
    LinksTx,
    MembersTx,
    OutboxTx,
    PlatformTx,
    RatingsTx,
    ReviewsTx,
    RoundsTx,
    SchedulingTx,
    StreaksTx,
    SuggestionsTx,
    ViewsTx,
)

T = TypeVar("T")


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
