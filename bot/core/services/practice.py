"""The engine's use cases for members' questions (/suggest, the admins' queue, export) and
practice (/quiz at the member's level, /review, ratings, levels per topic). bot/core/engine.py builds it
as `engine.practice`; it reaches the database only through its port, PracticePort."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from bot.core import wording
from bot.core.bank import TOPICS, Question
from bot.core.errors import InvalidInput, NotFound
from bot.core.records import SuggestionRecord
from bot.core.rules import choices as codec
from bot.core.rules import rating as elo
from bot.core.rules import suggestions as forms
from bot.core.rules.community import CommunityConfig
from bot.core.rules.suggestion_buttons import ACTIONS, QUEUE_PREFIX, RETRY_PREFIX, SUGGEST_PREFIX, decode_decision
from bot.core.rules.text import clean_name
from bot.core.services.base import FORMER_MEMBER, EngineBase, Shared
from bot.core.units import (
    UnitsOfWork,
    WithAnswers,
    WithCommunities,
    WithMembers,
    WithOutbox,
    WithRatings,
    WithReviews,
    WithRounds,
    WithSuggestions,
)
from bot.core.values import (
    ChannelRef,
    CommunityRef,
    FieldProblem,
    NothingDue,
    Notice,
    QuestionCard,
    RoundKind,
    SuggestionDecided,
    SuggestionDraft,
    SuggestionForm,
    SuggestionItem,
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
    TopicLevel,
    UserRef,
)

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class PracticePolicy:
    """/quiz picks the question whose predicted chance of a right answer is nearest `target`,
    never one the member saw in the last `fresh_days` days."""

    target: float = 0.7
    fresh_days: int = 30


@dataclass(frozen=True)
class SuggestionPolicy:
    """Per member: at most `max_pending` suggestions waiting and `per_day` sent a day; the
    queue shows the oldest `shown` at a time."""

    max_pending: int = 3
    per_day: int = 5
    shown: int = 5


class PracticePort(
    WithCommunities,
    WithMembers,
    WithRounds,
    WithAnswers,
    WithReviews,
    WithOutbox,
    WithSuggestions,
    WithRatings,
    Protocol,
):
    """The features Practice's units of work touch."""


