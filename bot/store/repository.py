"""The engine's SQL: one `SqlTx` per unit of work, holding one repository per feature
(`tx.rounds`, `tx.answers`, ...), each in its own module of bot/store.

The engine (bot/core) speaks to this through the `Store`/`StoreTx` protocols of
bot/core/ports.py and receives plain values (bot/core/records.py, CommunityConfig); it never
sees a Connection. Both SQLite and PostgreSQL run the same statements. A feature's repository
is made on first use, so a unit of work pays only for the features it asks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TypeVar

from sqlalchemy import Connection

from bot.store.answers import AnswersRepo
from bot.store.boards import BoardsRepo
from bot.store.communities import CommunitiesRepo
from bot.store.confidence import ConfidenceRepo
from bot.store.dailies import DailyBatchRepo
from bot.store.database import Database
from bot.store.demos import DemosRepo
from bot.store.fsrs import FsrsRepo
from bot.store.group import GroupCommit
from bot.store.guesses import GuessesRepo
from bot.store.item_stats import ItemStatsRepo
from bot.store.links import LinksRepo
from bot.store.members import MembersRepo
from bot.store.outbox import OutboxRepo
from bot.store.platform_state import PlatformRepo
from bot.store.ratings import RatingsRepo
from bot.store.reviews import ReviewsRepo
from bot.store.rounds import RoundsRepo
from bot.store.scheduling import SchedulingRepo
from bot.store.slack_views import ViewsRepo
from bot.store.streak_repair import StreaksRepo
from bot.store.suggestions import SuggestionsRepo

T = TypeVar("T")


class SqlStore:
    """The `Store` the engine is given: units of work on a Database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # SQLite: concurrent grouped units share one transaction; PostgreSQL: one each.
        self.group: GroupCommit | None = GroupCommit(db) if db.is_sqlite else None

    @contextmanager
    def read(self) -> Iterator[SqlTx]:
        with self.db.read() as conn:
            yield SqlTx(conn)

    @contextmanager
    def write(self) -> Iterator[SqlTx]:
        with self.db.write() as conn:
            yield SqlTx(conn)

    def grouped(self, unit: Callable[[SqlTx], T]) -> T:
        """`unit` as one unit of work; on SQLite in one transaction with the units that
        arrive while another is being written, each in its own savepoint (bot/store/group.py)."""
        if self.group is None:
            with self.write() as tx:
                return unit(tx)
        return self.group.run(lambda conn: unit(SqlTx(conn)))


class SqlTx:
    """One transaction's queries, by feature (the `StoreTx` of bot/core/ports.py)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @cached_property
    def communities(self) -> CommunitiesRepo:
        return CommunitiesRepo(self.conn)

    @cached_property
    def scheduling(self) -> SchedulingRepo:
        return SchedulingRepo(self.conn)

    @cached_property
    def members(self) -> MembersRepo:
        return MembersRepo(self.conn)

    @cached_property
    def rounds(self) -> RoundsRepo:
        return RoundsRepo(self.conn)

    @cached_property
    def dailies(self) -> DailyBatchRepo:
        return DailyBatchRepo(self.conn)

    @cached_property
    def answers(self) -> AnswersRepo:
        return AnswersRepo(self.conn)

    @cached_property
    def boards(self) -> BoardsRepo:
        return BoardsRepo(self.conn)

    @cached_property
    def reviews(self) -> ReviewsRepo:
        return ReviewsRepo(self.conn)

    @cached_property
    def outbox(self) -> OutboxRepo:
        return OutboxRepo(self.conn)

    @cached_property
    def platform(self) -> PlatformRepo:
        return PlatformRepo(self.conn)

    @cached_property
    def links(self) -> LinksRepo:
        return LinksRepo(self.conn)

    @cached_property
    def views(self) -> ViewsRepo:
        return ViewsRepo(self.conn)

    @cached_property
    def demos(self) -> DemosRepo:
        return DemosRepo(self.conn)

    @cached_property
    def guesses(self) -> GuessesRepo:
        return GuessesRepo(self.conn)

    @cached_property
    def suggestions(self) -> SuggestionsRepo:
        return SuggestionsRepo(self.conn)

    @cached_property
    def ratings(self) -> RatingsRepo:
        return RatingsRepo(self.conn)

    @cached_property
    def item_stats(self) -> ItemStatsRepo:
        return ItemStatsRepo(self.conn)

    @cached_property
    def fsrs(self) -> FsrsRepo:
        return FsrsRepo(self.conn)

    @cached_property
    def streaks(self) -> StreaksRepo:
        return StreaksRepo(self.conn)

    @cached_property
    def confidence(self) -> ConfidenceRepo:
        return ConfidenceRepo(self.conn)
