"""The engine's use cases for rounds: open the daily round, decide which round a line of text
answers and score the answer, close a round and reveal it. Answers (answers.py) is the entry
for a click or a line; bot/core/engine.py builds this service as `engine.rounds`."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from bot.core import wording
from bot.core.bank import Question
from bot.core.errors import InvalidInput, NotFound
from bot.core.records import NewAnswer, NewDaily, RoundRecord
from bot.core.rules import choices as codec
from bot.core.rules import review as spaced
from bot.core.rules import scoring
from bot.core.rules.community import CommunityConfig
from bot.core.rules.text import MAX_TEXT, clean_name, looks_like_any_letter, looks_like_letter, parse_choice
from bot.core.rules.timing import as_utc, daily_moment
from bot.core.services.base import EngineBase, Shared
from bot.core.services.fsrs_community import CommunityFsrs
from bot.core.services.practice import Practice
from bot.core.services.streak_repair import Streaks
from bot.core.units import (
    UnitsOfWork,
    WithAnswers,
    WithCommunities,
    WithConfidence,
    WithMembers,
    WithOutbox,
    WithPlatform,
    WithRatings,
    WithReviews,
    WithRounds,
    WithStreaks,
    WithSuggestions,
)
from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ChannelRef,
    ChoiceReveal,
    CommunityRef,
    Notice,
    QuestionCard,
    RevealCard,
    RoundClosed,
    UserRef,
    letter,
)

log = logging.getLogger(__name__)

LOW_BANK = 7
# How long a platform event id is remembered (Slack retries within minutes).
EVENT_MEMORY = timedelta(days=1)
# `daily b`: the word that makes a text line an answer to the channel's open daily round.
DAILY_WORD = "daily"


def daily_key(community_id: int, day: str) -> str:
    """The key a community's daily round of `day` is opened under, at most once, whatever the
    channel: moving the channel (or a second channel asking) never opens a second round that day."""
    return f"{community_id}|{day}"


def channel_daily_key(community_id: int, channel_id: str, day: str) -> str:
    """The key rounds were opened under before it was per community (one per channel): still
    looked up, so a round opened before the upgrade counts for its day."""
    return f"{community_id}|{channel_id}|{day}"


def new_daily(
    community: CommunityConfig, channel_id: str, question: Question, day: str, now: datetime, late: bool
) -> NewDaily:
    """The daily round to open in a channel today, its choices' order drawn."""
    return NewDaily(
        community_id=community.id,
        channel_id=channel_id,
        question_id=question.id,
        local_date=day,
        daily_key=daily_key(community.id, day),
        opened_at=now,
        closes_at=now + timedelta(hours=community.window_hours),
        late=late,
        choice_order=codec.format_order(codec.draw_order(len(question.choices))),
    )


def low_bank_note(unasked_left: int) -> str | None:
    """The admins' note on a daily round when few questions are left unasked."""
    if unasked_left >= LOW_BANK:
        return None
    return wording.low_bank(unasked_left)


class RevealTx(WithAnswers, WithOutbox, WithRounds, WithSuggestions, Protocol):
    """What a reveal reads and writes (the outbox's unit of work renders one too)."""


class RoundsPort(
    WithCommunities,
    WithMembers,
    WithRounds,
    WithAnswers,
    WithReviews,
    WithOutbox,
    WithPlatform,
    WithSuggestions,
    WithConfidence,
    WithRatings,
    WithStreaks,
    Protocol,
):
    """The features Rounds's units of work touch."""


