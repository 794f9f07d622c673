"""EngineBase: what every feature service shares (`Shared`: the store, the bank, the clock,
the community defaults, the policies) and the helpers that find a community, a member, a
question and a round's card. Each service (rounds, practice, boards, outbox, ...) is built on
it with the other services it needs passed to its constructor; StudyEngine
(bot/core/engine.py) builds them all once. It imports none of them.

A community's bank is the shipped bank plus its approved members' questions (never another
community's). An approved question keeps its row when an admin removes it, so rounds that
asked it still show and their answers stay counted; removed ones are no longer asked."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from bot.core import wording
from bot.core.bank import Bank, Question
from bot.core.errors import NotFound
from bot.core.ports import Links
from bot.core.records import RoundRecord
from bot.core.rules import choices as codec
from bot.core.rules import suggestions as forms
from bot.core.rules.community import CommunityConfig
from bot.core.rules.text import clean_name
from bot.core.rules.timing import as_utc
from bot.core.units import UnitsOfWork, WithCommunities, WithLinks, WithMembers, WithSuggestions
from bot.core.values import ChannelRef, CommunityRef, LinkVersions, QuestionCard, UserRef

FORMER_MEMBER = "a former member"


@dataclass
class Shared:
    """What every service reads: one instance per engine, so that a policy or the links set on
    the engine (a test does) reach every service, and an approved member's question cached by
    one is found by all."""

    questions_store: UnitsOfWork[WithSuggestions]  # finds an approved member's question by id
    bank: Bank
    clock: Callable[[], datetime]
    default_timezone: str = "UTC"
    default_window_hours: int = 12
    forget_salt: str = "studybot"
    links: Links | None = None  # signs links to the web page (/score, /config), when it has a URL
    member_questions: dict[str, tuple[Question, int]] = field(default_factory=dict)


class SharedView:
    """`Shared`'s collaborators read through (never copied: a policy or the links set on the
    engine reach every service), and the clock's moment in UTC. The engine and every service
    read them this one way."""

    shared: Shared

    @property
    def bank(self) -> Bank:
        return self.shared.bank

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.shared.clock

    @property
    def default_timezone(self) -> str:
        return self.shared.default_timezone

    @property
    def default_window_hours(self) -> int:
        return self.shared.default_window_hours

    @property
    def forget_salt(self) -> str:
        return self.shared.forget_salt

    @property
    def links(self) -> Links | None:
        return self.shared.links

    @property
    def _member_questions(self) -> dict[str, tuple[Question, int]]:
        return self.shared.member_questions

    def now(self) -> datetime:
        return as_utc(self.clock())


PortT = TypeVar("PortT")


class EngineBase(SharedView, Generic[PortT]):
    """The base of every feature service: `Shared` read through (SharedView), the service's own
    store port (`UnitsOfWork[ItsPort]`: its transactions offer only the features the port
    names, and mypy holds the service to them), and the helpers that find a community, a
    member, a question and a round's card."""

    def __init__(self, shared: Shared, store: UnitsOfWork[PortT]) -> None:
        self.shared = shared
        self.store = store

    # ----------------------------------------------------------------- helpers

    def _community(self, tx: WithCommunities, ref: CommunityRef | UserRef | ChannelRef) -> CommunityConfig:
        """The community's settings, creating it with the defaults on first use."""
        return tx.communities.ensure_community(
            ref.platform,
            ref.community_id,
            clean_name(ref.community_id),
            self.default_timezone,
            self.default_window_hours,
            self.now(),
        )

    @staticmethod
    def _community_filter(tx: WithCommunities, community: CommunityRef | None) -> int | None:
        """For queries over one community or all: None means every community; a community
        never seen gets an id no row has (-1), so its query finds nothing."""
        if community is None:
            return None
        config = tx.communities.find_community(community.platform, community.community_id)
        return -1 if config is None else config.id

    def _member(self, tx: WithMembers, community_id: int, user: UserRef) -> int:
        return tx.members.upsert_member(community_id, user.user_id, clean_name(user.display_name), self.now())

    def _question(self, question_id: str, tx: WithSuggestions | None = None) -> Question:
        question = self._find(question_id, tx)
        if question is None:
            raise NotFound(wording.QUESTION_GONE)
        return question

    @staticmethod
    def _order(round_row: RoundRecord, question: Question) -> tuple[int, ...]:
        return codec.parse_order(round_row.choice_order, len(question.choices))

    def _card(self, round_row: RoundRecord, question: Question, admin_note: str | None = None) -> QuestionCard:
        order = self._order(round_row, question)
        return QuestionCard(
            round_id=round_row.id,
            number=round_row.number,
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

    # ------------------------------------------------------------------- links

    def _link_holder(self, community: CommunityRef, user_id: str, role: str) -> str:
        """Who holds a link ("member" or "admin"), as link_versions keys it: a salted hash, so
        the row that revokes a forgotten member's old link names nobody."""
        text = f"{self.forget_salt}|link|{role}|{community.platform}|{community.community_id}|{user_id}"
        return hashlib.sha256(text.encode()).hexdigest()

    def _link_versions(self, tx: WithLinks, community_id: int, holder: str) -> LinkVersions:
        found = tx.links.link_versions(community_id, ("", holder))
        return LinkVersions(community=found.get("", 0), holder=found.get(holder, 0))

    def _member_link(self, user: UserRef, tx: WithLinks, community_id: int) -> str | None:
        if self.links is None:
            return None
        ref = CommunityRef(user.platform, user.community_id)
        versions = self._link_versions(tx, community_id, self._link_holder(ref, user.user_id, "member"))
        return self.links.member(ref, user.user_id, versions)

    def _admin_link(self, admin: UserRef, tx: WithLinks, community_id: int) -> str | None:
        """The admin page's link for `admin` (a member who may configure), naming them: their
        holder row is noted so that their losing the right can advance it."""
        if self.links is None:
            return None
        ref = CommunityRef(admin.platform, admin.community_id)
        holder = self._link_holder(ref, admin.user_id, "admin")
        tx.links.note_link_holder(community_id, holder)
        return self.links.admin(ref, admin.user_id, self._link_versions(tx, community_id, holder))

    def _revoke_links(self, tx: WithLinks, community_id: int, user: UserRef, roles: tuple[str, ...]) -> bool:
        """Advance the member's versions for these roles ("member", "admin"): every link of
        theirs signed before is revoked. An admin holder is advanced only when it was given a
        link. Whether any changed."""
        ref = CommunityRef(user.platform, user.community_id)
        changed = False
        for role in roles:
            holder = self._link_holder(ref, user.user_id, role)
            changed |= tx.links.advance_link_version(community_id, holder, create=role == "member")
        return changed

    # ------------------------------------------------------------ the bank

    def _member_question(self, question_id: str, tx: WithSuggestions | None = None) -> Question | None:
        """An approved member's question by id (from any state after approval), cached: its
        content never changes once approved."""
        cached = self._member_questions.get(question_id)
        if cached is not None:
            return cached[0]
        if not question_id.startswith(forms.ID_PREFIX):
            return None
        if tx is None:
            with self.shared.questions_store.read() as read:
                record = read.suggestions.suggestion_by_question(question_id)
        else:
            record = tx.suggestions.suggestion_by_question(question_id)
        if record is None or record.question_id is None:
            return None
        question = forms.from_body(record.question_id, record.topic, record.body, f"suggestion:{record.id}")
        self._member_questions[question_id] = (question, record.community_id)
        return question

    def _find(self, question_id: str, tx: WithSuggestions | None = None) -> Question | None:
        """A question of the shipped bank or a member's, by id."""
        return self.bank.get(question_id) or self._member_question(question_id, tx)

    def _community_questions(self, tx: WithSuggestions, community_id: int) -> list[Question]:
        """The community's approved members' questions still asked, oldest first."""
        found = []
        for record in tx.suggestions.suggestions(community_id, ("approved",)):
            if record.question_id:
                question = forms.from_body(record.question_id, record.topic, record.body, f"suggestion:{record.id}")
                self._member_questions[record.question_id] = (question, community_id)
                found.append(question)
        return found

    def _pool(self, tx: WithSuggestions, community_id: int) -> list[Question]:
        return [*self.bank.questions, *self._community_questions(tx, community_id)]

    def _author(self, tx: WithSuggestions, question_id: str) -> str | None:
        """Who wrote a member's question (None for the shipped bank's)."""
        if not question_id.startswith(forms.ID_PREFIX) or self.bank.get(question_id) is not None:
            return None
        record = tx.suggestions.suggestion_by_question(question_id)
        if record is None:
            return None
        return clean_name(record.author_name) if record.author_name else FORMER_MEMBER