class Practice(EngineBase[PracticePort]):
    """Members' questions and practice."""

    def __init__(
        self,
        shared: Shared,
        store: UnitsOfWork[PracticePort],
        policy: PracticePolicy | None = None,
        suggestions: SuggestionPolicy | None = None,
    ) -> None:
        super().__init__(shared, store)
        self.policy = policy or PracticePolicy()
        self.suggestion_policy = suggestions or SuggestionPolicy()

    # ------------------------------------------------------------ /suggest

    def suggest(
        self, user: UserRef, channel: ChannelRef, form: SuggestionForm
    ) -> SuggestionReceived | SuggestionRefused:
        """A member's question from a complete form: checked with the bank's rules (refused
        field by field), then waiting in the admins' queue."""
        return self._submit(user, channel, form, None)

    def suggestion_field(self, user: UserRef, form: SuggestionForm, field: str) -> tuple[FieldProblem, ...]:
        """The problems of one field of a form being typed (the console's guided prompts ask a
        field at a time): checked with the bank's rules and against the community's questions,
        so a bad field is asked again at once and what was typed before it is kept."""
        with self.store.read() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            pool = self._pool(tx, community.id) if community is not None else list(self.bank.questions)
        return forms.field_problems(form, field, pool)

    def suggest_continue(
        self, user: UserRef, channel: ChannelRef, draft_id: int, form: SuggestionForm
    ) -> SuggestionReceived | SuggestionRefused:
        """Discord's second form: the whys, trap and reference for a kept first form."""
        return self._submit(user, channel, form, draft_id)

    def suggest_draft(
        self, user: UserRef, channel: ChannelRef, form: SuggestionForm, again: int | None = None
    ) -> SuggestionDraft | SuggestionRefused:
        """Discord's first form (topic, level, prompt, choices, the right one): its fields
        checked as far as they go, then kept as a draft the second form completes. `again`: the
        member's refused draft this form fixes; what its second form had is kept with it."""
        placeholder = "This placeholder explanation is long enough to pass the why rule."
        trial = SuggestionForm(
            topic=form.topic,
            level=form.level,
            prompt=form.prompt,
            choices=form.choices,
            whys=tuple(placeholder for _ in form.choices),
            correct=form.correct,
            trap=placeholder,
            refs=("placeholder reference",),
        )
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, user)
            _, problems = forms.check(trial, self._pool(tx, community.id))
            problems = tuple(p for p in problems if not p.field.startswith("why_") and p.field not in ("trap", "refs"))
            member_id = self._member(tx, community.id, user)
            earlier = tx.suggestions.get_suggestion(again) if again is not None else None
            if earlier is not None and earlier.state == "draft" and earlier.author_member == member_id:
                had = forms.draft_form(earlier.body)
                form = replace(form, whys=had.whys, trap=had.trap, explain=had.explain, hint=had.hint, refs=had.refs)
            if problems:  # what was typed is kept, so the form opens again filled in
                tx.suggestions.drop_drafts(member_id)
                kept = tx.suggestions.add_suggestion(
                    community.id, member_id, channel.channel_id, "draft", form.topic[:40], forms.form_body(form), now
                )
                return SuggestionRefused(problems, retry_id=f"{RETRY_PREFIX}{kept}")
            self._limits(tx, member_id, now)
            tx.suggestions.drop_drafts(member_id)
            body = forms.form_body(form)
            draft_id = tx.suggestions.add_suggestion(
                community.id, member_id, channel.channel_id, "draft", form.topic[:40], body, now
            )
        choices = tuple(" ".join(c.split()) for c in form.choices if c.strip())
        return SuggestionDraft(draft_id=draft_id, choices=choices, custom_id=f"{SUGGEST_PREFIX}{draft_id}")

    def suggestion_form(self, user: UserRef, draft_id: int) -> SuggestionForm:
        """What the member typed into a form of theirs that is still a draft (a refused first
        form, or a first form kept and a refused second), to open that form again filled in."""
        with self.store.read() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            member_id = tx.members.find_member(community.id, user.user_id) if community else None
            draft = tx.suggestions.get_suggestion(draft_id)
            if draft is None or draft.state != "draft" or member_id is None or draft.author_member != member_id:
                raise NotFound(wording.FORM_EXPIRED)
        return forms.draft_form(draft.body)

    def _limits(self, tx: PracticePort, member_id: int, now: datetime) -> None:
        policy = self.suggestion_policy
        counts = tx.suggestions.member_suggestions(member_id, now - timedelta(days=1))
        pending, today = counts.pending, counts.recent
        if pending >= policy.max_pending:
            raise InvalidInput(wording.too_many_pending(pending, policy.max_pending))
        if today >= policy.per_day:
            raise InvalidInput(wording.too_many_today(today, policy.per_day))

    def _submit(
        self, user: UserRef, channel: ChannelRef, form: SuggestionForm, draft_id: int | None
    ) -> SuggestionReceived | SuggestionRefused:
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, user)
            member_id = self._member(tx, community.id, user)
            if draft_id is not None:
                draft = tx.suggestions.get_suggestion(draft_id)
                if draft is None or draft.state != "draft" or draft.author_member != member_id:
                    raise NotFound(wording.FORM_EXPIRED)
                form = forms.merge_draft(draft.body, form)
            question, problems = forms.check(form, self._pool(tx, community.id))
            if question is None:
                if draft_id is None:
                    return SuggestionRefused(problems)
                tx.suggestions.set_draft_body(draft_id, forms.form_body(form))  # the forms open again filled in
                first = any(forms.in_first_form(p.field) for p in problems)  # e.g. a near-duplicate prompt
                return SuggestionRefused(problems, retry_id=f"{RETRY_PREFIX if first else SUGGEST_PREFIX}{draft_id}")
            self._limits(tx, member_id, now)
            body = forms.to_body(question)
            if draft_id is not None:
                tx.suggestions.send_draft(draft_id, question.topic, body, now)
                suggestion_id = draft_id
            else:
                suggestion_id = tx.suggestions.add_suggestion(
                    community.id, member_id, channel.channel_id, "pending", question.topic, body, now
                )
            pending = tx.suggestions.member_suggestions(member_id, now).pending
            sent = tx.suggestions.get_suggestion(suggestion_id)
        log.info("suggestion %s from a member of %s/%s", suggestion_id, user.platform, user.community_id)
        return SuggestionReceived(
            suggestion_id=suggestion_id, number=sent.number if sent else 0, prompt=question.prompt, pending=pending
        )

    # ------------------------------------------------------------ the queue

    def suggestion_queue(self, community: CommunityRef) -> SuggestionQueue:
        """The oldest suggestions waiting, each with approve, note and reject buttons."""
        with self.store.write() as tx:
            config = self._community(tx, community)
            waiting = tx.suggestions.count_suggestions(config.id, "pending")
            records = tx.suggestions.suggestions(config.id, ("pending",), self.suggestion_policy.shown)
        return SuggestionQueue(config.name, tuple(self._item(r) for r in records), waiting)

    @staticmethod
    def _item(record: SuggestionRecord) -> SuggestionItem:
        question = forms.from_body("pending", record.topic, record.body)
        return SuggestionItem(
            suggestion_id=record.id,
            number=record.number,
            author=clean_name(record.author_name) if record.author_name else FORMER_MEMBER,
            topic=question.topic,
            difficulty=question.difficulty,
            prompt=question.prompt,
            choices=tuple(c.text for c in question.choices),
            answer=question.answer_index,
            whys=tuple(c.why for c in question.choices),
            trap=question.trap,
            explain=question.explain,
            refs=question.refs,
            approve_id=f"{QUEUE_PREFIX}{record.id}:approve",
            note_id=f"{QUEUE_PREFIX}{record.id}:note",
            reject_id=f"{QUEUE_PREFIX}{record.id}:reject",
        )

    def decide_suggestion(
        self, community: CommunityRef, suggestion_id: int, action: str, note: str | None = None, queue: bool = False
    ) -> SuggestionDecided | Notice:
        """An admin's decision: approve (the question joins this community's bank), note
        (returned to its author with what to change) or reject. The author is in the card;
        with `queue`, the queue as it is after the decision too (to redraw the queue's message)."""
        action = action.strip().lower()
        if action not in ACTIONS:
            raise InvalidInput(wording.DECIDE_HOW)
        text = " ".join(forms.defuse(note or "").split())[:500] or None
        if action == "note" and not text:
            raise InvalidInput(wording.WRITE_THE_NOTE)
        now = self.now()
        with self.store.write() as tx:
            config = self._community(tx, community)
            record = tx.suggestions.get_suggestion(suggestion_id)
            if record is None or record.community_id != config.id or record.state == "draft":
                raise NotFound(wording.NOT_IN_QUEUE)
            if record.state != "pending":
                return Notice(wording.already_decided(record.number, record.state))
            question = forms.from_body("pending", record.topic, record.body)
            question_id = None
            if action == "approve":
                question_id = forms.question_id(record.id, question.prompt)
            tx.suggestions.decide_suggestion(record.id, ACTIONS[action], question_id, text, now)
            if record.author_user is not None:  # the author hears it through the outbox, retried like posts
                tx.outbox.enqueue(config.id, record.author_user, "decision", str(record.id), now)
            after = None
            if queue:
                waiting = tx.suggestions.count_suggestions(config.id, "pending")
                records = tx.suggestions.suggestions(config.id, ("pending",), self.suggestion_policy.shown)
                after = SuggestionQueue(config.name, tuple(self._item(r) for r in records), waiting)
        author = None
        if record.author_user is not None:
            author = UserRef(community.platform, community.community_id, record.author_user, record.author_name or "")
        log.info(
            "suggestion %s %s in %s/%s", suggestion_id, ACTIONS[action], community.platform, community.community_id
        )
        return SuggestionDecided(
            suggestion_id=suggestion_id,
            number=record.number,
            action=ACTIONS[action],
            prompt=question.prompt,
            question_id=question_id,
            note=text,
            author=author,
            queue=after,
        )

    @staticmethod
    def decided(tx: WithSuggestions, suggestion_id: int, community: CommunityRef) -> SuggestionDecided:
        """A decided suggestion as its author is told it (the outbox rebuilds it to send)."""
        record = tx.suggestions.get_suggestion(suggestion_id)
        if record is None or record.state not in ACTIONS.values():
            raise NotFound(wording.suggestion_gone(record.number if record else suggestion_id))
        if record.author_user is None:
            raise NotFound(wording.author_forgotten(record.number))
        question = forms.from_body("pending", record.topic, record.body)
        author = UserRef(community.platform, community.community_id, record.author_user, record.author_name or "")
        return SuggestionDecided(
            suggestion_id=record.id,
            number=record.number,
            action=record.state,
            prompt=question.prompt,
            question_id=record.question_id,
            note=record.note,
            author=author,
        )

    def decide_button(
        self, community: CommunityRef, custom_id: str, note: str | None = None
    ) -> SuggestionDecided | Notice:
        """A click on a queue button (`sb1:sq:<id>:<action>`); a note comes from its form."""
        decoded = decode_decision(custom_id)
        if decoded is None:
            raise InvalidInput(wording.NOT_A_QUEUE_BUTTON)
        return self.decide_suggestion(community, decoded[0], decoded[1], note, queue=True)

    def remove_question(self, community: CommunityRef, question_id: str) -> Notice:
        """Stop asking a member's question; the rounds that asked it and their answers stay."""
        question_id = question_id.strip().lower()
        with self.store.write() as tx:
            config = self._community(tx, community)
            record = tx.suggestions.suggestion_by_question(question_id)
            if record is None or record.community_id != config.id or record.state not in ("approved", "removed"):
                raise NotFound(wording.no_member_question(question_id))
            if record.state == "removed":
                return Notice(wording.question_already_removed(question_id))
            tx.suggestions.remove_suggestion(record.id, self.now())
        return Notice(wording.question_removed(question_id))

    def export_questions(self, community: CommunityRef) -> dict[str, str]:
        """The community's approved questions as bank files: {topic: YAML text}."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(wording.no_community_on(community.platform, community.community_id))
            records = tx.suggestions.suggestions(config.id, ("approved",))
        by_topic: dict[str, list[tuple[Question, str]]] = {}
        for record in records:
            if record.question_id is None:
                continue
            question = forms.from_body(record.question_id, record.topic, record.body)
            author = clean_name(record.author_name) if record.author_name else FORMER_MEMBER
            by_topic.setdefault(question.topic, []).append((question, author))
        return {topic: forms.dump_yaml(topic, items) for topic, items in sorted(by_topic.items())}

    # ------------------------------------------------------- practice, review

    def quiz(self, user: UserRef, channel: ChannelRef, topic: str | None = None) -> QuestionCard:
        """A private practice question at the member's level: without a topic, a review due
        first, else the question whose predicted chance of a right answer is nearest the
        target (PracticePolicy), never one they saw in the last 30 days; with a topic, the
        same within it, falling back to the least seen."""
        if topic is not None:
            topic = topic.strip().lower()
            if topic not in TOPICS:
                raise InvalidInput(wording.unknown_topic(topic, TOPICS))
        now = self.now()
        with self.store.write() as tx:
            community = self._community(tx, user)
            pool = [q for q in self._pool(tx, community.id) if topic is None or q.topic == topic]
            if not pool:
                raise NotFound(wording.no_questions_on(topic))
            member_id = self._member(tx, community.id, user)
            picked = self._adaptive_pick(tx, community, member_id, topic, now)
            if picked is not None:
                return self._private_round(tx, community.id, member_id, channel, picked[0], picked[1], now)
            if topic is None:
                raise NotFound(wording.seen_every_question(self.policy.fresh_days))
            seen = tx.answers.seen_counts(member_id)
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
            for question_id, due in tx.reviews.reviews(member_id):
                question = self._find(question_id, tx)
                if question is None:
                    continue
                if due > now:
                    return NothingDue(next_due=due)
                return self._private_round(tx, community.id, member_id, channel, question, "review", now)
            return NothingDue(next_due=None)

    def _private_round(
        self,
        tx: PracticePort,
        community_id: int,
        member_id: int,
        channel: ChannelRef,
        question: Question,
        kind: RoundKind,
        now: datetime,
    ) -> QuestionCard:
        order = codec.format_order(codec.draw_order(len(question.choices)))
        left = tx.rounds.pending_private(member_id)  # an unanswered one is replaced: the card says so
        row = tx.rounds.insert_private(community_id, member_id, channel.channel_id, question.id, kind, now, order)
        card = self._card(row, question)
        return card if left is None else replace(card, replaced=left.number)

    # ------------------------------------------------------- adaptive practice

    def rate(self, tx: WithRatings, member_id: int, question: Question, correct: bool) -> None:
        """Every answer moves the member's rating (overall and the topic's) and the question's."""
        mine = tx.ratings.member_ratings(member_id)
        overall = elo.Rating(*mine.get(elo.OVERALL, (0.0, 0)))
        topic = elo.Rating(*mine.get(question.topic, (0.0, 0)))
        start = elo.start_difficulty(question.difficulty)
        found = tx.ratings.question_ratings((question.id,)).get(question.id, (start, 0))
        change = elo.update(overall, topic, elo.Rating(*found), correct)
        tx.ratings.bump_member_rating(member_id, elo.OVERALL, 0.0, change.skill)
        tx.ratings.bump_member_rating(member_id, question.topic, 0.0, change.topic)
        tx.ratings.bump_question_rating(question.id, start, change.difficulty)

    def difficulty(self, questions: list[Question], ratings: dict[str, tuple[float, int]]) -> dict[str, float]:
        """Each question's one difficulty number: its rating, or its level's start."""
        return {q.id: ratings.get(q.id, (elo.start_difficulty(q.difficulty), 0))[0] for q in questions}

    def _adaptive_pick(
        self, tx: PracticePort, community: CommunityConfig, member_id: int, topic: str | None, now: datetime
    ) -> tuple[Question, RoundKind] | None:
        """A due review first; else the question nearest the target chance among those the
        member has not seen in `fresh_days`; None when every one was seen."""
        if topic is None:
            for question_id, due in tx.reviews.reviews(member_id):
                question = self._find(question_id, tx)
                if question is not None and due <= now:
                    return question, "review"
        pool = [q for q in self._pool(tx, community.id) if topic is None or q.topic == topic]
        seen = tx.answers.seen_since(member_id, now - timedelta(days=self.policy.fresh_days))
        fresh = [q for q in pool if q.id not in seen]
        if not fresh:
            return None
        mine = tx.ratings.member_ratings(member_id)
        overall = mine.get(elo.OVERALL, (0.0, 0))[0]
        skill = {q.id: overall + mine.get(q.topic, (0.0, 0))[0] for q in fresh}
        difficulty = self.difficulty(fresh, tx.ratings.question_ratings(q.id for q in fresh))
        salt = f"{member_id}:{now.isoformat()}"
        tie = {q.id: hashlib.sha256(f"{salt}:{q.id}".encode()).hexdigest() for q in fresh}
        chosen = elo.nearest(((q.id, difficulty[q.id]) for q in fresh), skill, self.policy.target, tie)
        by_id = {q.id: q for q in fresh}
        return (by_id[chosen], "practice") if chosen is not None else None

    def levels(self, ratings: dict[str, tuple[float, int]]) -> tuple[TopicLevel, ...]:
        overall = ratings.get(elo.OVERALL, (0.0, 0))[0]
        levels = []
        for topic in TOPICS:
            if topic not in ratings:
                continue
            offset, answers = ratings[topic]
            skill = overall + offset
            if answers < elo.MIN_LEVEL_ANSWERS:  # too few to name a level or estimate a chance
                levels.append(TopicLevel(topic, skill, None, None, answers))
                continue
            levels.append(TopicLevel(topic, skill, elo.level_name(skill), elo.chance(skill, 0.0), answers))
        return tuple(levels)
