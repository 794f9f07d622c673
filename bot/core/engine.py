"""StudyEngine: one method per use case; plain values in, cards out. It never sends anything."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from typing import Any, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Connection, and_, delete, func, select, update
from sqlmodel import col

from bot.core import review as spaced
from bot.core import scoring
from bot.core.bank import TOPICS, Bank, Question, normalise
from bot.core.errors import InvalidInput, NotFound
from bot.core.values import (
    LETTERS,
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ChannelRef,
    ChoiceReveal,
    CommunityRef,
    ConfigCard,
    ConfirmForget,
    Forgotten,
    LeaderboardCard,
    LeaderboardRow,
    NothingDue,
    Notice,
    QuestionCard,
    RevealCard,
    RoundClosed,
    RoundKind,
    ScoreCard,
    StatsLine,
    UserRef,
    letter,
)
from bot.store import statements
from bot.store.database import Database, insert_ignoring
from bot.store.tables import Answer, Community, LeaderboardPost, Member, Review, Round

log = logging.getLogger(__name__)

MAX_TEXT = 2000
MAX_NAME = 80
LOW_BANK = 7
CONFIG_KEYS = ("channel", "timezone", "daily_time", "window_hours", "topics", "paused")
_LETTER_RE = re.compile(r"^\s*([a-eA-E])\s*[).]?\s*$")
_TIME_RE = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def clean_name(name: str) -> str:
    """A display name safe to store and show: no control or direction characters, bounded."""
    cleaned = " ".join(_CONTROL_RE.sub(" ", name).split())[:MAX_NAME]
    return cleaned or "someone"


def parse_choice(text: str, choices: Sequence[str]) -> int | None:
    """The choice a text reply means: a letter (a-e, any case, optional ')' or '.') or a
    choice's full text ignoring case, spaces and punctuation; None when it is neither."""
    if len(text) > MAX_TEXT:
        return None
    match = _LETTER_RE.match(text)
    if match:
        index = LETTERS.index(match.group(1).lower())
        return index if index < len(choices) else None
    wanted = normalise(text)
    if not wanted:
        return None
    for index, choice in enumerate(choices):
        if normalise(choice) == wanted:
            return index
    return None


@dataclass(frozen=True)
class CommunityConfig:
    id: int
    name: str
    timezone: str
    daily_time: str
    window_hours: int
    channel_id: str | None
    topics: tuple[str, ...]
    paused: bool

    def as_pairs(self) -> tuple[tuple[str, str], ...]:
        return (
            ("channel", self.channel_id or "(not set)"),
            ("timezone", self.timezone),
            ("daily_time", self.daily_time),
            ("window_hours", str(self.window_hours)),
            ("topics", ",".join(self.topics) or "all"),
            ("paused", "on" if self.paused else "off"),
        )


def _config_of(row: Any) -> CommunityConfig:
    return CommunityConfig(
        id=row.id,
        name=row.name,
        timezone=row.timezone,
        daily_time=row.daily_time,
        window_hours=row.window_hours,
        channel_id=row.channel_id,
        topics=tuple(t for t in row.topics.split(",") if t),
        paused=row.paused,
    )


