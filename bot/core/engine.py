"""StudyEngine: one method per use case; plain values in, cards out. It never sends anything:
what must be posted in a channel is written to the outbox in the same unit of work as the
decision, and a platform's deliverer sends it (bot/delivery.py)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from bot.core import choices as codec
from bot.core import pages, scoring
from bot.core import review as spaced
from bot.core.bank import TOPICS, Bank, Question
from bot.core.community import CONFIG_ALIASES, CONFIG_KEYS, CommunityConfig, parse_setting
from bot.core.demo_request import parse_demo
from bot.core.demo_result import outcome_card, progress_card
from bot.core.errors import InvalidInput, NotFound
from bot.core.item_analysis import UNANSWERED, ItemStats, analyse
from bot.core.ports import Links, Store, StoreTx
from bot.core.practice import PracticeMixin, PracticePolicy, SuggestionPolicy
from bot.core.records import DemoJobRecord, NewAnswer, OutboxRecord, RoundRecord
from bot.core.text import MAX_TEXT, clean_name, looks_like_letter, parse_choice
from bot.core.values import (
    AdminPage,
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    AnswerWithHome,
    BankPage,
    ChannelRef,
    ChoiceReveal,
    CommunityRef,
    ConfigCard,
    ConfirmForget,
    Delivery,
    DemoProgressCard,
    DemoQueued,
    DemosPage,
    Forgotten,
    HomeCard,
    LeaderboardCard,
    LeaderboardPage,
    MemberPage,
    NothingDue,
    Notice,
    Posted,
    QuestionCard,
    RevealCard,
    RoundClosed,
    RoundKind,
    ScoreCard,
    StatsLine,
    SuggestionDecided,
    SuggestionQueue,
    UserRef,
    WebCommunity,
    letter,
)

log = logging.getLogger(__name__)

__all__ = [
    "CONFIG_KEYS",
    "MAX_TEXT",
    "CommunityConfig",
    "DeliveryPolicy",
    "DemoPolicy",
    "StudyEngine",
    "clean_name",
    "utcnow",
]

LOW_BANK = 7
FLAG_MEMO = timedelta(minutes=10)  # how long /config, the weekly post and the admin page reuse the item analysis
# How long a platform event id is remembered (Slack retries within minutes).
EVENT_MEMORY = timedelta(days=1)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


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


@dataclass(frozen=True)
class DemoPolicy:
    """Who may queue a demo: one per member every `cooldown_s`, at most `max_waiting` queued
    per community (one runs at a time per community)."""

    cooldown_s: float = 600.0
    max_waiting: int = 5


def _duration(span: timedelta) -> str:
    seconds = max(1, int(span.total_seconds()))
    if seconds < 90:
        return f"{seconds} s"
    return f"{round(seconds / 60)} min"


class StudyEngine(PracticeMixin):
    """The study bot's rules. Each public method is one use case and one unit of work."""

    def __init__(
        self,
        store: Store,
        bank: Bank,
        clock: Callable[[], datetime] = utcnow,
        default_timezone: str = "UTC",
        default_window_hours: int = 12,
        delivery: DeliveryPolicy | None = None,
        forget_salt: str = "studybot",
        demos: DemoPolicy | None = None,
        links: Links | None = None,
        practice: PracticePolicy | None = None,
        suggestions: SuggestionPolicy | None = None,
    ) -> None:
        self.store = store
        self.bank = bank
        self.clock = clock
        self.default_timezone = default_timezone
        self.default_window_hours = default_window_hours
        self.delivery = delivery or DeliveryPolicy()
        self.forget_salt = forget_salt
        self.demos = demos or DemoPolicy()
        self.links = links  # signs links to the web page (/score, /config), when it has a URL
        self.practice = practice or PracticePolicy()
        self.suggestion_policy = suggestions or SuggestionPolicy()
        self._member_questions: dict[str, tuple[Question, int]] = {}  # approved members' questions
        self._flag_memo: dict[int, tuple[datetime, list[ItemStats]]] = {}

    # ----------------------------------------------------------------- helpers

    def now(self) -> datetime:
        moment = self.clock()
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

    def _community(self, tx: StoreTx, ref: CommunityRef | UserRef | ChannelRef) -> CommunityConfig:
        """The community's settings, creating it with the defaults on first use."""
        return tx.ensure_community(
            ref.platform,
            ref.community_id,
            clean_name(ref.community_id),
            self.default_timezone,
            self.default_window_hours,
            self.now(),
        )

    @staticmethod
    def _community_filter(tx: StoreTx, community: CommunityRef | None) -> int | None:
        """For queries over one community or all: None means every community; a community
        never seen gets an id no row has (-1), so its query finds nothing."""
        if community is None:
            return None
        config = tx.find_community(community.platform, community.community_id)
        return -1 if config is None else config.id

    def _member(self, tx: StoreTx, community_id: int, user: UserRef) -> int:
        return tx.upsert_member(community_id, user.user_id, clean_name(user.display_name), self.now())

    def _question(self, question_id: str, tx: StoreTx | None = None) -> Question:
        question = self._find(question_id, tx)
        if question is None:
            raise NotFound("That question is no longer in the bank, so it cannot be answered.")
        return question

    @staticmethod
    def _order(round_row: RoundRecord, question: Question) -> tuple[int, ...]:
        return codec.parse_order(round_row.choice_order, len(question.choices))

    def _card(self, round_row: RoundRecord, question: Question, admin_note: str | None = None) -> QuestionCard:
        order = self._order(round_row, question)
        return QuestionCard(
            round_id=round_row.id,
            question_id=question.id,
            kind=round_row.kind,
            topic=question.topic,
            difficulty=question.difficulty,
            prompt=question.prompt,
            choices=tuple(question.choices[i].text for i in order),
            closes_at=round_row.closes_at,
            late=round_row.late,
            admin_note=admin_note,
        )

    def _forget_key(self, user: UserRef) -> str:
        text = f"{self.forget_salt}|{user.platform}|{user.community_id}|{user.user_id}"
        return hashlib.sha256(text.encode()).hexdigest()

    # ------------------------------------------------------------- daily round

    def open_daily(self, channel: ChannelRef, late: bool = False) -> QuestionCard | AlreadyOpen:
        """Open today's round in `channel` (local day of the community), at most once, and
        queue its post."""
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, channel)
            day = scoring.local_date(now, community.timezone).isoformat()
            key = f"{community.id}|{channel.channel_id}|{day}"
            existing = tx.daily_round_id(key)
            if existing is not None:
                return AlreadyOpen(round_id=existing, local_date=day)
            question, unasked_left = self._next_daily_question(tx, community)
            row = tx.insert_daily(
                community_id=community.id,
                channel_id=channel.channel_id,
                question_id=question.id,
                local_date=day,
                daily_key=key,
                opened_at=now,
                closes_at=now + timedelta(hours=community.window_hours),
                late=late,
                choice_order=codec.format_order(codec.draw_order(len(question.choices))),
            )
            if row is None:  # another process opened it between our read and write
                return AlreadyOpen(round_id=tx.daily_round_id(key) or 0, local_date=day)
            tx.enqueue(community.id, channel.channel_id, "question", str(row.id), now)
        note = None
        if unasked_left < LOW_BANK:
            note = (
                f"Questions not yet asked in this community: {unasked_left}. After that the least "
                "recently asked come back; add questions to the bank to keep rounds fresh."
            )
        log.info("opened daily round %s (%s) in %s", row.id, question.id, channel)
        return self._card(row, question, admin_note=note)

    def _next_daily_question(self, tx: StoreTx, community: CommunityConfig) -> tuple[Question, int]:
        own = self._community_questions(tx, community.id)
        pool = [q for q in [*self.bank.questions, *own] if not community.topics or q.topic in community.topics]
        if not pool:
            pool = [*self.bank.questions, *own]
        last_asked = tx.daily_last_asked(community.id)
        fresh_own = [q for q in own if q in pool and q.id not in last_asked]
        if fresh_own:  # a member's question just approved comes in the next round
            return fresh_own[0], sum(1 for q in pool if q.id not in last_asked) - 1

        def spread(q: Question) -> str:  # a stable order that differs between communities
            return hashlib.sha256(f"{community.id}:{q.id}".encode()).hexdigest()

        unasked = sorted((q for q in pool if q.id not in last_asked), key=spread)
        if unasked:
            return unasked[0], len(unasked) - 1
        return min(pool, key=lambda q: (last_asked[q.id], spread(q))), 0

    # ------------------------------------------------------------------ answers

    def answer(self, user: UserRef, round_id: int, choice: int) -> AnswerFeedback | AlreadyAnswered | RoundClosed:
        """Score a user's first answer to a round (`choice`: the index they were shown);
        later answers change nothing."""
        now = self.now()
        # Read first, without the write lock: repeats (double clicks, retries) and answers to
        # closed or foreign rounds end here, so only a first answer ever queues to write.
        with self.store.read() as tx:
            found = tx.answer_context(round_id, user.user_id, user.platform, user.community_id, self._forget_key(user))
        if found is None:
            raise NotFound(f"There is no question #{round_id} in this community.")
        row = found.round
        if row.kind != "daily" and row.member_id != found.known_member:
            raise NotFound(f"Question #{round_id} was someone else's practice question.")
        if found.previous is not None:
            return AlreadyAnswered(round_id=round_id, chosen=letter(found.previous))
        if found.forgotten:  # their first answer stays final though its record is gone
            return AlreadyAnswered(round_id=round_id, chosen=None)
        question = self._question(row.question_id)
        if not 0 <= choice < len(question.choices):
            raise InvalidInput(f"Choose one of {', '.join(letter(i) for i in range(len(question.choices)))}.")
        order = self._order(row, question)
        shown_answer = order.index(question.answer_index)
        if row.closed_at is not None or (row.closes_at is not None and row.closes_at <= now):
            return RoundClosed(round_id=round_id, answer=letter(shown_answer))
        correct = choice == shown_answer
        # Everything that needs no database is done before queueing for the writer.
        name = clean_name(user.display_name)
        week = scoring.iso_week(now, found.timezone)
        miss_card = None if correct else spaced.first_miss_later(now)

        def write(tx: StoreTx) -> tuple[int, int] | AlreadyAnswered:
            member_id = tx.upsert_member(row.community_id, user.user_id, name, now)
            bonus = 0
            points = 0
            if row.kind == "daily" and correct:
                run = scoring.leading_run(
                    tx.earlier_outcomes(row.community_id, member_id, round_id, scoring.MAX_STREAK_BONUS)
                )
                points = scoring.daily_points(True, run)
                bonus = points - scoring.BASE_POINTS
            stored = tx.insert_answer(
                NewAnswer(
                    round_id=round_id,
                    member_id=member_id,
                    community_id=row.community_id,
                    kind=row.kind,
                    choice=choice,
                    correct=correct,
                    points=points,
                    answered_at=now,
                    week=week,
                )
            )
            if not stored:  # a concurrent duplicate (double click, Slack retry)
                chosen = tx.answer_choice(round_id, member_id)
                return AlreadyAnswered(round_id=round_id, chosen=letter(chosen or 0))
            self._schedule_review(tx, row, member_id, question.id, correct, now, miss_card)
            self._rate(tx, member_id, question, correct)
            return points, bonus

        # Concurrent first answers share one transaction on SQLite (group commit), each in
        # its own savepoint; the result comes back once it is committed.
        written = self.store.grouped(write)
        if isinstance(written, AlreadyAnswered):
            return written
        points, bonus = written
        picked = question.choices[order[choice]]
        return AnswerFeedback(
            round_id=round_id,
            kind=row.kind,
            correct=correct,
            points=points,
            chosen=letter(choice),
            chosen_text=picked.text,
            answer=letter(shown_answer),
            answer_text=question.choices[question.answer_index].text,
            why=picked.why,
            trap=question.trap,
            streak_bonus=bonus,
        )

    def answer_button(self, user: UserRef, custom_id: str) -> AnswerFeedback | AlreadyAnswered | RoundClosed:
        """A click on an answer button: its id says the round and the shown choice."""
        decoded = codec.decode_answer(custom_id)
        if decoded is None:
            raise InvalidInput("That button is not one of this bot's answer buttons.")
        return self.answer(user, *decoded)

    def _schedule_review(
        self,
        tx: StoreTx,
        row: RoundRecord,
        member_id: int,
        question_id: str,
        correct: bool,
        now: datetime,
        miss_card: Callable[[int], tuple[str, datetime]] | None = None,
    ) -> None:
        if row.kind != "daily":  # a private round ends with its answer
            tx.close_private(row.id, now)
        if row.kind == "review":
            state = tx.review_state(member_id, question_id)
            if state is not None:
                new_state, due = spaced.after_review(state, correct, now)
                tx.update_review(member_id, question_id, new_state, due)
                return
        if not correct:  # a first miss starts a review card; an existing card keeps its schedule
            card_id = member_id * 100_000 + (row.id % 100_000)
            new_state, due = miss_card(card_id) if miss_card else spaced.first_miss(card_id, now)
            tx.add_review(member_id, question_id, new_state, due)

    def answer_text(
        self, user: UserRef, channel: ChannelRef, text: str
    ) -> AnswerFeedback | AlreadyAnswered | RoundClosed | Notice | None:
        """A text reply: answers the user's pending practice question, else the channel's open
        daily round. Returns None when the text is not an answer (it is then ignored)."""
        if len(text) > MAX_TEXT:
            raise InvalidInput(f"That message is {len(text):,} characters long; the limit is {MAX_TEXT:,}.")
        now = self.now()
        with self.store.read() as tx:
            community = tx.find_community(user.platform, user.community_id)
            pending = None
            if community is not None:
                member_id = tx.find_member(community.id, user.user_id)
                if member_id is not None:
                    pending = tx.pending_private(member_id)
                if pending is None:
                    pending = tx.open_daily_in(community.id, channel.channel_id, now)
        if pending is None:
            if looks_like_letter(text):
                return Notice("There is no open question here right now; a new one comes with the next daily round.")
            return None
        question = self._find(pending.question_id)
        if question is None:
            return None
        shown = [question.choices[i].text for i in self._order(pending, question)]
        choice = parse_choice(text, shown)
        if choice is None:
            return None
        return self.answer(user, pending.id, choice)

    def answer_reply(
        self, user: UserRef, question_ref: str, text: str, event_id: str | None = None
    ) -> AnswerFeedback | AlreadyAnswered | RoundClosed | None:
        """A reply in the thread of a daily round's question post (`question_ref`: the
        platform's reference of that post, as kept on the round, e.g. Slack's
        "C123:1700000000.000100") answers THAT round, whatever practice question the member
        has pending. None when the thread is not a round's or the text is not an answer.

        `event_id` (the platform's id of the event) makes a redelivery harmless even after a
        restart: an answer-like event seen before returns None. It is noted just before the
        answer, so an event whose handling dies in between is lost, never answered twice."""
        if len(text) > MAX_TEXT:
            raise InvalidInput(f"That message is {len(text):,} characters long; the limit is {MAX_TEXT:,}.")
        with self.store.read() as tx:
            community = tx.find_community(user.platform, user.community_id)
            row = None if community is None else tx.daily_by_ref(community.id, question_ref)
        if row is None:
            return None
        question = self._find(row.question_id)
        if question is None:
            return None
        choice = parse_choice(text, [question.choices[i].text for i in self._order(row, question)])
        if choice is None:
            return None
        if event_id is not None:
            with self.store.write() as tx:
                if not tx.claim_event(user.platform, event_id, self.now(), EVENT_MEMORY):
                    log.info("%s event %s again: already handled", user.platform, event_id)
                    return None
        return self.answer(user, row.id, choice)

    def answer_with_home(
        self,
        user: UserRef,
        custom_id: str | None = None,
        *,
        thread: str | None = None,
        text: str = "",
        event_id: str | None = None,
    ) -> AnswerWithHome | None:
        """An answer and the member's refreshed Home in one call (Slack's App Home after each
        answer, one engine call per event): a button's `custom_id` (as `answer_button`), or,
        with `thread`, `text` replied in that question post's thread (as `answer_reply`; None
        when it is not an answer). The HomeCard comes only with a scored first answer; reading
        it happens after the answer is committed, so a failure there is logged and the
        feedback still comes back (with no Home)."""
        if thread is not None:
            feedback = self.answer_reply(user, thread, text, event_id)
        elif custom_id is not None:
            feedback = self.answer_button(user, custom_id)
        else:
            raise InvalidInput("That is neither an answer button nor a reply in a question's thread.")
        if feedback is None:
            return None
        if not isinstance(feedback, AnswerFeedback):
            return AnswerWithHome(feedback, None)
        try:
            home: HomeCard | None = self.home(user)
        except Exception:
            log.exception("the Home of %s after answering round %s", user.user_id, feedback.round_id)
            home = None
        return AnswerWithHome(feedback, home)

    # -------------------------------------------------------------- close/reveal

    def close_round(self, round_id: int) -> RevealCard | Notice:
        """Close a daily round, queue its public reveal and return it, exactly once."""
        now = self.now()
        with self.store.write() as tx:
            if not tx.close_daily(round_id, now):
                if not tx.is_daily(round_id):
                    raise NotFound(f"There is no daily round #{round_id}.")
                return Notice(f"Round #{round_id} was already closed and revealed.")
            card = self._reveal(tx, round_id)
            row = tx.get_round(round_id)
            tx.enqueue(row.community_id, row.channel_id, "reveal", str(round_id), now)
        return card

    def close_open_in(self, channel: ChannelRef) -> RevealCard | Notice:
        """Close the newest open daily round in a channel (the console's /close)."""
        with self.store.read() as tx:
            community = tx.find_community(channel.platform, channel.community_id)
            found = None if community is None else tx.open_daily_in(community.id, channel.channel_id, None)
        if found is None:
            return Notice("There is no open daily round in this channel to close.")
        return self.close_round(found.id)

    def close_due(self, community: CommunityRef | None = None) -> list[RevealCard]:
        """Close every daily round whose answer window has ended (in one community, or in
        all); each reveal once."""
        now = self.now()
        with self.store.read() as tx:
            due = tx.due_daily_rounds(self._community_filter(tx, community), now)
        cards = []
        for round_id in due:
            card = self.close_round(round_id)
            if isinstance(card, RevealCard):
                cards.append(card)
        return cards

    def next_close(self, community: CommunityRef) -> datetime | None:
        """When the community's earliest open daily round closes (for the scheduler), if any."""
        with self.store.read() as tx:
            config = tx.find_community(community.platform, community.community_id)
            moment = None if config is None else tx.next_close(config.id)
        if moment is None:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)

    def _reveal(self, tx: StoreTx, round_id: int) -> RevealCard:
        row = tx.get_round(round_id)
        question = self._question(row.question_id, tx)
        order = self._order(row, question)
        counts = tx.choice_counts(round_id)
        shown_answer = order.index(question.answer_index)
        question_ref = row.message_ref or tx.outbox_ref(row.community_id, "question", str(round_id))
        return RevealCard(
            round_id=round_id,
            question_id=question.id,
            prompt=question.prompt,
            answer=letter(shown_answer),
            answer_text=question.choices[question.answer_index].text,
            choices=tuple(
                ChoiceReveal(
                    letter(shown),
                    question.choices[index].text,
                    question.choices[index].correct,
                    question.choices[index].why,
                    counts.get(shown, 0),
                )
                for shown, index in enumerate(order)
            ),
            explain=question.explain,
            trap=question.trap,
            refs=question.refs,
            channel_id=row.channel_id,
            answered=sum(counts.values()),
            question_ref=question_ref,
            author=self._author(tx, question.id),
        )

    # ------------------------------------------------------- practice, review

    def quiz(self, user: UserRef, channel: ChannelRef, topic: str | None = None) -> QuestionCard:
        """A private practice question at the member's level: without a topic, a review due
        first, else the question whose predicted chance of a right answer is nearest the
        target (PracticePolicy), never one they saw in the last 30 days; with a topic, the
        same within it, falling back to the least seen."""
        if topic is not None:
            topic = topic.strip().lower()
            if topic not in TOPICS:
                raise InvalidInput(f"Unknown topic '{topic[:40]}'. Topics: {', '.join(TOPICS)}.")
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, user)
            pool = [q for q in self._pool(tx, community.id) if topic is None or q.topic == topic]
            if not pool:
                raise NotFound(f"The bank has no questions on {topic} yet.")
            member_id = self._member(tx, community.id, user)
            picked = self._adaptive_pick(tx, community, member_id, topic, now)
            if picked is not None:
                return self._private_round(tx, community.id, member_id, channel, picked[0], picked[1], now)
            if topic is None:
                raise NotFound(
                    f"You have seen every question here in the last {self.practice.fresh_days} days: "
                    "try /review, or a topic with /quiz TOPIC."
                )
            seen = tx.seen_counts(member_id)
            salt = f"{member_id}:{now.isoformat()}"
            question = min(
                pool,
                key=lambda q: (seen.get(q.id, 0), hashlib.sha256(f"{salt}:{q.id}".encode()).hexdigest()),
            )
            return self._private_round(tx, community.id, member_id, channel, question, "practice", now)

    def review(self, user: UserRef, channel: ChannelRef) -> QuestionCard | NothingDue:
        """The user's most overdue missed question, or when the next one is due."""
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, user)
            member_id = self._member(tx, community.id, user)
            for question_id, due in tx.reviews(member_id):
                question = self._find(question_id, tx)
                if question is None:
                    continue
                if due > now:
                    return NothingDue(next_due=due)
                return self._private_round(tx, community.id, member_id, channel, question, "review", now)
            return NothingDue(next_due=None)

    def _private_round(
        self,
        tx: StoreTx,
        community_id: int,
        member_id: int,
        channel: ChannelRef,
        question: Question,
        kind: RoundKind,
        now: datetime,
    ) -> QuestionCard:
        order = codec.format_order(codec.draw_order(len(question.choices)))
        row = tx.insert_private(community_id, member_id, channel.channel_id, question.id, kind, now, order)
        return self._card(row, question)

    # ---------------------------------------------------------- scores, boards

    def score(self, user: UserRef) -> ScoreCard:
        now = self.now()
        with self.store.read() as tx:
            community = tx.find_community(user.platform, user.community_id)
            member_id = tx.find_member(community.id, user.user_id) if community else None
            return self._score_card(tx, user, community, member_id, now)

    def _score_card(
        self, tx: StoreTx, user: UserRef, community: CommunityConfig | None, member_id: int | None, now: datetime
    ) -> ScoreCard:
        """`score` in a unit of work already open (the member page's), the community and the
        member already found."""
        name = clean_name(user.display_name)
        week = scoring.iso_week(now, community.timezone if community else self.default_timezone)
        if community is None or member_id is None:
            empty = StatsLine(0, 0)
            return ScoreCard(name, week, 0, None, 0, empty, empty, 0, 0, 0)
        stats = tx.answer_stats(member_id)
        total = tx.points_total(member_id)
        mine = tx.week_rank(community.id, week, member_id)  # (points, rank): not the whole board
        streak, best = self._streaks(tx, community.id, member_id, now)
        due = tx.reviews_due(member_id, now)
        levels = self._levels(tx.member_ratings(member_id))

        def line(kinds: tuple[str, ...]) -> StatsLine:
            answered = sum(stats.get((k, c), 0) for k in kinds for c in (True, False))
            return StatsLine(answered, sum(stats.get((k, True), 0) for k in kinds))

        return ScoreCard(
            user=name,
            week=week,
            week_points=mine[0] if mine else 0,
            week_rank=mine[1] if mine else None,
            total_points=total,
            daily=line(("daily",)),
            practice=line(("practice", "review")),
            streak=streak,
            best_streak=best,
            reviews_due=due,
            link=self._member_link(user),
            levels=levels,
        )

    @staticmethod
    def _streaks(tx: StoreTx, community_id: int, member_id: int, now: datetime) -> tuple[int, int]:
        outcomes: list[bool | None] = []
        for closed_at, closes_at, correct in tx.daily_outcomes(community_id, member_id):
            still_open = closed_at is None and (closes_at is None or closes_at > now)
            if still_open and correct is None and not outcomes:
                continue  # an open round not yet answered does not break the streak
            outcomes.append(correct)
        return scoring.leading_run(outcomes), scoring.best_run(reversed(outcomes))

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
            config = tx.find_community(community.platform, community.community_id)
            tz = config.timezone if config else self.default_timezone
            scope = "all" if all_time else (week or scoring.iso_week(self.now(), tz))
            board = [] if config is None else scoring.rank_rows(tx.board(config.id, None if all_time else scope))
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
            if not tx.claim_week(config.id, week, now):
                return None
            board = scoring.rank_rows(tx.board(config.id, week))
            if config.channel_id is not None:
                tx.enqueue(config.id, config.channel_id, "leaderboard", week, now)
            flagged = tuple(stats.question_id for stats in self._flagged(tx, config.id))
        return LeaderboardCard(
            community=community.community_id, scope=week, rows=tuple(r for _, r in board), flagged=flagged
        )

    def _flagged(self, tx: StoreTx, community_id: int) -> list[ItemStats]:
        """The community's questions the item analysis flags (a likely wrong key, too easy, a
        distractor nobody picks), from its members' answers; unanswered ones are not news.
        The analysis reads every answer of the community (seconds at a million), so /config,
        the weekly post and the admin page share its result for FLAG_MEMO."""
        now = self.now()
        memo = self._flag_memo.get(community_id)
        if memo is not None and timedelta(0) <= now - memo[0] < FLAG_MEMO:
            return memo[1]
        found = []
        questions = self._pool(tx, community_id)
        ratings = self.difficulty(questions, tx.question_ratings(q.id for q in questions))
        for stats in analyse(tx.answer_rows(community_id), questions, ratings=ratings):
            flags = tuple(flag for flag in stats.flags if flag != UNANSWERED)
            if flags:
                found.append(replace(stats, flags=flags))
        self._flag_memo[community_id] = (now, found)
        return found

    def _flag_alerts(self, tx: StoreTx, community_id: int) -> tuple[str, ...]:
        flagged = self._flagged_lines(tx, community_id, self.now())
        return tuple(f"Question {line}" for _, lines in flagged for line in lines)

    # --------------------------------------------------------- forget, config

    def forget_me(self, user: UserRef, confirm: bool = False) -> ConfirmForget | Forgotten:
        """Delete a user's data in this community, only once they confirm. A daily round they
        answered that is still open keeps only a salted hash of who they were, so that their
        first answer stays final; it goes when the round closes."""
        name = clean_name(user.display_name)
        now = self.now()
        with self.store.write() as tx:
            community = tx.find_community(user.platform, user.community_id)
            member_id = tx.find_member(community.id, user.user_id) if community else None
            answers = 0 if member_id is None else tx.answer_count(member_id)
            if not confirm:
                return ConfirmForget(user=name, answers=answers)
            if member_id is not None:
                tx.mark_forgotten(tx.open_daily_answered_by(member_id, now), self._forget_key(user))
                tx.delete_member(member_id)
        log.info("forgot a member of %s/%s (%s answers)", user.platform, user.community_id, answers)
        return Forgotten(user=name, answers_deleted=answers)

    def config(self, community: CommunityRef, key: str | None = None, value: str | None = None) -> ConfigCard:
        """Show the community's settings (and what an admin should know), or change one."""
        with self.store.write() as tx:
            current = self._community(tx, community)
            alerts = tuple(self._alert(item) for item in tx.undelivered(current.id))
            alerts += self._flag_alerts(tx, current.id)
            if key is None:
                return ConfigCard(
                    community=current.name,
                    settings=current.as_pairs(),
                    alerts=alerts,
                    link=self._admin_link(community),
                )
            column, stored = parse_setting(key, value)
            updated = tx.update_community(current.id, column, stored)
        return ConfigCard(
            community=updated.name,
            settings=updated.as_pairs(),
            changed=key.strip().lower().replace("-", "_"),
            link=self._admin_link(community),
        )

    def configure(
        self, community: CommunityRef, key: str | None = None, value: str | None = None
    ) -> ConfigCard | QuestionCard | AlreadyOpen | Notice | SuggestionQueue | SuggestionDecided:
        """`/config ...` as typed in chat: show, a setting (short names allowed: time, window),
        pause, resume, post-now (open today's round in the configured channel now), or the
        members' questions: suggestions, approve N, note N TEXT, reject N, remove QUESTION-ID."""
        word = (key or "show").strip().lower()
        if word == "show":
            return self.config(community)
        if word == "pause":
            return self.config(community, "paused", "on")
        if word == "resume":
            return self.config(community, "paused", "off")
        if word in ("post-now", "post_now", "postnow"):
            with self.store.read() as tx:
                current = tx.find_community(community.platform, community.community_id)
            if current is None or current.channel_id is None:
                return Notice("No channel is set for this community: set one with /config channel first.")
            return self.open_daily(ChannelRef(community.platform, community.community_id, current.channel_id))
        if word in ("suggestions", "approve", "reject", "note", "remove"):
            return self._queue_command(community, word, value)
        return self.config(community, CONFIG_ALIASES.get(word, word), value)

    def _queue_command(
        self, community: CommunityRef, word: str, value: str | None
    ) -> SuggestionQueue | SuggestionDecided | Notice:
        """`/config suggestions`, `/config approve|reject N`, `/config note N TEXT`,
        `/config remove QUESTION-ID`."""
        if word == "suggestions":
            return self.suggestion_queue(community)
        target, _, rest = (value or "").strip().partition(" ")
        if word == "remove":
            if not target:
                raise InvalidInput("Say which question: /config remove QUESTION-ID.")
            return self.remove_question(community, target)
        number = target.lstrip("#")
        if not number.isdigit():
            raise InvalidInput(f"Say which suggestion: /config {word} NUMBER{' NOTE' if word == 'note' else ''}.")
        return self.decide_suggestion(community, int(number), word, rest.strip() or None)

    def communities(self) -> list[tuple[CommunityRef, CommunityConfig]]:
        """Every community the bot knows, with its settings (for the scheduler)."""
        with self.store.read() as tx:
            return tx.communities()

    def export_rows(self, community: CommunityRef) -> list[dict[str, object]]:
        """Every answer in a community, one dict each (for CSV export); choices as shown."""
        with self.store.read() as tx:
            config = tx.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(f"No community '{community.community_id}' on {community.platform}.")
            rows = tx.export(config.id)
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

    # ------------------------------------------------------------------- demos

    def request_demo(self, user: UserRef, channel: ChannelRef, text: str) -> DemoQueued:
        """Validate a `/demo ...` request and queue it. Refused, with a sentence: a member
        within their cooldown, a community whose queue is full."""
        request = parse_demo(text)
        now = self.now()
        name = clean_name(user.display_name)
        with self.store.write() as tx:
            community = self._community(tx, user)
            last = tx.last_demo_at(community.id, user.user_id)
            cooldown = timedelta(seconds=self.demos.cooldown_s)
            if last is not None and now - last < cooldown:
                wait = int((last + cooldown - now).total_seconds()) + 1
                raise InvalidInput(
                    f"You asked for a demo {_duration(now - last)} ago; one per member every "
                    f"{_duration(cooldown)}, so the next one is possible in {_duration(timedelta(seconds=wait))}."
                )
            if tx.demos_waiting(community.id) >= self.demos.max_waiting:
                raise InvalidInput(
                    f"{self.demos.max_waiting} demos are already waiting here; ask again when one has finished."
                )
            job_id = tx.add_demo(
                community.id, channel.channel_id, user.user_id, name, request.module, request.args, now
            )
            position = tx.demo_position(job_id, community.id)
        log.info("queued demo %s (%s) for %s at position %s", job_id, request.module, channel, position)
        return DemoQueued(job_id=job_id, position=position, module=request.module, user=name, args=request.args)

    def demo_message(self, job_id: int, message_ref: str) -> None:
        """The platform's reference of the message that announced a queued demo (to edit)."""
        with self.store.write() as tx:
            tx.set_demo_ref(job_id, message_ref)

    def claim_demo(self, worker: str, backend: str) -> DemoJobRecord | None:
        """The next demo to run (one at a time per community), marked running."""
        with self.store.write() as tx:
            return tx.claim_demo(worker, backend, self.now())

    def demo_progress(self, job_id: int, progress: dict[str, object]) -> DemoProgressCard | None:
        """Keep a running demo's progress (`total`, `info`, `rows`); the card shows it."""
        with self.store.write() as tx:
            tx.set_demo_progress(job_id, json.dumps(progress))
            job = tx.get_demo(job_id)
        return None if job is None else progress_card(job)

    def demo_finished(self, job_id: int, result: dict[str, object], chart_path: str | None) -> bool:
        """A demo's result: stored, and its post queued in the channel where it was asked."""
        return self._end_demo(job_id, "done", json.dumps(result), chart_path, None)

    def demo_failed(self, job_id: int, reason: str) -> bool:
        """A demo that did not finish: the reason is stored and said in its channel."""
        return self._end_demo(job_id, "failed", None, None, reason)

    def _end_demo(self, job_id: int, state: str, result: str | None, chart_path: str | None, error: str | None) -> bool:
        now = self.now()
        with self.store.write() as tx:
            if not tx.finish_demo(job_id, state, now, result, chart_path, error):
                return False
            job = tx.get_demo(job_id)
            if job is not None:
                tx.enqueue(job.community_id, job.channel_id, "demo", str(job_id), now)
        log.info("demo %s %s%s", job_id, state, f": {error}" if error else "")
        return True

    def interrupted_demos(self, reason: str = "the bot restarted while it ran; ask again with /demo.") -> int:
        """At start: demos left running by a process that stopped are failed, and their
        askers told in the channel. Returns how many."""
        with self.store.read() as tx:
            running = tx.demo_ids(("running",))
        return sum(1 for job_id in running if self.demo_failed(job_id, reason))

    def demo_jobs(self, limit: int = 50) -> list[DemoJobRecord]:
        """The newest demo jobs, newest first (for `studybot jobs`)."""
        with self.store.read() as tx:
            return tx.recent_demos(limit)

    # ---------------------------------------------------------- platform state

    def platform_state(self, key: str) -> str | None:
        """What an adapter stored under `key` (the command tree's hash last synced), if anything."""
        with self.store.read() as tx:
            return tx.state_get(key)

    def set_platform_state(self, key: str, value: str) -> None:
        with self.store.write() as tx:
            tx.state_put(key[:100], value[:500], self.now())

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
            if not tx.outbox_due(platform, now):
                return []
        with self.store.write() as tx:
            rows = tx.claim_outbox(platform, community, worker, now, lease, limit, serves=serves)
            deliveries = []
            for row in rows:
                try:
                    card = self._outbox_card(tx, row)
                except NotFound as exc:
                    tx.outbox_give_up(row.id, exc.message)
                    log.warning("gave up post %s (%s %s): %s", row.id, row.kind, row.key, exc.message)
                    continue
                channel = ChannelRef(row.platform, row.community, row.channel_id)
                deliveries.append(Delivery(row.id, channel, card, row.attempts))
        return deliveries

    def _outbox_card(self, tx: StoreTx, row: OutboxRecord) -> Posted:
        if row.kind == "demo":
            job = tx.get_demo(int(row.key))
            if job is None:
                raise NotFound(f"Demo #{row.key} is gone.")
            return outcome_card(job)
        if row.kind == "question":
            round_row = tx.get_round(int(row.key))
            return self._card(round_row, self._question(round_row.question_id, tx))
        if row.kind == "reveal":
            return self._reveal(tx, int(row.key))
        board = scoring.rank_rows(tx.board(row.community_id, row.key))
        flagged = tuple(stats.question_id for stats in self._flagged(tx, row.community_id))
        return LeaderboardCard(community=row.community, scope=row.key, rows=tuple(r for _, r in board), flagged=flagged)

    def delivered(self, outbox_id: int, message_ref: str | None) -> None:
        """A post reached its channel: keep the platform's reference to it (the question's is
        also kept on its round, so the reveal can edit or thread under it)."""
        with self.store.write() as tx:
            tx.outbox_sent(outbox_id, message_ref, self.now())
            row = tx.outbox_row(outbox_id)
            if row is not None and row.kind == "question" and message_ref:
                tx.set_round_ref(int(row.key), message_ref)

    def delivery_failed(
        self, outbox_id: int, error: str, permanent: bool = False, retry_after: float | None = None
    ) -> bool:
        """A try failed: schedule the next one with backoff, or give up (a permanent error,
        or the last allowed try). Returns True when the post was given up."""
        now = self.now()
        with self.store.write() as tx:
            row = tx.outbox_row(outbox_id)
            if row is None or row.state != "pending":
                return True
            attempts = row.attempts + 1
            if permanent or attempts >= self.delivery.max_attempts:
                tx.outbox_give_up(outbox_id, error)
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
            tx.outbox_retry(outbox_id, error, now + self.delivery.delay(attempts, retry_after))
        return False

    def undelivered(self, community: CommunityRef | None = None) -> list[str]:
        """Sentences for admins about posts that failed: given up, or waiting for a retry."""
        with self.store.read() as tx:
            return [self._alert(row) for row in tx.undelivered(self._community_filter(tx, community))]

    @staticmethod
    def _alert(row: OutboxRecord) -> str:
        what = {"question": f"daily round #{row.key}", "reveal": f"reveal of round #{row.key}"}.get(
            row.kind, f"leaderboard {row.key}"
        )
        tries = f"{row.attempts} tr{'y' if row.attempts == 1 else 'ies'}"
        if row.state == "failed":
            return f"Could not post the {what} in channel {row.channel_id} ({tries}, gave up): {row.last_error}"
        return (
            f"Posting the {what} in channel {row.channel_id} failed ({tries}; next try "
            f"{row.next_try:%Y-%m-%d %H:%M} UTC): {row.last_error}"
        )

    # ---------------------------------------------------------------- web pages
    # Read-only views for the study web page (bot/web). Who may see which is the web layer's
    # rule; these only never show a question before its first reveal in the community.

    def _member_link(self, user: UserRef) -> str | None:
        if self.links is None:
            return None
        return self.links.member(CommunityRef(user.platform, user.community_id), user.user_id)

    def _admin_link(self, community: CommunityRef) -> str | None:
        return None if self.links is None else self.links.admin(community)

    def _web_config(self, tx: StoreTx, community: CommunityRef) -> tuple[WebCommunity, CommunityConfig]:
        config = tx.find_community(community.platform, community.community_id)
        if config is None:
            raise NotFound("There is no such community.")
        return pages.web_community(community, config), config

    def web_community(self, community: CommunityRef) -> WebCommunity | None:
        """The community a page is asked for, or None when the bot does not know it."""
        with self.store.read() as tx:
            config = tx.find_community(community.platform, community.community_id)
        return None if config is None else pages.web_community(community, config)

    def leaderboard_page(
        self, community: CommunityRef, scope: str | None = None, page: int = 1, user_id: str | None = None
    ) -> LeaderboardPage:
        """One page of this week's board, an ISO week's (`scope` "2026-W48") or the all-time
        one (`scope` "all"); `user_id` marks that member's row."""
        week = None
        if scope and scope.strip().lower() != "all":
            try:
                week = scoring.parse_week(scope)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        elif scope:
            week = "all"
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            mine = tx.member_named(config.id, user_id) if user_id else None
            return pages.leaderboard_page(
                tx, web, config.id, self.now(), week, page, highlight=clean_name(mine[1]) if mine else None
            )

    def member_page(self, community: CommunityRef, user_id: str) -> MemberPage:
        """A member's progress: points per week, accuracy per topic, streaks, reviews due, and
        the questions they missed with every choice's why."""
        now = self.now()
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            found = tx.member_named(config.id, user_id)
            if found is None:
                raise NotFound("This member has not answered anything here yet.")
            member_id, name = found
            history = pages.week_history(tx.week_points(member_id), scoring.iso_week(now, config.timezone))
            topics = pages.topic_accuracy(tx.question_outcomes(member_id), self.bank)
            missed = pages.missed_questions(tx.missed_answers(member_id, pages.MISSED_LIMIT * 2), self.bank)
            upcoming = [due for question_id, due in tx.reviews(member_id) if self.bank.get(question_id)]
            user = UserRef(community.platform, community.community_id, user_id, name)
            score = self._score_card(tx, user, config, member_id, now)  # in the same unit of work
        next_review = min(upcoming, default=None)
        if next_review is not None and next_review.tzinfo is None:
            next_review = next_review.replace(tzinfo=timezone.utc)
        return MemberPage(web, score, history, topics, missed[: pages.MISSED_LIMIT], next_review)

    def bank_page(self, community: CommunityRef, topic: str | None = None, page: int = 1) -> BankPage:
        """The bank as study material: the questions revealed in this community, by topic."""
        if topic is not None and topic not in TOPICS:
            raise NotFound(f"There is no topic '{topic[:40]}'.")
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            shown = pages.shown_questions(tx, config.id, self.bank)
        shown_by_topic = Counter(q.topic for q in shown)
        in_bank_by_topic = Counter(q.topic for q in self.bank.questions)
        topics = tuple((t, shown_by_topic[t], in_bank_by_topic[t]) for t in TOPICS)
        chosen = [q for q in shown if topic is None or q.topic == topic]
        in_bank = len(self.bank.questions) if topic is None else in_bank_by_topic[topic]
        count = pages.pages_of(len(chosen), pages.BANK_PAGE)
        page = min(max(1, page), count)
        entries = tuple(pages.bank_entry(q) for q in chosen[(page - 1) * pages.BANK_PAGE : page * pages.BANK_PAGE])
        return BankPage(web, topics, topic, entries, page, count, in_bank - len(chosen))

    def demos_page(self, community: CommunityRef, limit: int = 20) -> DemosPage:
        """The community's newest demos with their results."""
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            jobs = tx.community_demos(config.id, limit)
        return DemosPage(web, tuple(pages.demo_entry(job) for job in jobs))

    def demo_chart(self, community: CommunityRef, job_id: int) -> str | None:
        """The chart file of one of this community's demos, if it drew one."""
        with self.store.read() as tx:
            _, config = self._web_config(tx, community)
            job = tx.get_demo(job_id)
        if job is None or job.community_id != config.id or job.state != "done":
            return None
        return job.chart_path

    def admin_page(self, community: CommunityRef) -> AdminPage:
        """What an admin should see in one place: settings, next runs, failed posts, demo
        jobs, and the questions the item analysis flags."""
        now = self.now()
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            alerts = tuple(self._alert(row) for row in tx.undelivered(config.id))
            jobs = tx.community_demos(config.id, 20)
            closes = tx.next_close(config.id)
            flagged = self._flagged_lines(tx, config.id, now)
        daily, weekly = pages.next_runs(config, now)
        if closes is not None and closes.tzinfo is None:
            closes = closes.replace(tzinfo=timezone.utc)
        return AdminPage(
            web,
            config.as_pairs(),
            daily,
            closes,
            weekly,
            alerts,
            tuple(pages.demo_entry(job) for job in jobs),
            flagged,
        )

    def _flagged_lines(self, tx: StoreTx, community_id: int, now: datetime) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each flagged question with what the item analysis says of it, choices by their text."""
        found = []
        for stats in self._flagged(tx, community_id):
            question = self._find(stats.question_id, tx)
            texts = [c.text for c in question.choices] if question else []
            found.append((stats.question_id, tuple(stats.describe(texts))))
        return tuple(found)
