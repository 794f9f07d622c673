"""Practice and review (nothing due, a member's level per topic) and the members' questions:
the /suggest form, its problems, the admins' queue and their decisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .refs import UserRef


@dataclass(frozen=True)
class NothingDue:
    """No review is due; `next_due` says when the next one is, if any."""

    next_due: datetime | None


@dataclass(frozen=True)
class TopicLevel:
    """A member's level on one topic: their rating (logits, against a level-2 question), a
    word for it, the chance of a right answer on a typical question, and answers counted.
    `name` and `chance` are None until the topic has enough answers to say (rating.py)."""

    topic: str
    rating: float
    name: str | None
    chance: float | None
    answers: int


@dataclass(frozen=True)
class SuggestionForm:
    """What a member typed into /suggest (a modal, guided prompts), as typed: the engine
    parses and checks it. `choices` and `whys` pair up by position; `correct` is a letter
    (A-E) or the right choice's text; `level` 1-3 or intro/practitioner/expert."""

    topic: str = ""
    level: str = ""
    prompt: str = ""
    choices: tuple[str, ...] = ()
    whys: tuple[str, ...] = ()
    correct: str = ""
    trap: str = ""
    explain: str = ""
    refs: tuple[str, ...] = ()
    hint: str = ""  # optional: narrows the reasoning before an answer (the bank's `hint:`)


@dataclass(frozen=True)
class FieldProblem:
    """Why one field of a suggestion is refused. `field`: a stable key (topic, level, prompt,
    choices, correct, choice_0..4, why_0..4, trap, explain, hint, refs) that forms map to their
    inputs; `label`: how a member names it ("why of choice B")."""

    field: str
    label: str
    reason: str


@dataclass(frozen=True)
class SuggestionRefused:
    """A form refused field by field; `retry_id`, on Discord, is the button that opens it
    again with what was typed (a modal cannot answer a modal)."""

    problems: tuple[FieldProblem, ...]
    retry_id: str | None = None


@dataclass(frozen=True)
class SuggestionDraft:
    """Discord's first form was kept: the member continues with the second (the whys, the
    trap and the reference) by the button `custom_id`."""

    draft_id: int
    choices: tuple[str, ...]
    custom_id: str


@dataclass(frozen=True)
class SuggestionReceived:
    """The reply to a member who suggested a question."""

    suggestion_id: int
    number: int  # its number in the community, as members and admins see and type it
    prompt: str
    pending: int  # the author's suggestions now waiting


@dataclass(frozen=True)
class SuggestionItem:
    """One suggestion in the admins' queue, with its approve / note / reject button ids."""

    suggestion_id: int
    number: int  # its number in the community (what /config approve N takes)
    author: str
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[str, ...]
    answer: int
    whys: tuple[str, ...]
    trap: str | None
    explain: str | None
    refs: tuple[str, ...]
    approve_id: str
    note_id: str
    reject_id: str


@dataclass(frozen=True)
class SuggestionQueue:
    """The suggestions waiting for an admin's review."""

    community: str
    items: tuple[SuggestionItem, ...]
    waiting: int  # in all (items shows the oldest few)


@dataclass(frozen=True)
class SuggestionDecided:
    """An admin's decision. `author` (None when they were forgotten) is told `action` privately
    by the platform that renders this card."""

    suggestion_id: int
    number: int  # its number in the community
    action: str  # approved | rejected | returned
    prompt: str
    question_id: str | None
    note: str | None
    author: UserRef | None
    queue: SuggestionQueue | None = None  # a button's decision: the queue as it is now (Slack redraws it)