class StudyEngine:
    """The study bot's rules. Each public method is one use case and one unit of work."""

    def __init__(
        self,
        db: Database,
        bank: Bank,
        clock: Callable[[], datetime] = utcnow,
        default_timezone: str = "UTC",
        default_window_hours: int = 12,
    ) -> None:
        self.db = db
        self.bank = bank
        self.clock = clock
        self.default_timezone = default_timezone
        self.default_window_hours = default_window_hours

    # ----------------------------------------------------------------- helpers

    def now(self) -> datetime:
        moment = self.clock()
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

    def _community(self, conn: Connection, ref: CommunityRef | UserRef | ChannelRef) -> CommunityConfig:
        """The community's settings, creating it with the defaults on first use."""
        found = self._find_community(conn, ref)
        if found is not None:
            return found
        conn.execute(
            insert_ignoring(conn, Community, ["platform", "external_id"]).values(
                platform=ref.platform,
                external_id=ref.community_id,
                name=clean_name(ref.community_id),
                timezone=self.default_timezone,
                window_hours=self.default_window_hours,
                created_at=self.now(),
            )
        )
        created = self._find_community(conn, ref)
        assert created is not None  # inserted above, or by a concurrent writer
        return created

    def _find_community(self, conn: Connection, ref: CommunityRef | UserRef | ChannelRef) -> CommunityConfig | None:
        row = conn.execute(
            select(Community).where(
                col(Community.platform) == ref.platform, col(Community.external_id) == ref.community_id
            )
        ).first()
        return _config_of(row) if row else None

    def _member(self, conn: Connection, community_id: int, user: UserRef) -> int:
        return int(
            conn.execute(
                statements.member_upsert(conn.dialect.name),
                {
                    "community_id": community_id,
                    "user_id": user.user_id,
                    "display_name": clean_name(user.display_name),
                    "created_at": self.now(),
                },
            ).scalar_one()
        )

    def _find_member(self, conn: Connection, community_id: int, user: UserRef) -> int | None:
        return conn.execute(
            select(col(Member.id)).where(col(Member.community_id) == community_id, col(Member.user_id) == user.user_id)
        ).scalar()

    def _question(self, question_id: str) -> Question:
        question = self.bank.get(question_id)
        if question is None:
            raise NotFound("That question is no longer in the bank, so it cannot be answered.")
        return question

    def _card(self, round_row: Any, question: Question, admin_note: str | None = None) -> QuestionCard:
        return QuestionCard(
            round_id=round_row.id,
            question_id=question.id,
            kind=round_row.kind,
            topic=question.topic,
            difficulty=question.difficulty,
            prompt=question.prompt,
            choices=tuple(c.text for c in question.choices),
            closes_at=round_row.closes_at,
            late=round_row.late,
            admin_note=admin_note,
        )

    # ------------------------------------------------------------- daily round

    def open_daily(self, channel: ChannelRef, late: bool = False) -> QuestionCard | AlreadyOpen:
        """Open today's round in `channel` (local day of the community), at most once."""
        now = self.now()
        with self.db.write() as conn:
            community = self._community(conn, channel)
            day = scoring.local_date(now, community.timezone).isoformat()
            key = f"{channel.channel_id}|{day}"
            existing = conn.execute(select(col(Round.id)).where(col(Round.daily_key) == key)).scalar()
            if existing is not None:
                return AlreadyOpen(round_id=existing, local_date=day)
            question, unasked_left = self._next_daily_question(conn, community)
            result = conn.execute(
                insert_ignoring(conn, Round, ["daily_key"])
                .values(
                    community_id=community.id,
                    channel_id=channel.channel_id,
                    question_id=question.id,
                    kind="daily",
                    local_date=day,
                    daily_key=key,
                    opened_at=now,
                    closes_at=now + timedelta(hours=community.window_hours),
                    late=late,
                )
                .returning(col(Round.id))
            ).scalar()
            if result is None:  # another process opened it between our read and write
                existing = conn.execute(select(col(Round.id)).where(col(Round.daily_key) == key)).scalar_one()
                return AlreadyOpen(round_id=cast(int, existing), local_date=day)
            row = conn.execute(select(Round).where(col(Round.id) == result)).one()
        note = None
        if unasked_left < LOW_BANK:
            note = (
                f"Questions not yet asked in this community: {unasked_left}. After that the least "
                "recently asked come back; add questions to the bank to keep rounds fresh."
            )
        log.info("opened daily round %s (%s) in %s", row.id, question.id, channel)
        return self._card(row, question, admin_note=note)

    def _next_daily_question(self, conn: Connection, community: CommunityConfig) -> tuple[Question, int]:
        pool = [q for q in self.bank.questions if not community.topics or q.topic in community.topics]
        if not pool:
            pool = list(self.bank.questions)
        last_asked = dict(
            conn.execute(
                select(col(Round.question_id), func.max(col(Round.opened_at)))
                .where(col(Round.community_id) == community.id, col(Round.kind) == "daily")
                .group_by(col(Round.question_id))
            ).all()
        )

        def spread(q: Question) -> str:  # a stable order that differs between communities
            return hashlib.sha256(f"{community.id}:{q.id}".encode()).hexdigest()

        unasked = sorted((q for q in pool if q.id not in last_asked), key=spread)
        if unasked:
            return unasked[0], len(unasked) - 1
        return min(pool, key=lambda q: (last_asked[q.id], spread(q))), 0

    # ------------------------------------------------------------------ answers

    def answer(self, user: UserRef, round_id: int, choice: int) -> AnswerFeedback | AlreadyAnswered | RoundClosed:
        """Score a user's first answer to a round; later answers change nothing."""
        now = self.now()
        # Read first, without the write lock: repeats (double clicks, retries) and answers to
        # closed or foreign rounds end here, so only a first answer ever queues to write.
        with self.db.read() as conn:
            found = conn.execute(
                statements.answer_lookup(),
                {
                    "round_id": round_id,
                    "user_id": user.user_id,
                    "platform": user.platform,
                    "community": user.community_id,
                },
            ).first()
        if found is None:
            raise NotFound(f"There is no question #{round_id} in this community.")
        row, timezone_name, known_member, previous = found, found.timezone, found.known_member, found.previous
        if row.kind != "daily" and row.member_id != known_member:
            raise NotFound(f"Question #{round_id} was someone else's practice question.")
        if previous is not None:
            return AlreadyAnswered(round_id=round_id, chosen=letter(previous))
        question = self._question(row.question_id)
        if not 0 <= choice < len(question.choices):
            raise InvalidInput(f"Choose one of {', '.join(letter(i) for i in range(len(question.choices)))}.")
        answer_index = question.answer_index
        if row.closed_at is not None or (row.closes_at is not None and row.closes_at <= now):
            return RoundClosed(round_id=round_id, answer=letter(answer_index))
        with self.db.write() as conn:
            member_id = self._member(conn, row.community_id, user)
            correct = choice == answer_index
            bonus = 0
            points = 0
            if row.kind == "daily" and correct:
                bonus = self._earlier_run(conn, row.community_id, member_id, round_id)
                points = scoring.daily_points(True, bonus)
                bonus = points - scoring.BASE_POINTS
            inserted = conn.execute(
                statements.answer_insert(conn.dialect.name),
                {
                    "round_id": round_id,
                    "member_id": member_id,
                    "community_id": row.community_id,
                    "kind": row.kind,
                    "choice": choice,
                    "correct": correct,
                    "points": points,
                    "answered_at": now,
                    "week": scoring.iso_week(now, timezone_name),
                },
            ).scalar()
            if inserted is None:  # a concurrent duplicate (double click, Slack retry)
                chosen = conn.execute(
                    select(col(Answer.choice)).where(
                        col(Answer.round_id) == round_id, col(Answer.member_id) == member_id
                    )
                ).scalar_one()
                return AlreadyAnswered(round_id=round_id, chosen=letter(chosen))
            if points:
                conn.execute(statements.add_points(), {"member_id": member_id, "points": points})
            self._schedule_review(conn, row, member_id, question.id, correct, now)
        picked = question.choices[choice]
        return AnswerFeedback(
            round_id=round_id,
            kind=row.kind,
            correct=correct,
            points=points,
            chosen=letter(choice),
            chosen_text=picked.text,
            answer=letter(answer_index),
            answer_text=question.choices[answer_index].text,
            why=picked.why,
            trap=question.trap,
            streak_bonus=bonus,
        )

    def _earlier_run(self, conn: Connection, community_id: int, member_id: int, round_id: int) -> int:
        """Consecutive earlier daily rounds of the community this member answered correctly."""
        outcomes = conn.execute(
            statements.earlier_outcomes(scoring.MAX_STREAK_BONUS),
            {"member_id": member_id, "community_id": community_id, "round_id": round_id},
        ).scalars()
        return scoring.leading_run(outcomes)

    def _schedule_review(
        self, conn: Connection, row: Any, member_id: int, question_id: str, correct: bool, now: datetime
    ) -> None:
        if row.kind != "daily":  # a private round ends with its answer
            conn.execute(update(Round).where(col(Round.id) == row.id).values(closed_at=now))
        if row.kind == "review":
            state = conn.execute(
                select(col(Review.state)).where(
                    col(Review.member_id) == member_id, col(Review.question_id) == question_id
                )
            ).scalar()
            if state is not None:
                state, due = spaced.after_review(state, correct, now)
                conn.execute(
                    update(Review)
                    .where(col(Review.member_id) == member_id, col(Review.question_id) == question_id)
                    .values(state=state, due=due)
                )
                return
        if not correct:  # a first miss starts a review card; an existing card keeps its schedule
            state, due = spaced.first_miss(member_id * 100_000 + (row.id % 100_000), now)
            conn.execute(
                insert_ignoring(conn, Review, ["member_id", "question_id"]).values(
                    member_id=member_id, question_id=question_id, state=state, due=due
                )
            )

    def answer_text(
        self, user: UserRef, channel: ChannelRef, text: str
    ) -> AnswerFeedback | AlreadyAnswered | RoundClosed | Notice | None:
        """A text reply: answers the user's pending practice question, else the channel's open
        daily round. Returns None when the text is not an answer (it is then ignored)."""
        if len(text) > MAX_TEXT:
            raise InvalidInput(f"That message is {len(text):,} characters long; the limit is {MAX_TEXT:,}.")
        looks_like_letter = _LETTER_RE.match(text) is not None
        now = self.now()
        with self.db.read() as conn:
            community = self._find_community(conn, user)
            pending = None
            if community is not None:
                member_id = self._find_member(conn, community.id, user)
                if member_id is not None:
                    pending = conn.execute(
                        select(col(Round.id), col(Round.question_id))
                        .where(
                            col(Round.member_id) == member_id,
                            col(Round.closed_at).is_(None),
                            col(Round.kind) != "daily",
                        )
                        .order_by(col(Round.id).desc())
                        .limit(1)
                    ).first()
                if pending is None:
                    pending = conn.execute(
                        select(col(Round.id), col(Round.question_id))
                        .where(
                            col(Round.community_id) == community.id,
                            col(Round.channel_id) == channel.channel_id,
                            col(Round.kind) == "daily",
                            col(Round.closed_at).is_(None),
                            col(Round.closes_at) > now,
                        )
                        .order_by(col(Round.id).desc())
                        .limit(1)
                    ).first()
        if pending is None:
            if looks_like_letter:
                return Notice("There is no open question here right now; a new one comes with the next daily round.")
            return None
        question = self.bank.get(pending.question_id)
        if question is None:
            return None
        choice = parse_choice(text, [c.text for c in question.choices])
        if choice is None:
            return None
        return self.answer(user, pending.id, choice)

    # -------------------------------------------------------------- close/reveal

    def close_round(self, round_id: int) -> RevealCard | Notice:
        """Close a daily round and return its public reveal, exactly once."""
        now = self.now()
        with self.db.write() as conn:
            closed = conn.execute(
                update(Round)
                .where(col(Round.id) == round_id, col(Round.kind) == "daily", col(Round.closed_at).is_(None))
                .values(closed_at=now)
            ).rowcount
            if not closed:
                exists = conn.execute(
                    select(col(Round.id)).where(col(Round.id) == round_id, col(Round.kind) == "daily")
                ).scalar()
                if exists is None:
                    raise NotFound(f"There is no daily round #{round_id}.")
                return Notice(f"Round #{round_id} was already closed and revealed.")
            return self._reveal(conn, round_id)

    def close_open_in(self, channel: ChannelRef) -> RevealCard | Notice:
        """Close the newest open daily round in a channel (the console's /close)."""
        with self.db.read() as conn:
            community = self._find_community(conn, channel)
            round_id = None
            if community is not None:
                round_id = conn.execute(
                    select(col(Round.id))
                    .where(
                        col(Round.community_id) == community.id,
                        col(Round.channel_id) == channel.channel_id,
                        col(Round.kind) == "daily",
                        col(Round.closed_at).is_(None),
                    )
                    .order_by(col(Round.id).desc())
                    .limit(1)
                ).scalar()
        if round_id is None:
            return Notice("There is no open daily round in this channel to close.")
        return self.close_round(round_id)

    def close_due(self, community: CommunityRef | None = None) -> list[RevealCard]:
        """Close every daily round whose answer window has ended (in one community, or in
        all); each reveal once."""
        now = self.now()
        with self.db.read() as conn:
            query = select(col(Round.id)).where(
                col(Round.kind) == "daily", col(Round.closed_at).is_(None), col(Round.closes_at) <= now
            )
            if community is not None:
                config = self._find_community(conn, community)
                if config is None:
                    return []
                query = query.where(col(Round.community_id) == config.id)
            due = conn.execute(query.order_by(col(Round.id))).scalars().all()
        cards = []
        for round_id in due:
            card = self.close_round(cast(int, round_id))
            if isinstance(card, RevealCard):
                cards.append(card)
        return cards

    def next_close(self, community: CommunityRef) -> datetime | None:
        """When the community's earliest open daily round closes (for the scheduler), if any."""
        with self.db.read() as conn:
            config = self._find_community(conn, community)
            if config is None:
                return None
            moment = conn.execute(
                select(func.min(col(Round.closes_at))).where(
                    col(Round.community_id) == config.id, col(Round.kind) == "daily", col(Round.closed_at).is_(None)
                )
            ).scalar()
        if moment is None:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

    def _reveal(self, conn: Connection, round_id: int) -> RevealCard:
        row = conn.execute(select(Round).where(col(Round.id) == round_id)).one()
        question = self._question(row.question_id)
        counts = dict(
            conn.execute(
                select(col(Answer.choice), func.count())
                .where(col(Answer.round_id) == round_id)
                .group_by(col(Answer.choice))
            ).all()
        )
        answer_index = question.answer_index
        return RevealCard(
            round_id=round_id,
            question_id=question.id,
            prompt=question.prompt,
            answer=letter(answer_index),
            answer_text=question.choices[answer_index].text,
            choices=tuple(
                ChoiceReveal(letter(i), c.text, c.correct, c.why, int(counts.get(i, 0)))
                for i, c in enumerate(question.choices)
            ),
            explain=question.explain,
            trap=question.trap,
            refs=question.refs,
            channel_id=row.channel_id,
            answered=sum(int(v) for v in counts.values()),
        )

    # ------------------------------------------------------- practice, review

    def quiz(self, user: UserRef, channel: ChannelRef, topic: str | None = None) -> QuestionCard:
        """A private practice question, preferring ones this user has not seen."""
        if topic is not None:
            topic = topic.strip().lower()
            if topic not in TOPICS:
                raise InvalidInput(f"Unknown topic '{topic[:40]}'. Topics: {', '.join(TOPICS)}.")
        pool = [q for q in self.bank.questions if topic is None or q.topic == topic]
        if not pool:
            raise NotFound(f"The bank has no questions on {topic} yet.")
        now = self.now()
        with self.db.write() as conn:
            community = self._community(conn, user)
            member_id = self._member(conn, community.id, user)
            seen = dict(
                conn.execute(
                    select(col(Round.question_id), func.count())
                    .join(Answer, col(Answer.round_id) == col(Round.id))
                    .where(col(Answer.member_id) == member_id)
                    .group_by(col(Round.question_id))
                ).all()
            )
            salt = f"{member_id}:{now.isoformat()}"
            question = min(
                pool,
                key=lambda q: (seen.get(q.id, 0), hashlib.sha256(f"{salt}:{q.id}".encode()).hexdigest()),
            )
            return self._private_round(conn, community.id, member_id, channel, question, "practice", now)

    def review(self, user: UserRef, channel: ChannelRef) -> QuestionCard | NothingDue:
        """The user's most overdue missed question, or when the next one is due."""
        now = self.now()
        with self.db.write() as conn:
            community = self._community(conn, user)
            member_id = self._member(conn, community.id, user)
            rows = conn.execute(
                select(col(Review.question_id), col(Review.due))
                .where(col(Review.member_id) == member_id)
                .order_by(col(Review.due))
            ).all()
            for question_id, due in rows:
                question = self.bank.get(question_id)
                if question is None:
                    continue
                if due > now:
                    return NothingDue(next_due=due)
                return self._private_round(conn, community.id, member_id, channel, question, "review", now)
            return NothingDue(next_due=None)

    def _private_round(
        self,
        conn: Connection,
        community_id: int,
        member_id: int,
        channel: ChannelRef,
        question: Question,
        kind: RoundKind,
        now: datetime,
    ) -> QuestionCard:
        # A new private question replaces one left unanswered.
        conn.execute(
            update(Round)
            .where(col(Round.member_id) == member_id, col(Round.closed_at).is_(None), col(Round.kind) != "daily")
            .values(closed_at=now)
        )
        round_id = conn.execute(
            statements.ROUNDS.insert()
            .values(
                community_id=community_id,
                channel_id=channel.channel_id,
                question_id=question.id,
                kind=kind,
                member_id=member_id,
                opened_at=now,
            )
            .returning(statements.ROUNDS.c.id)
        ).scalar_one()
        row = conn.execute(select(Round).where(col(Round.id) == round_id)).one()
        return self._card(row, question)

    # ---------------------------------------------------------- scores, boards

    def score(self, user: UserRef) -> ScoreCard:
        now = self.now()
        with self.db.read() as conn:
            community = self._find_community(conn, user)
            tz = community.timezone if community else self.default_timezone
            week = scoring.iso_week(now, tz)
            member_id = self._find_member(conn, community.id, user) if community else None
            if community is None or member_id is None:
                empty = StatsLine(0, 0)
                return ScoreCard(clean_name(user.display_name), week, 0, None, 0, empty, empty, 0, 0, 0)
            stats = {
                (kind, bool(correct)): int(count)
                for kind, correct, count in conn.execute(
                    select(col(Answer.kind), col(Answer.correct), func.count())
                    .where(col(Answer.member_id) == member_id)
                    .group_by(col(Answer.kind), col(Answer.correct))
                ).all()
            }
            total = conn.execute(select(col(Member.points_total)).where(col(Member.id) == member_id)).scalar_one()
            board = self._board(conn, community.id, week)
            streak, best = self._streaks(conn, community.id, member_id, now)
            due = conn.execute(
                select(func.count())
                .select_from(Review)
                .where(col(Review.member_id) == member_id, col(Review.due) <= now)
            ).scalar_one()
        name = clean_name(user.display_name)
        mine = next((row for key, row in board if key == member_id), None)

        def line(kinds: tuple[str, ...]) -> StatsLine:
            answered = sum(stats.get((k, c), 0) for k in kinds for c in (True, False))
            return StatsLine(answered, sum(stats.get((k, True), 0) for k in kinds))

        return ScoreCard(
            user=name,
            week=week,
            week_points=mine.points if mine else 0,
            week_rank=mine.rank if mine else None,
            total_points=int(total),
            daily=line(("daily",)),
            practice=line(("practice", "review")),
            streak=streak,
            best_streak=best,
            reviews_due=int(due),
        )

    def _streaks(self, conn: Connection, community_id: int, member_id: int, now: datetime) -> tuple[int, int]:
        rows = conn.execute(
            select(col(Round.closed_at), col(Round.closes_at), col(Answer.correct))
            .select_from(Round)
            .outerjoin(Answer, and_(col(Answer.round_id) == col(Round.id), col(Answer.member_id) == member_id))
            .where(col(Round.community_id) == community_id, col(Round.kind) == "daily")
            .order_by(col(Round.id).desc())
        ).all()
        outcomes: list[bool | None] = []
        for closed_at, closes_at, correct in rows:
            still_open = closed_at is None and (closes_at is None or closes_at > now)
            if still_open and correct is None and not outcomes:
                continue  # an open round not yet answered does not break the streak
            outcomes.append(correct)
        return scoring.leading_run(outcomes), scoring.best_run(reversed(outcomes))

    def _board(self, conn: Connection, community_id: int, week: str | None) -> list[tuple[int, LeaderboardRow]]:
        """Members with points, ranked: in one ISO week (one GROUP BY over that week's answers,
        on a covering index), or all time (the running totals kept on each member)."""
        if week is None:
            query = select(col(Member.display_name), col(Member.points_total), col(Member.id)).where(
                col(Member.community_id) == community_id, col(Member.points_total) > 0
            )
        else:
            query = (
                select(col(Member.display_name), func.sum(col(Answer.points)).label("points"), col(Answer.member_id))
                .join(Member, col(Member.id) == col(Answer.member_id))
                .where(col(Answer.community_id) == community_id, col(Answer.week) == week)
                .group_by(col(Answer.member_id), col(Member.display_name))
                .having(func.sum(col(Answer.points)) > 0)
            )
        return scoring.rank_rows(
            [(name, int(points), cast(int, mid)) for name, points, mid in conn.execute(query).all()]
        )

    def leaderboard(self, community: CommunityRef, week: str | None = None, all_time: bool = False) -> LeaderboardCard:
        """The weekly (ISO week in the community's zone; default this week) or all-time board."""
        if week is not None:
            try:
                week = scoring.parse_week(week)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        with self.db.read() as conn:
            config = self._find_community(conn, community)
            tz = config.timezone if config else self.default_timezone
            scope = "all" if all_time else (week or scoring.iso_week(self.now(), tz))
            board = [] if config is None else self._board(conn, config.id, None if all_time else scope)
        return LeaderboardCard(community=community.community_id, scope=scope, rows=tuple(r for _, r in board))

    def weekly_post(self, community: CommunityRef, week: str) -> LeaderboardCard | None:
        """The leaderboard to post for `week`, or None when it was already posted."""
        with self.db.write() as conn:
            config = self._community(conn, community)
            claimed = conn.execute(
                insert_ignoring(conn, LeaderboardPost, ["community_id", "week"])
                .values(community_id=config.id, week=week, posted_at=self.now())
                .returning(col(LeaderboardPost.id))
            ).scalar()
            if claimed is None:
                return None
            board = self._board(conn, config.id, week)
        return LeaderboardCard(community=community.community_id, scope=week, rows=tuple(r for _, r in board))

    # --------------------------------------------------------- forget, config

    def forget_me(self, user: UserRef, confirm: bool = False) -> ConfirmForget | Forgotten:
        """Delete a user's data in this community, only once they confirm."""
        name = clean_name(user.display_name)
        with self.db.write() as conn:
            community = self._find_community(conn, user)
            member_id = self._find_member(conn, community.id, user) if community else None
            answers = 0
            if member_id is not None:
                answers = conn.execute(
                    select(func.count()).select_from(Answer).where(col(Answer.member_id) == member_id)
                ).scalar_one()
            if not confirm:
                return ConfirmForget(user=name, answers=int(answers))
            if member_id is not None:
                conn.execute(delete(Answer).where(col(Answer.member_id) == member_id))
                conn.execute(delete(Review).where(col(Review.member_id) == member_id))
                conn.execute(delete(Round).where(col(Round.member_id) == member_id))
                conn.execute(delete(Member).where(col(Member.id) == member_id))
        log.info("forgot a member of %s/%s (%s answers)", user.platform, user.community_id, answers)
        return Forgotten(user=name, answers_deleted=int(answers))

    def config(self, community: CommunityRef, key: str | None = None, value: str | None = None) -> ConfigCard:
        """Show the community's settings, or change one of them."""
        with self.db.write() as conn:
            current = self._community(conn, community)
            if key is None:
                return ConfigCard(community=current.name, settings=current.as_pairs())
            column, stored = self._config_value(key, value)
            conn.execute(update(Community).where(col(Community.id) == current.id).values({column: stored}))
            row = conn.execute(select(Community).where(col(Community.id) == current.id)).one()
        updated = _config_of(row)
        return ConfigCard(community=updated.name, settings=updated.as_pairs(), changed=key)

    def _config_value(self, key: str, value: str | None) -> tuple[str, Any]:
        key = key.strip().lower().replace("-", "_")
        if key not in CONFIG_KEYS:
            raise InvalidInput(f"Unknown setting '{key[:40]}'. Settings: {', '.join(CONFIG_KEYS)}.")
        text = (value or "").strip()
        if not text:
            raise InvalidInput(f"Give a value: /config {key} VALUE.")
        if key == "channel":
            return "channel_id", text[:64]
        if key == "timezone":
            try:
                ZoneInfo(text)
            except (ZoneInfoNotFoundError, ValueError):
                raise InvalidInput(f"'{text[:60]}' is not an IANA time zone such as Europe/Berlin.") from None
            return "timezone", text
        if key == "daily_time":
            match = _TIME_RE.match(text)
            if not match:
                raise InvalidInput(f"'{text[:20]}' is not a time of day like 09:00.")
            return "daily_time", time(int(match[1]), int(match[2])).strftime("%H:%M")
        if key == "window_hours":
            if not text.isdigit() or not 1 <= int(text) <= 48:
                raise InvalidInput("window_hours must be a whole number of hours from 1 to 48.")
            return "window_hours", int(text)
        if key == "topics":
            if text.lower() == "all":
                return "topics", ""
            topics = [t.strip().lower() for t in text.split(",") if t.strip()]
            unknown = [t for t in topics if t not in TOPICS]
            if unknown:
                raise InvalidInput(f"Unknown topic '{unknown[0][:40]}'. Topics: {', '.join(TOPICS)}.")
            return "topics", ",".join(dict.fromkeys(topics))
        if text.lower() in ("on", "true", "yes", "1"):
            return "paused", True
        if text.lower() in ("off", "false", "no", "0"):
            return "paused", False
        raise InvalidInput("paused must be on or off.")

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        """Every community the bot knows, with its settings (for the scheduler)."""
        with self.db.read() as conn:
            rows = conn.execute(select(Community).order_by(col(Community.id))).all()
        return [(CommunityRef(r.platform, r.external_id), _config_of(r)) for r in rows]

    def export_rows(self, community: CommunityRef) -> list[dict[str, Any]]:
        """Every answer in a community, one dict each (for CSV export)."""
        with self.db.read() as conn:
            config = self._find_community(conn, community)
            if config is None:
                raise NotFound(f"No community '{community.community_id}' on {community.platform}.")
            rows = conn.execute(
                select(
                    col(Answer.answered_at),
                    col(Answer.week),
                    col(Member.user_id),
                    col(Member.display_name),
                    col(Answer.kind),
                    col(Round.question_id),
                    col(Answer.choice),
                    col(Answer.correct),
                    col(Answer.points),
                )
                .join(Member, col(Member.id) == col(Answer.member_id))
                .join(Round, col(Round.id) == col(Answer.round_id))
                .where(col(Answer.community_id) == config.id)
                .order_by(col(Answer.id))
            ).all()
        return [
            {
                "answered_at": r.answered_at.isoformat(),
                "week": r.week,
                "user_id": r.user_id,
                "user": r.display_name,
                "kind": r.kind,
                "question": r.question_id,
                "choice": letter(r.choice),
                "correct": r.correct,
                "points": r.points,
            }
            for r in rows
        ]
