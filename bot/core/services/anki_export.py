"""Your misses in Anki, the engine's part: the questions a member missed, or the questions
revealed in a community, as an AnkiDeck value. bot/anki.py writes the .apkg (the core imports
neither genanki nor sqlite3). bot/core/engine.py builds it as `engine.anki`."""

from __future__ import annotations

import re
from typing import Protocol

from bot.core import wording
from bot.core.errors import NotFound
from bot.core.rules import choices as codec
from bot.core.rules import pages
from bot.core.services.base import EngineBase
from bot.core.units import WithAnswers, WithCommunities, WithMembers, WithRounds, WithSuggestions
from bot.core.values import AnkiDeck, BankEntry, CommunityRef, Notice, UserRef

# Wrong answers read for an export, newest first; each question becomes one note.
MISSED_ROWS = 5000
MISSES_DECK = "Checkpoint Study Bot::Missed questions"
BANK_DECK = "Checkpoint Study Bot::Revealed bank"
_UNSAFE = re.compile(r"[^a-z0-9]+")


def file_name(kind: str, who: str) -> str:
    """`studybot-misses-ann.apkg`: lowercase letters, digits and dashes only."""
    slug = _UNSAFE.sub("-", who.casefold()).strip("-")[:40] or "deck"
    return f"studybot-{kind}-{slug}.apkg"


class AnkiExportPort(WithCommunities, WithMembers, WithAnswers, WithSuggestions, WithRounds, Protocol):
    """The features AnkiExport's units of work touch."""


class AnkiExport(EngineBase[AnkiExportPort]):
    """`/review export` and the web page's two deck links (read-only units of work)."""

    def _missed_entries(self, tx: AnkiExportPort, member_id: int) -> tuple[BankEntry, ...]:
        """Each question the member ever answered wrong, once, newest miss first (a question
        no longer in the bank is left out), its choices lettered as that miss's round showed them."""
        seen: set[str] = set()
        entries = []
        for miss in tx.answers.missed_answers(member_id, MISSED_ROWS):
            if miss.question_id in seen:
                continue
            seen.add(miss.question_id)
            question = self._find(miss.question_id, tx)
            if question is not None:
                order = codec.parse_order(miss.choice_order, len(question.choices))
                entries.append(pages.bank_entry(question, order))
        return tuple(entries)

    def review_export(self, user: UserRef) -> AnkiDeck | Notice:
        """The member's missed questions as an Anki deck; a Notice when they missed none."""
        with self.store.read() as tx:
            config = tx.communities.find_community(user.platform, user.community_id)
            found = None if config is None else tx.members.member_named(config.id, user.user_id)
            entries = () if found is None else self._missed_entries(tx, found.id)
        if not entries:
            return Notice(wording.ANKI_NOTHING_MISSED)
        return AnkiDeck("misses", MISSES_DECK, file_name("misses", user.display_name), entries)

    def missed_deck(self, community: CommunityRef, user_id: str) -> AnkiDeck:
        """The web page's link: a member's missed questions (an empty deck when none)."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            found = None if config is None else tx.members.member_named(config.id, user_id)
            if found is None:
                raise NotFound(wording.NOTHING_ANSWERED_YET)
            entries = self._missed_entries(tx, found.id)
        return AnkiDeck("misses", MISSES_DECK, file_name("misses", found.name), entries)

    def bank_deck(self, community: CommunityRef) -> AnkiDeck:
        """The community's revealed bank (what its bank page shows, every topic) as a deck."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(wording.NO_SUCH_COMMUNITY)
            shown = pages.shown_questions(tx, config.id, self.bank)
        entries = tuple(pages.bank_entry(question) for question in shown)
        return AnkiDeck("bank", BANK_DECK, file_name("bank", config.name), entries)
