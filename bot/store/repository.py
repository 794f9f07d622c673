"""The engine's SQL: one `StoreTx` per unit of work, one method per question the rules ask.

The engine (bot/core) speaks to this through the `Store`/`StoreTx` protocols of
bot/core/ports.py and receives plain values (bot/core/records.py, CommunityConfig); it never
sees a Connection. Both SQLite and PostgreSQL run the same statements."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, and_, case, delete, func, insert, or_, select, text, update
from sqlmodel import col

from bot.core.community import CommunityConfig
from bot.core.records import (
    AnswerContext,
    AnswerRow,
    ConfidenceContext,
    DemoJobRecord,
    NewAnswer,
    NewDaily,
    OutboxRecord,
    RoundRecord,
    SuggestionRecord,
)
from bot.core.values import CommunityRef
from bot.store import confidence, fast, fsrs, item_stats, question_ratings, statements
from bot.store.communities import CommunityQueries
from bot.store.communities import community_config as _config
from bot.store.community_numbers import take_number
from bot.store.dailies import DailyBatchQueries
from bot.store.database import Database, insert_ignoring
from bot.store.group import GroupCommit
from bot.store.guesses import GuessQueries
from bot.store.item_stats import ItemStatsQueries
from bot.store.slack_views import SlackViewQueries
from bot.store.streak_repair import StreakRepairQueries
from bot.store.tables import (
    Answer,
    Community,
    DemoJob,
    ForgottenAnswer,
    LeaderboardPost,
    LinkVersion,
    Member,
    MemberRating,
    Outbox,
    PlatformEvent,
    PlatformState,
    Review,
    Round,
    Suggestion,
    WeeklyPoints,
)

T = TypeVar("T")


# The PostgreSQL advisory lock key that serializes demo claims (any constant of our own).
_DEMO_CLAIM_LOCK = 0x5B_DE_30
FORGOTTEN_INSTALLER = "forgotten"  # what an installation row says of an installer who asked /forget-me


def _row_id(value: int | None) -> int:
    """A row id the database returned (the tables type their key as optional)."""
    if value is None:
        raise RuntimeError("the database returned no row id")
    return value


def _round(row: Any) -> RoundRecord:
    return RoundRecord(
        id=row.id,
        community_id=row.community_id,
        channel_id=row.channel_id,
        question_id=row.question_id,
        kind=row.kind,
        member_id=row.member_id,
        opened_at=row.opened_at,
        closes_at=row.closes_at,
        closed_at=row.closed_at,
        late=bool(row.late),
        message_ref=row.message_ref,
        choice_order=row.choice_order,
        number=row.number if row.number is not None else row.id,  # numbered by migration 0020
    )


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


class SqlTx(ItemStatsQueries, StreakRepairQueries, GuessQueries, CommunityQueries, DailyBatchQueries, SlackViewQueries):
    """One transaction's queries."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.dialect = conn.dialect.name

    # ------------------------------------------------------------ communities

    def find_community(self, platform: str, external_id: str) -> CommunityConfig | None:
        # A statement built once, on the driver (an ORM-entity select built per call cost 0.3 ms).
        found = fast.rows(self.conn, statements.community_lookup(), {"platform": platform, "external_id": external_id})
        return _config(found[0]) if found else None

    def ensure_community(
        self, platform: str, external_id: str, name: str, timezone: str, window_hours: int, now: datetime
    ) -> CommunityConfig:
        found = self.find_community(platform, external_id)
        if found is not None:
            return found
        self.conn.execute(
            insert_ignoring(self.conn, Community, ["platform", "external_id"]).values(
                platform=platform,
                external_id=external_id,
                name=name,
                timezone=timezone,
                window_hours=window_hours,
                created_at=now,
            )
        )
        created = self.find_community(platform, external_id)
        if created is None:  # pragma: no cover - inserted above or by a concurrent writer
            raise RuntimeError(f"community {platform}/{external_id} vanished after insert")
        self.bump_version(created.id)  # new: the schedulers' refresh picks it up
        return created

    def update_community(self, community_id: int, column: str, value: Any) -> CommunityConfig:
        self.conn.execute(update(Community).where(col(Community.id) == community_id).values({column: value}))
        self.bump_version(community_id)  # the schedulers' refresh reads what changed
        return _config(self.conn.execute(select(Community).where(col(Community.id) == community_id)).one())

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        rows = self.conn.execute(select(Community).order_by(col(Community.id))).all()
        return [(CommunityRef(r.platform, r.external_id), _config(r)) for r in rows]

    # ---------------------------------------------------------------- members

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
        """Everything stored about a member (/forget-me): their rows go, and what is stored
        under their platform id (`forget_user`). tests/test_forget_me.py walks every table and
        column so none is missed."""
        who = self.conn.execute(
            select(col(Member.community_id), col(Member.user_id)).where(col(Member.id) == member_id)
        ).first()
        if who is not None:
            self.forget_user(who[0], who[1], forgotten_name)
        item_stats.forget_member(self.conn, member_id)
        self.conn.execute(delete(Answer).where(col(Answer.member_id) == member_id))
        self.conn.execute(delete(WeeklyPoints).where(col(WeeklyPoints.member_id) == member_id))
        self.conn.execute(delete(Review).where(col(Review.member_id) == member_id))
        self.conn.execute(delete(Round).where(col(Round.member_id) == member_id))
        self.conn.execute(delete(MemberRating).where(col(MemberRating.member_id) == member_id))
        # Their questions in the queue go; approved ones stay, no longer credited to them.
        self.conn.execute(
            delete(Suggestion).where(
                col(Suggestion.member_id) == member_id, col(Suggestion.state).in_(("draft", "pending"))
            )
        )
        self.conn.execute(update(Suggestion).where(col(Suggestion.member_id) == member_id).values(member_id=None))
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

    # ----------------------------------------------------------------- rounds

    def get_round(self, round_id: int) -> RoundRecord:
        return _round(self.conn.execute(select(Round).where(col(Round.id) == round_id)).one())

    def rounds(self, round_ids: Iterable[int]) -> dict[int, RoundRecord]:
        """These rounds by id (one query per 500); ids with no round are left out."""
        wanted = sorted(set(round_ids))
        found: dict[int, RoundRecord] = {}
        for start in range(0, len(wanted), 500):
            rows = self.conn.execute(select(Round).where(col(Round.id).in_(wanted[start : start + 500]))).all()
            found.update((row.id, _round(row)) for row in rows)
        return found

    def daily_round_id(self, daily_key: str) -> int | None:
        return self.conn.execute(select(col(Round.id)).where(col(Round.daily_key) == daily_key)).scalar()

    def daily_last_asked(self, community_id: int) -> dict[str, datetime]:
        rows = self.conn.execute(
            select(col(Round.question_id), func.max(col(Round.opened_at)))
            .where(col(Round.community_id) == community_id, col(Round.kind) == "daily")
            .group_by(col(Round.question_id))
        ).all()
        return {question_id: moment for question_id, moment in rows}

    def insert_daily(self, new: NewDaily) -> RoundRecord | None:
        """The new round, or None when another writer opened this key first."""
        new_id = self.insert_dailies([new]).get(new.daily_key)
        return None if new_id is None else self.get_round(new_id)

    def insert_private(
        self,
        community_id: int,
        member_id: int,
        channel_id: str,
        question_id: str,
        kind: str,
        now: datetime,
        choice_order: str,
    ) -> RoundRecord:
        """A practice or review round; it replaces the member's private round left unanswered."""
        self.conn.execute(
            update(Round)
            .where(col(Round.member_id) == member_id, col(Round.closed_at).is_(None), col(Round.kind) != "daily")
            .values(closed_at=now)
        )
        round_id = self.conn.execute(
            statements.ROUNDS.insert()
            .values(
                community_id=community_id,
                channel_id=channel_id,
                question_id=question_id,
                kind=kind,
                member_id=member_id,
                opened_at=now,
                choice_order=choice_order,
                number=take_number(self.conn, "rounds_numbered", community_id),
            )
            .returning(statements.ROUNDS.c.id)
        ).scalar_one()
        return self.get_round(round_id)

    def close_private(self, round_id: int, now: datetime) -> None:
        self.conn.execute(update(Round).where(col(Round.id) == round_id).values(closed_at=now))

    def close_daily(self, round_id: int, now: datetime) -> bool:
        """Close an open daily round; False when it was closed already (or is not daily)."""
        closed = self.conn.execute(
            update(Round)
            .where(col(Round.id) == round_id, col(Round.kind) == "daily", col(Round.closed_at).is_(None))
            .values(closed_at=now)
        ).rowcount
        if closed:  # the first answers are final from now on by the closed round itself
            self.conn.execute(delete(ForgottenAnswer).where(col(ForgottenAnswer.round_id) == round_id))
        return bool(closed)

    def is_daily(self, round_id: int) -> bool:
        return (
            self.conn.execute(
                select(col(Round.id)).where(col(Round.id) == round_id, col(Round.kind) == "daily")
            ).scalar()
            is not None
        )

    def open_daily_in(self, community_id: int, channel_id: str, now: datetime | None) -> RoundRecord | None:
        """The newest open daily round of a channel (`now`: only one still taking answers)."""
        query = select(Round).where(
            col(Round.community_id) == community_id,
            col(Round.channel_id) == channel_id,
            col(Round.kind) == "daily",
            col(Round.closed_at).is_(None),
        )
        if now is not None:
            query = query.where(col(Round.closes_at) > now)
        row = self.conn.execute(query.order_by(col(Round.id).desc()).limit(1)).first()
        return _round(row) if row else None

    def pending_private(self, member_id: int) -> RoundRecord | None:
        row = self.conn.execute(
            select(Round)
            .where(col(Round.member_id) == member_id, col(Round.closed_at).is_(None), col(Round.kind) != "daily")
            .order_by(col(Round.id).desc())
            .limit(1)
        ).first()
        return _round(row) if row else None

    def due_daily_rounds(self, community_id: int | None, now: datetime) -> list[int]:
        query = select(col(Round.id)).where(
            col(Round.kind) == "daily", col(Round.closed_at).is_(None), col(Round.closes_at) <= now
        )
        if community_id is not None:
            query = query.where(col(Round.community_id) == community_id)
        return [cast(int, i) for i in self.conn.execute(query.order_by(col(Round.id))).scalars().all()]

    def next_close(self, community_id: int) -> datetime | None:
        return self.conn.execute(
            select(func.min(col(Round.closes_at))).where(
                col(Round.community_id) == community_id, col(Round.kind) == "daily", col(Round.closed_at).is_(None)
            )
        ).scalar()

    def set_round_ref(self, round_id: int, message_ref: str) -> None:
        self.conn.execute(update(Round).where(col(Round.id) == round_id).values(message_ref=message_ref[:128]))

    def daily_by_ref(self, community_id: int, message_ref: str) -> RoundRecord | None:
        """The community's daily round whose question post has this platform reference."""
        row = self.conn.execute(
            select(Round)
            .where(
                col(Round.community_id) == community_id,
                col(Round.kind) == "daily",
                col(Round.message_ref) == message_ref[:128],
            )
            .order_by(col(Round.id).desc())
            .limit(1)
        ).first()
        return _round(row) if row else None

    def claim_event(self, platform: str, event_id: str, now: datetime, keep: timedelta) -> bool:
        """Note a platform event as handled; False when it was noted before (a retry). Events
        older than `keep` are forgotten on the way."""
        self.conn.execute(delete(PlatformEvent).where(col(PlatformEvent.seen_at) < now - keep))
        claimed = self.conn.execute(
            insert_ignoring(self.conn, PlatformEvent, ["platform", "event_id"])
            .values(platform=platform, event_id=event_id[:64], seen_at=now)
            .returning(col(PlatformEvent.event_id))
        ).scalar()
        return claimed is not None

    # ---------------------------------------------------------------- answers

    def answer_context(
        self, round_id: int, user_id: str, platform: str, community: str, user_key: str
    ) -> AnswerContext | None:
        found_rows = fast.rows(
            self.conn,
            statements.answer_lookup(),
            {
                "round_id": round_id,
                "user_id": user_id,
                "platform": platform,
                "community": community,
                "user_key": user_key,
            },
        )
        if not found_rows:
            return None
        found = found_rows[0]
        return AnswerContext(
            round=_round(found),
            timezone=found.timezone,
            known_member=found.known_member,
            previous=found.previous,
            forgotten=found.forgotten is not None,
        )

    def insert_answer(self, answer: NewAnswer) -> bool:
        """Store a first answer; False when that member had answered that round already."""
        inserted = fast.rows(
            self.conn,
            statements.answer_insert(self.dialect),
            {
                "round_id": answer.round_id,
                "member_id": answer.member_id,
                "community_id": answer.community_id,
                "kind": answer.kind,
                "choice": answer.choice,
                "correct": answer.correct,
                "points": answer.points,
                "answered_at": answer.answered_at,
                "week": answer.week,
            },
        )
        if inserted:
            item_stats.count_answer(
                self.conn, answer.community_id, answer.member_id, answer.question_id, answer.file_choice, answer.correct
            )
        if inserted and answer.points:
            fast.rows(self.conn, statements.add_points(), {"member_id": answer.member_id, "points": answer.points})
            fast.rows(
                self.conn,
                statements.add_week_points(self.dialect),
                {
                    "member_id": answer.member_id,
                    "week": answer.week,
                    "community_id": answer.community_id,
                    "points": answer.points,
                },
            )
        return bool(inserted)

    def answer_choice(self, round_id: int, member_id: int) -> int | None:
        return self.conn.execute(
            select(col(Answer.choice)).where(col(Answer.round_id) == round_id, col(Answer.member_id) == member_id)
        ).scalar()

    def earlier_outcomes(self, community_id: int, member_id: int, round_id: int, limit: int) -> list[bool | None]:
        return [
            row[0]
            for row in fast.rows(
                self.conn,
                statements.earlier_outcomes(limit),
                {"member_id": member_id, "community_id": community_id, "round_id": round_id},
            )
        ]

    def choice_counts(self, round_id: int) -> dict[int, int]:
        return {
            int(choice): int(count)
            for choice, count in self.conn.execute(
                select(col(Answer.choice), func.count())
                .where(col(Answer.round_id) == round_id)
                .group_by(col(Answer.choice))
            ).all()
        }

    def answer_stats(self, member_id: int) -> dict[tuple[str, bool], int]:
        return {
            (kind, bool(correct)): int(count)
            for kind, correct, count in self.conn.execute(
                select(col(Answer.kind), col(Answer.correct), func.count())
                .where(col(Answer.member_id) == member_id)
                .group_by(col(Answer.kind), col(Answer.correct))
            ).all()
        }

    def answer_count(self, member_id: int) -> int:
        return int(
            self.conn.execute(
                select(func.count()).select_from(Answer).where(col(Answer.member_id) == member_id)
            ).scalar_one()
        )

    def daily_outcomes(
        self, community_id: int, member_id: int
    ) -> list[tuple[datetime | None, datetime | None, bool | None]]:
        """Every daily round of the community, newest first: (closed_at, closes_at, correct)."""
        rows = self.conn.execute(
            select(col(Round.closed_at), col(Round.closes_at), col(Answer.correct))
            .select_from(Round)
            .outerjoin(Answer, and_(col(Answer.round_id) == col(Round.id), col(Answer.member_id) == member_id))
            .where(col(Round.community_id) == community_id, col(Round.kind) == "daily")
            .order_by(col(Round.id).desc())
        ).all()
        return [(r[0], r[1], r[2]) for r in rows]

    def seen_counts(self, member_id: int) -> dict[str, int]:
        return {
            question_id: int(count)
            for question_id, count in self.conn.execute(
                select(col(Round.question_id), func.count())
                .join(Answer, col(Answer.round_id) == col(Round.id))
                .where(col(Answer.member_id) == member_id)
                .group_by(col(Round.question_id))
            ).all()
        }

    def board(self, community_id: int, week: str | None) -> list[tuple[str, int, int]]:
        """(name, points, member id) of members with points: in one ISO week (the week's totals
        kept in weekly_points), or all time (the totals kept on members)."""
        points, where = self._board_source(community_id, week)
        query = select(col(Member.display_name), points, col(Member.id)).where(*where, points > 0)
        if week is not None:
            query = query.select_from(WeeklyPoints).join(Member, col(Member.id) == col(WeeklyPoints.member_id))
        return [(name, int(total), cast(int, mid)) for name, total, mid in self.conn.execute(query).all()]

    @staticmethod
    def _board_source(community_id: int, week: str | None) -> tuple[Any, list[Any]]:
        """The points column of a board and the conditions that pick its rows (the board is those
        with points above 0: each caller adds its own lower bound, one range on the index)."""
        if week is None:
            return col(Member.points_total), [col(Member.community_id) == community_id]
        return col(WeeklyPoints.points), [
            col(WeeklyPoints.community_id) == community_id,
            col(WeeklyPoints.week) == week,
        ]

    def _board_count(self, points: Any, where: list[Any]) -> int:
        return int(self.conn.execute(select(func.count()).select_from(points.table).where(*where)).scalar_one())

    def board_size(self, community_id: int, week: str | None) -> int:
        """How many members have points on the board (an index-only count)."""
        points, where = self._board_source(community_id, week)
        return self._board_count(points, [*where, points > 0])

    def board_slice(self, community_id: int, week: str | None, start: int, size: int) -> list[tuple[int, str, int]]:
        """Rows `start:start + size` of the board as `scoring.rank_rows` orders it (points,
        then the name without case), each (rank, name, points), ranked and paged in SQL on
        the board's index: the points at `start` (an index-only offset), how many have more
        (so the first row's rank), then only that page's rows, the ties at its top skipped
        by name. Names order as SQLite's lower() and code points (PostgreSQL: collation "C")."""
        points, where = self._board_source(community_id, week)
        at = self.conn.execute(
            select(points).where(*where, points > 0).order_by(points.desc()).limit(1).offset(start)
        ).scalar()
        if at is None:
            return []
        above = self._board_count(points, [*where, points > at])
        name: Any = col(Member.display_name)
        folded: Any = func.lower(name)
        if self.dialect == "postgresql":
            name, folded = name.collate("C"), folded.collate("C")
        query = (
            select(col(Member.display_name), points)
            .where(*where, points <= at, points > 0)
            .order_by(points.desc(), folded, name)
            .limit(size)
            .offset(start - above)
        )
        if week is not None:
            query = query.select_from(WeeklyPoints).join(Member, col(Member.id) == col(WeeklyPoints.member_id))
        rows: list[tuple[int, str, int]] = []
        for position, (shown, total) in enumerate(self.conn.execute(query).all(), start=start):
            if not rows:
                rank = above + 1  # the first row is at `at` points: a tie shares its first row's rank
            elif rows[-1][2] == total:
                rank = rows[-1][0]
            else:
                rank = position + 1  # everyone before it has more points
            rows.append((rank, shown, int(total)))
        return rows

    def week_rank(self, community_id: int, week: str, member_id: int) -> tuple[int, int] | None:
        """A member's (points, rank) on one week's board (1 + how many have more), or None
        without points that week."""
        mine = self.conn.execute(
            select(col(WeeklyPoints.points)).where(
                col(WeeklyPoints.member_id) == member_id, col(WeeklyPoints.week) == week, col(WeeklyPoints.points) > 0
            )
        ).scalar()
        if mine is None:
            return None
        points, where = self._board_source(community_id, week)
        return int(mine), 1 + self._board_count(points, [*where, points > mine])

    def export(self, community_id: int) -> list[Any]:
        return list(
            self.conn.execute(
                select(
                    col(Answer.answered_at),
                    col(Answer.week),
                    col(Member.user_id),
                    col(Member.display_name),
                    col(Answer.kind),
                    col(Round.question_id),
                    col(Answer.choice),
                    col(Round.choice_order),
                    col(Answer.correct),
                    col(Answer.points),
                )
                .join(Member, col(Member.id) == col(Answer.member_id))
                .join(Round, col(Round.id) == col(Answer.round_id))
                .where(col(Answer.community_id) == community_id)
                .order_by(col(Answer.id))
            ).all()
        )

    # ---------------------------------------- forgotten members of open rounds

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

    # ---------------------------------------------------------------- reviews

    def review_state(self, member_id: int, question_id: str) -> str | None:
        return self.conn.execute(
            select(col(Review.state)).where(col(Review.member_id) == member_id, col(Review.question_id) == question_id)
        ).scalar()

    def update_review(self, member_id: int, question_id: str, state: str, due: datetime) -> None:
        self.conn.execute(
            update(Review)
            .where(col(Review.member_id) == member_id, col(Review.question_id) == question_id)
            .values(state=state, due=due)
        )

    def add_review(self, member_id: int, question_id: str, state: str, due: datetime) -> None:
        fast.rows(
            self.conn,
            statements.review_insert(self.dialect),
            {"member_id": member_id, "question_id": question_id, "state": state, "due": due},
        )

    def reviews(self, member_id: int) -> list[tuple[str, datetime]]:
        rows = self.conn.execute(
            select(col(Review.question_id), col(Review.due))
            .where(col(Review.member_id) == member_id)
            .order_by(col(Review.due))
        ).all()
        return [(q, due) for q, due in rows]

    def reviews_due(self, member_id: int, now: datetime) -> int:
        return int(
            self.conn.execute(
                select(func.count())
                .select_from(Review)
                .where(col(Review.member_id) == member_id, col(Review.due) <= now)
            ).scalar_one()
        )

    # ------------------------------------------------------------ leaderboards

    def claim_week(self, community_id: int, week: str, now: datetime) -> bool:
        claimed = self.conn.execute(
            insert_ignoring(self.conn, LeaderboardPost, ["community_id", "week"])
            .values(community_id=community_id, week=week, posted_at=now)
            .returning(col(LeaderboardPost.id))
        ).scalar()
        return claimed is not None

    # ----------------------------------------------------------------- outbox

    def enqueue(self, community_id: int, channel_id: str, kind: str, key: str, now: datetime) -> None:
        """Queue a post for the community's platform, once per (community, kind, key)."""
        platform = select(col(Community.platform)).where(col(Community.id) == community_id).scalar_subquery()
        self.conn.execute(
            insert_ignoring(self.conn, Outbox, ["community_id", "kind", "key"]).values(
                community_id=community_id,
                platform=platform,
                channel_id=channel_id,
                kind=kind,
                key=key,
                state="pending",
                attempts=0,
                next_try=now,
                created_at=now,
            )
        )

    def outbox_due(self, platform: str, now: datetime) -> bool:
        """Whether any post of `platform` waits to be sent now (a read: idle passes of the
        deliverers never take the write lock)."""
        return (
            self.conn.execute(
                select(col(Outbox.id))
                .where(
                    col(Outbox.platform) == platform,
                    col(Outbox.state) == "pending",
                    col(Outbox.next_try) <= now,
                    or_(col(Outbox.claimed_until).is_(None), col(Outbox.claimed_until) < now),
                )
                .limit(1)
            ).first()
            is not None
        )

    def claim_outbox(
        self,
        platform: str,
        community: str | None,
        worker: str,
        now: datetime,
        lease: timedelta,
        limit: int,
        serves: Callable[[str], bool] | None = None,
    ) -> list[OutboxRecord]:
        """Take up to `limit` due rows for `worker` until `now + lease`. A row claimed by a
        live lease is skipped; on PostgreSQL rows another transaction is claiming are skipped
        (SKIP LOCKED), on SQLite the write transaction already holds the only write lock.
        `serves` (a community's external id -> bool) keeps only the communities this process
        serves (a Discord shard's guilds); the others' rows are left unclaimed."""
        query = (
            select(Outbox, col(Community.external_id))
            .join(Community, col(Community.id) == col(Outbox.community_id))
            .where(
                col(Outbox.platform) == platform,
                col(Outbox.state) == "pending",
                col(Outbox.next_try) <= now,
                or_(col(Outbox.claimed_until).is_(None), col(Outbox.claimed_until) < now),
            )
            .order_by(col(Outbox.next_try), col(Outbox.id))
        )
        if serves is None:
            query = query.limit(limit)
        if community is not None:
            query = query.where(col(Community.external_id) == community)
        if self.dialect == "postgresql":
            query = query.with_for_update(skip_locked=True, of=Outbox)
        rows = self.conn.execute(query).all()
        if serves is not None:
            rows = [row for row in rows if serves(row.external_id)][:limit]
        if not rows:
            return []
        ids = [row.id for row in rows]
        self.conn.execute(
            update(Outbox).where(col(Outbox.id).in_(ids)).values(claimed_by=worker, claimed_until=now + lease)
        )
        return [self._outbox(row) for row in rows]

    @staticmethod
    def _outbox(row: Any) -> OutboxRecord:
        return OutboxRecord(
            id=row.id,
            community_id=row.community_id,
            platform=row.platform,
            community=row.external_id,
            channel_id=row.channel_id,
            kind=row.kind,
            key=row.key,
            attempts=row.attempts,
            state=row.state,
            last_error=row.last_error,
            next_try=row.next_try,
        )

    def outbox_row(self, outbox_id: int) -> OutboxRecord | None:
        row = self.conn.execute(
            select(Outbox, col(Community.external_id))
            .join(Community, col(Community.id) == col(Outbox.community_id))
            .where(col(Outbox.id) == outbox_id)
        ).first()
        return self._outbox(row) if row else None

    def outbox_sent(self, outbox_id: int, message_ref: str | None, now: datetime) -> None:
        self.conn.execute(
            update(Outbox)
            .where(col(Outbox.id) == outbox_id)
            .values(
                state="sent",
                attempts=col(Outbox.attempts) + 1,
                message_ref=None if message_ref is None else message_ref[:128],
                sent_at=now,
                claimed_by=None,
                claimed_until=None,
                last_error=None,
            )
        )

    def outbox_retry(self, outbox_id: int, error: str, next_try: datetime) -> None:
        self.conn.execute(
            update(Outbox)
            .where(col(Outbox.id) == outbox_id)
            .values(
                attempts=col(Outbox.attempts) + 1,
                next_try=next_try,
                last_error=error[:300],
                claimed_by=None,
                claimed_until=None,
            )
        )

    def outbox_give_up(self, outbox_id: int, error: str) -> None:
        self.conn.execute(
            update(Outbox)
            .where(col(Outbox.id) == outbox_id)
            .values(
                state="failed",
                attempts=col(Outbox.attempts) + 1,
                last_error=error[:300],
                claimed_by=None,
                claimed_until=None,
            )
        )

    def outbox_ref(self, community_id: int, kind: str, key: str) -> str | None:
        return self.conn.execute(
            select(col(Outbox.message_ref)).where(
                col(Outbox.community_id) == community_id, col(Outbox.kind) == kind, col(Outbox.key) == key
            )
        ).scalar()

    def undelivered(self, community_id: int | None) -> list[OutboxRecord]:
        """Posts given up on, and posts that failed at least once and wait for a retry."""
        query = (
            select(Outbox, col(Community.external_id))
            .join(Community, col(Community.id) == col(Outbox.community_id))
            .where(or_(col(Outbox.state) == "failed", and_(col(Outbox.state) == "pending", col(Outbox.attempts) > 0)))
            .order_by(col(Outbox.id))
        )
        if community_id is not None:
            query = query.where(col(Outbox.community_id) == community_id)
        return [self._outbox(row) for row in self.conn.execute(query).all()]

    # ---------------------------------------------------------- platform state

    def state_get(self, key: str) -> str | None:
        return self.conn.execute(select(col(PlatformState.value)).where(col(PlatformState.key) == key)).scalar()

    def state_put(self, key: str, value: str, now: datetime) -> None:
        changed = self.conn.execute(
            update(PlatformState).where(col(PlatformState.key) == key).values(value=value, updated_at=now)
        ).rowcount
        if not changed:
            self.conn.execute(
                insert_ignoring(self.conn, PlatformState, ["key"]).values(key=key, value=value, updated_at=now)
            )

    # ----------------------------------------------------------- link versions

    def link_versions(self, community_id: int, holders: tuple[str, ...]) -> dict[str, int]:
        """The stored versions of these holders' links ("" the community's); a holder without
        a row is left out (version 0)."""
        rows = self.conn.execute(
            select(col(LinkVersion.holder), col(LinkVersion.version)).where(
                col(LinkVersion.community_id) == community_id, col(LinkVersion.holder).in_(holders)
            )
        ).all()
        return {str(holder): int(version) for holder, version in rows}

    def advance_link_version(self, community_id: int, holder: str, create: bool = True) -> bool:
        """One more than the holder's version (1 for a new row; without `create`, only a row
        that exists is advanced). Whether a row changed."""
        changed = self.conn.execute(
            update(LinkVersion)
            .where(col(LinkVersion.community_id) == community_id, col(LinkVersion.holder) == holder)
            .values(version=col(LinkVersion.version) + 1)
        ).rowcount
        if changed or not create:
            return bool(changed)
        self.conn.execute(
            insert_ignoring(self.conn, LinkVersion, ["community_id", "holder"]).values(
                community_id=community_id, holder=holder, version=1
            )
        )
        return True

    def note_link_holder(self, community_id: int, holder: str) -> None:
        """A row (version 0) for a holder given a link, so that a later advance without
        `create` finds it."""
        self.conn.execute(
            insert_ignoring(self.conn, LinkVersion, ["community_id", "holder"]).values(
                community_id=community_id, holder=holder, version=0
            )
        )

    # ----------------------------------------------------------- item analysis

    def answer_rows(self, community_id: int) -> list[AnswerRow]:
        """Every answer of the community, its choice in the bank file's order."""
        return item_stats.answer_rows(self.conn, community_id=community_id)

    # --------------------------------------------------------------- FSRS fit

    def fsrs_answers(self, community_id: int) -> list[tuple[int, str, str, bool, datetime, str | None, datetime]]:
        return fsrs.review_answers(self.conn, community_id)

    def fsrs_parameters(self, community_id: int) -> tuple[str | None, datetime | None, int] | None:
        return fsrs.parameters_of(self.conn, community_id)

    def fsrs_save(self, community_id: int, parameters: str | None, reviews: int, now: datetime) -> None:
        fsrs.save(self.conn, community_id, parameters, reviews, now)

    def fsrs_claim_week(self, community_id: int, week: str) -> bool:
        return fsrs.claim_week(self.conn, community_id, week)

    # -------------------------------------------------------------- demo jobs

    def _jobs(self) -> Any:
        return select(DemoJob, col(Community.platform), col(Community.external_id)).join(
            Community, col(Community.id) == col(DemoJob.community_id)
        )

    @staticmethod
    def _job(row: Any) -> DemoJobRecord:
        return DemoJobRecord(
            id=row.id,
            community_id=row.community_id,
            platform=row.platform,
            community=row.external_id,
            channel_id=row.channel_id,
            user_id=row.user_id,
            user_name=row.user_name,
            module=row.module,
            args=tuple(json.loads(row.args)),
            state=row.state,
            progress=row.progress,
            result=row.result,
            chart_path=row.chart_path,
            error=row.error,
            backend=row.backend,
            message_ref=row.message_ref,
            created_at=row.created_at,
            started_at=row.started_at,
            finished_at=row.finished_at,
            failure=row.failure,
            number=row.number if row.number is not None else row.id,  # numbered by migration 0020
        )

    def last_demo_at(self, community_id: int, user_id: str, exempt: tuple[str, ...]) -> datetime | None:
        """When this member last asked for a demo that was not lost to a failure of ours: every
        job counts but a failed one whose `failure` is in `exempt` (or unrecorded, before 0021)."""
        return self.conn.execute(
            select(func.max(col(DemoJob.created_at))).where(
                col(DemoJob.community_id) == community_id,
                col(DemoJob.user_id) == user_id,
                or_(
                    col(DemoJob.state) != "failed",
                    and_(col(DemoJob.failure).is_not(None), col(DemoJob.failure).not_in(exempt)),
                ),
            )
        ).scalar()

    def demos_waiting(self, community_id: int) -> int:
        return int(
            self.conn.execute(
                select(func.count())
                .select_from(DemoJob)
                .where(col(DemoJob.community_id) == community_id, col(DemoJob.state) == "queued")
            ).scalar_one()
        )

    def add_demo(
        self,
        community_id: int,
        channel_id: str,
        user_id: str,
        user_name: str,
        module: str,
        args: tuple[str, ...],
        now: datetime,
    ) -> int:
        return _row_id(
            self.conn.execute(
                insert(DemoJob)
                .values(
                    community_id=community_id,
                    channel_id=channel_id,
                    user_id=user_id,
                    user_name=user_name,
                    module=module,
                    args=json.dumps(list(args)),
                    state="queued",
                    progress="{}",
                    created_at=now,
                    number=take_number(self.conn, "demos_numbered", community_id),
                )
                .returning(col(DemoJob.id))
            ).scalar_one()
        )

    def demo_position(self, job_id: int, community_id: int) -> int:
        """1 when nothing in its community runs or waits before it."""
        ahead = self.conn.execute(
            select(func.count())
            .select_from(DemoJob)
            .where(
                col(DemoJob.community_id) == community_id,
                or_(col(DemoJob.state) == "running", and_(col(DemoJob.state) == "queued", col(DemoJob.id) < job_id)),
            )
        ).scalar_one()
        return int(ahead) + 1

    def get_demo(self, job_id: int) -> DemoJobRecord | None:
        row = self.conn.execute(self._jobs().where(col(DemoJob.id) == job_id)).first()
        return self._job(row) if row else None

    def claim_demo(
        self, worker: str, backend: str, now: datetime, serves: Callable[[str, str], bool] | None = None
    ) -> DemoJobRecord | None:
        """The oldest queued job of a community with nothing running, marked running, taking the
        communities in turn: the one whose last demo started longest ago (or never) first, so one
        community's full queue does not hold up the others'. With `serves` (platform, community
        id -> bool), only of the communities it accepts (a Discord shard process runs its own
        guilds' demos, so their progress edits come from it)."""
        if self.dialect == "postgresql":
            # Row locks alone let two processes both see a community idle and each start one of
            # its jobs; claims are rare, so one transaction-scoped lock serializes them.
            self.conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DEMO_CLAIM_LOCK})
        busy = select(col(DemoJob.community_id)).where(col(DemoJob.state) == "running")
        started = DemoJob.__table__.alias("started")  # type: ignore[attr-defined]
        last_start = (
            select(func.max(started.c.started_at))
            .where(started.c.community_id == col(DemoJob.community_id))
            .scalar_subquery()
        )
        query = (
            select(col(DemoJob.id), col(Community.platform), col(Community.external_id))
            .join(Community, col(Community.id) == col(DemoJob.community_id))
            .where(col(DemoJob.state) == "queued", col(DemoJob.community_id).not_in(busy))
            .order_by(last_start.is_not(None), last_start, col(DemoJob.id))
        )
        if serves is None:
            query = query.limit(1)
        if self.dialect == "postgresql":
            query = query.with_for_update(skip_locked=True, of=DemoJob)
        candidates = self.conn.execute(query).all()
        job_id = next((r.id for r in candidates if serves is None or serves(r.platform, r.external_id)), None)
        if job_id is None:
            return None
        self.conn.execute(
            update(DemoJob)
            .where(col(DemoJob.id) == job_id)
            .values(state="running", started_at=now, worker=worker[:64], backend=backend[:16])
        )
        return self.get_demo(job_id)

    def set_demo_progress(self, job_id: int, progress: str) -> None:
        self.conn.execute(update(DemoJob).where(col(DemoJob.id) == job_id).values(progress=progress[:20000]))

    def set_demo_ref(self, job_id: int, message_ref: str) -> None:
        self.conn.execute(update(DemoJob).where(col(DemoJob.id) == job_id).values(message_ref=message_ref[:128]))

    def finish_demo(
        self,
        job_id: int,
        state: str,
        now: datetime,
        result: str | None,
        chart_path: str | None,
        error: str | None,
        failure: str | None = None,
    ) -> bool:
        """Record a running (or queued) job's end (and, failed, why); False when it had ended already."""
        done = self.conn.execute(
            update(DemoJob)
            .where(col(DemoJob.id) == job_id, col(DemoJob.state).in_(("queued", "running")))
            .values(
                state=state,
                finished_at=now,
                result=result,
                chart_path=None if chart_path is None else chart_path[:500],
                error=None if error is None else error[:500],
                failure=None if failure is None else failure[:16],
            )
        ).rowcount
        return bool(done)

    def demo_ids(self, states: tuple[str, ...]) -> list[int]:
        return [
            cast(int, i)
            for i in self.conn.execute(
                select(col(DemoJob.id)).where(col(DemoJob.state).in_(states)).order_by(col(DemoJob.id))
            ).scalars()
        ]

    def recent_demos(self, limit: int) -> list[DemoJobRecord]:
        rows = self.conn.execute(self._jobs().order_by(col(DemoJob.id).desc()).limit(limit)).all()
        return [self._job(row) for row in rows]

    # ---------------------------------------------------------------- web pages

    def member_named(self, community_id: int, user_id: str) -> tuple[int, str] | None:
        row = self.conn.execute(
            select(col(Member.id), col(Member.display_name)).where(
                col(Member.community_id) == community_id, col(Member.user_id) == user_id
            )
        ).first()
        return None if row is None else (_row_id(row[0]), str(row[1]))

    def week_points(self, member_id: int) -> dict[str, int]:
        """Points per ISO week of one member (weeks with points only; kept in weekly_points)."""
        rows = self.conn.execute(
            select(col(WeeklyPoints.week), col(WeeklyPoints.points)).where(col(WeeklyPoints.member_id) == member_id)
        ).all()
        return {week: int(points) for week, points in rows}

    def question_outcomes(self, member_id: int) -> list[tuple[str, int, int]]:
        """Per question a member answered: (question id, answers, correct ones)."""
        correct = func.sum(case((col(Answer.correct), 1), else_=0))
        rows = self.conn.execute(
            select(col(Round.question_id), func.count(), correct)
            .select_from(Answer)
            .join(Round, col(Round.id) == col(Answer.round_id))
            .where(col(Answer.member_id) == member_id)
            .group_by(col(Round.question_id))
        ).all()
        return [(question_id, int(count), int(right or 0)) for question_id, count, right in rows]

    def missed_answers(self, member_id: int, limit: int) -> list[tuple[str, int, str | None, datetime]]:
        """A member's wrong answers, newest first: (question id, shown choice, the round's order, when)."""
        rows = self.conn.execute(
            select(col(Round.question_id), col(Answer.choice), col(Round.choice_order), col(Answer.answered_at))
            .select_from(Answer)
            .join(Round, col(Round.id) == col(Answer.round_id))
            .where(col(Answer.member_id) == member_id, col(Answer.correct).is_(False))
            .order_by(col(Answer.answered_at).desc(), col(Answer.id).desc())
            .limit(limit)
        ).all()
        return [(r[0], int(r[1]), r[2], r[3]) for r in rows]

    def daily_questions(self, community_id: int) -> tuple[set[str], set[str]]:
        """The questions of the community's daily rounds: (revealed in a closed round, in an open one)."""
        rows = self.conn.execute(
            select(col(Round.question_id), col(Round.closed_at).is_(None))
            .where(col(Round.community_id) == community_id, col(Round.kind) == "daily")
            .distinct()
        ).all()
        revealed = {question_id for question_id, still_open in rows if not still_open}
        open_now = {question_id for question_id, still_open in rows if still_open}
        return revealed, open_now

    def community_demos(self, community_id: int, limit: int) -> list[DemoJobRecord]:
        rows = self.conn.execute(
            self._jobs().where(col(DemoJob.community_id) == community_id).order_by(col(DemoJob.id).desc()).limit(limit)
        ).all()
        return [self._job(row) for row in rows]

    # ------------------------------------------------------- members' questions

    def _suggestions(self) -> Any:
        return select(Suggestion, col(Member.user_id), col(Member.display_name)).outerjoin(
            Member, col(Member.id) == col(Suggestion.member_id)
        )

    @staticmethod
    def _suggestion(row: Any) -> SuggestionRecord:
        return SuggestionRecord(
            id=row.id,
            community_id=row.community_id,
            state=row.state,
            topic=row.topic,
            body=row.body,
            question_id=row.question_id,
            note=row.note,
            channel_id=row.channel_id,
            created_at=row.created_at,
            author_member=row.member_id,
            author_user=row.user_id,
            author_name=row.display_name,
            number=row.number or 0,
        )

    def add_suggestion(
        self, community_id: int, member_id: int, channel_id: str, state: str, topic: str, body: str, now: datetime
    ) -> int:
        sent = state != "draft"  # a draft is numbered when it is sent (set_suggestion)
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
        return _row_id(result.scalar_one())

    def set_suggestion(self, suggestion_id: int, **values: Any) -> None:
        allowed = {"state", "topic", "body", "question_id", "note", "decided_at", "created_at"}
        changes = {k: v for k, v in values.items() if k in allowed}
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
        return self._suggestion(row) if row else None

    def suggestion_by_question(self, question_id: str) -> SuggestionRecord | None:
        row = self.conn.execute(self._suggestions().where(col(Suggestion.question_id) == question_id)).first()
        return self._suggestion(row) if row else None

    def suggestions(self, community_id: int, states: tuple[str, ...], limit: int = 1000) -> list[SuggestionRecord]:
        """The community's suggestions in these states, oldest first."""
        rows = self.conn.execute(
            self._suggestions()
            .where(col(Suggestion.community_id) == community_id, col(Suggestion.state).in_(states))
            .order_by(col(Suggestion.id))
            .limit(limit)
        ).all()
        return [self._suggestion(row) for row in rows]

    def count_suggestions(self, community_id: int, state: str) -> int:
        return int(
            self.conn.execute(
                select(func.count()).where(col(Suggestion.community_id) == community_id, col(Suggestion.state) == state)
            ).scalar_one()
        )

    def member_suggestions(self, member_id: int, since: datetime) -> tuple[int, int]:
        """(the member's suggestions waiting now, those sent since `since`)."""
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
        return int(pending), int(recent)

    def drop_drafts(self, member_id: int) -> None:
        self.conn.execute(
            delete(Suggestion).where(col(Suggestion.member_id) == member_id, col(Suggestion.state) == "draft")
        )

    # -------------------------------------------------------- adaptive practice

    def member_ratings(self, member_id: int) -> dict[str, tuple[float, int]]:
        """The member's ratings by topic ("" overall): (rating, answers)."""
        rows = fast.rows(self.conn, statements.member_ratings(), {"member_id": member_id})
        return {topic: (float(rating), int(answers)) for topic, rating, answers in rows}

    def question_ratings(self, question_ids: Iterable[str] | None = None) -> dict[str, tuple[float, int]]:
        """Questions' difficulty ratings: (rating, answers); every rated one without ids."""
        return question_ratings.read(self.conn, question_ids)

    def bump_member_rating(self, member_id: int, topic: str, start: float, delta: float) -> None:
        """Add `delta` to a member's rating (created at `start`), counting one more answer."""
        fast.rows(
            self.conn,
            statements.bump_member_rating(self.dialect),
            {
                "member_id": member_id,
                "topic": topic,
                "rating": start + delta,
                "answers": 1,
                "delta": delta,
                "counted": 1,
            },
        )

    def bump_question_rating(self, question_id: str, start: float, delta: float) -> None:
        """Add `delta` to a question's difficulty (created at `start`), in place, so that
        concurrent answers in other communities add up rather than overwrite each other (on
        PostgreSQL in one of a few rows, so that they do not queue on one lock)."""
        question_ratings.bump(self.conn, question_id, start, delta)

    def seen_since(self, member_id: int, since: datetime) -> set[str]:
        """The questions a member answered, or was given privately, since `since`."""
        answered = self.conn.execute(
            select(col(Round.question_id))
            .join(Answer, col(Answer.round_id) == col(Round.id))
            .where(col(Answer.member_id) == member_id, col(Answer.answered_at) >= since)
        ).scalars()
        given = self.conn.execute(
            select(col(Round.question_id)).where(col(Round.member_id) == member_id, col(Round.opened_at) >= since)
        ).scalars()
        return set(answered) | set(given)

    # ------------------------------------------------------------ confidence

    def set_review_before(self, round_id: int, member_id: int, state: str) -> None:
        confidence.set_review_before(self.conn, round_id, member_id, state)

    def confidence_context(self, round_id: int, member_id: int) -> ConfidenceContext | None:
        return confidence.context(self.conn, round_id, member_id)

    def set_confidence(self, round_id: int, member_id: int, value: str) -> bool:
        return confidence.set_confidence(self.conn, round_id, member_id, value)

    def confidence_counts(
        self, member_id: int | None = None, community_id: int | None = None
    ) -> dict[tuple[str, bool], int]:
        return confidence.counts(self.conn, member_id=member_id, community_id=community_id)