class Rounds(EngineBase[RoundsPort]):
    """The daily round, scoring an answer and the reveal."""

    def __init__(
        self, shared: Shared, store: UnitsOfWork[RoundsPort], practice: Practice, fsrs: CommunityFsrs, streaks: Streaks
    ) -> None:
        super().__init__(shared, store)
        self.practice = practice
        self.fsrs = fsrs
        self.streaks = streaks

    # ------------------------------------------------------------- daily round

    def open_daily(self, channel: ChannelRef, late: bool = False) -> QuestionCard | AlreadyOpen:
        """Open today's round in `channel` (local day of the community), at most once, and
        queue its post."""
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, channel)
            day = scoring.local_date(now, community.timezone).isoformat()
            key = daily_key(community.id, day)
            existing = tx.rounds.daily_round_id(key) or tx.rounds.daily_round_id(
                channel_daily_key(community.id, channel.channel_id, day)
            )
            if existing is not None:
                return self._already_open(tx, community, existing, day, now)
            question, unasked_left = self._next_daily_question(tx, community)
            row = tx.rounds.insert_daily(new_daily(community, channel.channel_id, question, day, now, late))
            if row is None:  # another process opened it between our read and write
                taken = tx.rounds.daily_round_id(key)
                if taken is None:  # not visible to this transaction yet: say so without its number
                    return AlreadyOpen(round_id=0, number=0, local_date=day)
                return self._already_open(tx, community, taken, day, now)
            tx.outbox.enqueue(community.id, channel.channel_id, "question", str(row.id), now)
        log.info("opened daily round %s (%s) in %s", row.id, question.id, channel)
        return self._card(row, question, admin_note=low_bank_note(unasked_left))

    @staticmethod
    def _already_open(
        tx: RoundsPort, community: CommunityConfig, round_id: int, day: str, now: datetime
    ) -> AlreadyOpen:
        """Today's round exists: open, or closed with when tomorrow's opens (the community's time)."""
        row = tx.rounds.get_round(round_id)
        if row.closed_at is None and (row.closes_at is None or as_utc(row.closes_at) > now):
            return AlreadyOpen(round_id=round_id, number=row.number, local_date=day)
        tomorrow = date.fromisoformat(day) + timedelta(days=1)
        moment = daily_moment(tomorrow, community.daily_time, community.timezone)
        local = moment.astimezone(ZoneInfo(community.timezone))
        opens = f"{local:%Y-%m-%d %H:%M} ({community.timezone})"
        return AlreadyOpen(round_id, row.number, day, closed=True, next_opens=opens)

    def _next_daily_question(self, tx: RoundsPort, community: CommunityConfig) -> tuple[Question, int]:
        own = self._community_questions(tx, community.id)
        return self.pick_daily(community, own, tx.rounds.daily_last_asked(community.id))

    def pick_daily(
        self, community: CommunityConfig, own: list[Question], last_asked: dict[str, datetime]
    ) -> tuple[Question, int]:
        """The round's question from the community's pool (`own`: its members' questions;
        `last_asked`: question id -> its latest daily round) and how many stay unasked."""
        pool = [q for q in [*self.bank.questions, *own] if not community.topics or q.topic in community.topics]
        if not pool:
            pool = [*self.bank.questions, *own]
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
            found = tx.answers.answer_context(
                round_id, user.user_id, user.platform, user.community_id, self._forget_key(user)
            )
        if found is None:  # a tampered or foreign button: its id is no number a member knows
            raise NotFound(wording.NOT_THIS_COMMUNITYS_QUESTION)
        row = found.round
        if row.kind != "daily" and row.member_id != found.known_member:
            raise NotFound(wording.someone_elses_practice(row.number))
        if found.previous is not None:
            return AlreadyAnswered(round_id=round_id, number=row.number, chosen=letter(found.previous))
        if found.forgotten:  # their first answer stays final though its record is gone
            return AlreadyAnswered(round_id=round_id, number=row.number, chosen=None)
        question = self._question(row.question_id)
        if not 0 <= choice < len(question.choices):
            raise InvalidInput(wording.choose_one_of(len(question.choices)))
        order = self._order(row, question)
        shown_answer = order.index(question.answer_index)
        if row.closed_at is not None or (row.closes_at is not None and row.closes_at <= now):
            return RoundClosed(round_id=round_id, number=row.number, answer=letter(shown_answer))
        correct = choice == shown_answer
        # Everything that needs no database is done before queueing for the writer.
        name = clean_name(user.display_name)
        week = scoring.iso_week(now, found.timezone)
        parameters = self.fsrs.community_parameters(row.community_id)  # its fitted FSRS weights, or None
        miss_card = None if correct else spaced.first_miss_later(now, parameters)

        def write(tx: RoundsPort) -> tuple[int, int, str | None] | AlreadyAnswered:
            member_id = tx.members.upsert_member(row.community_id, user.user_id, name, now)
            bonus = 0
            points = 0
            if row.kind == "daily" and correct:
                run = scoring.leading_run(
                    tx.answers.earlier_outcomes(row.community_id, member_id, round_id, scoring.MAX_STREAK_BONUS)
                )
                points = scoring.daily_points(True, run)
                bonus = points - scoring.BASE_POINTS
            stored = tx.answers.insert_answer(
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
                    question_id=question.id,
                    file_choice=order[choice],
                )
            )
            if not stored:  # a concurrent duplicate (double click, Slack retry)
                chosen = tx.answers.answer_choice(round_id, member_id)
                return AlreadyAnswered(round_id=round_id, number=row.number, chosen=letter(chosen or 0))
            self._schedule_review(tx, row, member_id, question.id, correct, now, miss_card, parameters)
            self.practice.rate(tx, member_id, question, correct)
            # a review that leaves none due may earn back a missed day (bot/core/services/streak_repair.py)
            repaired = self.streaks.repair(tx, row.community_id, member_id, now) if row.kind == "review" else None
            return points, bonus, repaired

        # Concurrent first answers share one transaction on SQLite (group commit), each in
        # its own savepoint; the result comes back once it is committed.
        written = self.store.grouped(write)
        if isinstance(written, AlreadyAnswered):
            return written
        points, bonus, repaired = written
        picked = question.choices[order[choice]]
        return AnswerFeedback(
            round_id=round_id,
            number=row.number,
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
            streak_repaired=repaired,
        )

    def _schedule_review(
        self,
        tx: RoundsPort,
        row: RoundRecord,
        member_id: int,
        question_id: str,
        correct: bool,
        now: datetime,
        miss_card: Callable[[int], tuple[str, datetime]] | None = None,
        parameters: tuple[float, ...] | None = None,
    ) -> None:
        if row.kind != "daily":  # a private round ends with its answer
            tx.rounds.close_private(row.id, now)
        if row.kind == "review":
            state = tx.reviews.review_state(member_id, question_id)
            if state is not None:
                new_state, due = spaced.after_review(state, correct, now, parameters)
                tx.reviews.update_review(member_id, question_id, new_state, due)
                tx.confidence.set_review_before(row.id, member_id, state)  # a confidence re-grades from it
                return
        if not correct:  # a first miss starts a review card; an existing card keeps its schedule
            card_id = member_id * 100_000 + (row.id % 100_000)
            new_state, due = miss_card(card_id) if miss_card else spaced.first_miss(card_id, now, parameters)
            tx.reviews.add_review(member_id, question_id, new_state, due)

    # Complex (C901): the one place that decides what a line answers, each case in its order.
    def answer_text(  # noqa: C901
        self,
        user: UserRef,
        channel: ChannelRef | None,
        text: str,
        reply_to: str | None = None,
        event_id: str | None = None,
    ) -> AnswerFeedback | AlreadyAnswered | RoundClosed | Notice | None:
        """A text answer, the one place that decides what a line answers (every platform's
        text path comes here), so a line meant for one question never spends another's answer:

        - `reply_to` (the platform's reference of the post replied to: a Discord reply, a Slack
          thread) answers THAT daily round; a reply to anything else is chat (None);
        - `daily b` answers the channel's open daily round;
        - a bare line (`b`, `B)`, a choice's text) answers the member's pending practice
          question, and never a daily round: with none pending it says how to answer the daily.

        Returns None when the text is not an answer (it is then ignored). `event_id` (the
        platform's id of the event) makes a redelivery harmless even after a restart: an
        answer-like event seen before returns None; it is noted just before the answer, so an
        event whose handling dies in between is lost, never answered twice."""
        if len(text) > MAX_TEXT:
            raise InvalidInput(wording.message_too_long(len(text), MAX_TEXT))
        now = self.now()
        first, _, rest = text.strip().partition(" ")
        explicit = reply_to is None and first.lower() == DAILY_WORD
        if explicit:
            text = rest.strip()
        with self.store.read() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            target: RoundRecord | None = None
            daily: RoundRecord | None = None
            if community is not None and reply_to is not None:
                target = tx.rounds.daily_by_ref(community.id, reply_to)
            elif community is not None and channel is not None:
                if not explicit:
                    member_id = tx.members.find_member(community.id, user.user_id)
                    target = None if member_id is None else tx.rounds.pending_private(member_id)
                if target is None:
                    daily = tx.rounds.open_daily_in(community.id, channel.channel_id, now)
                    if explicit:
                        target = daily
        if reply_to is not None and target is None:
            return None  # a reply to a post that is no round's: chat
        if target is None:
            if explicit:
                return Notice(wording.NO_OPEN_DAILY)
            if daily is not None:  # a bare line never spends a daily answer
                daily_question = self._find(daily.question_id)
                shown = [] if daily_question is None else self._shown(daily, daily_question)
                if looks_like_letter(text) or (shown and parse_choice(text, shown) is not None):
                    return Notice(wording.daily_needs_word(daily.number, user.platform))
                return None
            if looks_like_letter(text):
                return Notice(wording.NOTHING_OPEN)
            return None
        question = self._find(target.question_id)
        if question is None:
            return None
        shown = self._shown(target, question)
        choice = parse_choice(text, shown)
        if choice is None:
            if explicit or looks_like_any_letter(text):  # `z`, or `e` with A-D open
                return Notice(wording.not_a_choice(target.number, len(shown)))
            return None
        if event_id is not None:
            with self.store.write() as tx:
                if not tx.platform.claim_event(user.platform, event_id, self.now(), EVENT_MEMORY):
                    log.info("%s event %s again: already handled", user.platform, event_id)
                    return None
        return self.answer(user, target.id, choice)

    def _shown(self, row: RoundRecord, question: Question) -> list[str]:
        """A round's choices' texts in the order its members were shown them."""
        return [question.choices[i].text for i in self._order(row, question)]

    def close_round(self, round_id: int) -> RevealCard | Notice:
        """Close a daily round, queue its public reveal and return it, exactly once."""
        now = self.now()
        with self.store.write() as tx:
            if not tx.rounds.close_daily(round_id, now):
                if not tx.rounds.is_daily(round_id):
                    raise NotFound(wording.NO_SUCH_DAILY_ROUND)
                return Notice(wording.already_revealed(tx.rounds.get_round(round_id).number))
            card = self.reveal(tx, round_id)
            row = tx.rounds.get_round(round_id)
            tx.outbox.enqueue(row.community_id, row.channel_id, "reveal", str(round_id), now)
        return card

    def close_open_in(self, channel: ChannelRef) -> RevealCard | Notice:
        """Close the newest open daily round in a channel (the console's /close)."""
        with self.store.read() as tx:
            community = tx.communities.find_community(channel.platform, channel.community_id)
            found = None if community is None else tx.rounds.open_daily_in(community.id, channel.channel_id, None)
        if found is None:
            return Notice(wording.NO_OPEN_DAILY_TO_CLOSE)
        return self.close_round(found.id)

    def close_due(self, community: CommunityRef | None = None) -> list[RevealCard]:
        """Close every daily round whose answer window has ended (in one community, or in
        all); each reveal once."""
        now = self.now()
        with self.store.read() as tx:
            due = tx.rounds.due_daily_rounds(self._community_filter(tx, community), now)
        cards = []
        for round_id in due:
            card = self.close_round(round_id)
            if isinstance(card, RevealCard):
                cards.append(card)
        return cards

    def next_close(self, community: CommunityRef) -> datetime | None:
        """When the community's earliest open daily round closes (for the scheduler), if any."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            moment = None if config is None else tx.rounds.next_close(config.id)
        if moment is None:
            return None
        return as_utc(moment)

    def reveal(self, tx: RevealTx, round_id: int) -> RevealCard:
        row = tx.rounds.get_round(round_id)
        question = self._question(row.question_id, tx)
        order = self._order(row, question)
        counts = tx.answers.choice_counts(round_id)
        shown_answer = order.index(question.answer_index)
        question_ref = row.message_ref or tx.outbox.outbox_ref(row.community_id, "question", str(round_id))
        return RevealCard(
            round_id=round_id,
            number=row.number,
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
            demo=question.demo,
        )
