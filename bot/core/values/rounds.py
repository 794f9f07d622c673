"""The daily, practice and review rounds: the question posted, the feedback on an answer, how
sure the member was, and the reveal when the window ends."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

RoundKind = Literal["daily", "practice", "review"]


LETTERS = "abcde"


def letter(index: int) -> str:
    """The letter a user sees for choice `index` (0 -> 'A')."""
    return LETTERS[index].upper()


@dataclass(frozen=True)
class QuestionCard:
    """A question to post: publicly for a daily round, privately for practice and review."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    question_id: str
    kind: RoundKind
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[str, ...]
    closes_at: datetime | None = None
    late: bool = False
    admin_note: str | None = None
    # A private round: the number of the member's unanswered practice question or review it
    # replaces (said).
    replaced: int | None = None


@dataclass(frozen=True)
class AnswerFeedback:
    """Private feedback on a user's first answer to a round."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    kind: RoundKind
    correct: bool
    points: int
    chosen: str
    chosen_text: str
    answer: str
    answer_text: str
    why: str
    trap: str | None
    streak_bonus: int = 0
    # How sure the member said they were, when they said it with the answer (the console's
    # `b sure`); None: the platform asks after the click (Sure / Unsure buttons).
    noted: ConfidenceNoted | None = None
    streak_repaired: str | None = None  # a review that cleared the last due: the missed day earned back


@dataclass(frozen=True)
class ConfidenceNoted:
    """How sure a member was of an answer, recorded once (it changes no points). `grade`: what
    FSRS was given for the review card (Again, Hard, Good, Easy), None when the answer touched
    no review card; `due`: when that card comes back."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    sure: bool
    correct: bool
    grade: str | None = None
    due: datetime | None = None


@dataclass(frozen=True)
class AlreadyNoted:
    """A second "how sure" for the same answer: the first one stands."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    sure: bool


@dataclass(frozen=True)
class AlreadyAnswered:
    """The reply to a second answer to a round: the first one counts."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    chosen: str | None  # None: answered before the member asked to be forgotten


@dataclass(frozen=True)
class RoundClosed:
    """An answer that came after the round closed: not scored."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    answer: str


@dataclass(frozen=True)
class ChoiceReveal:
    """One choice of a revealed round: its letter, text, whether right, why, and how many chose it."""

    letter: str
    text: str
    correct: bool
    why: str
    count: int


@dataclass(frozen=True)
class RevealCard:
    """A round's reveal: the answer, each choice's why and count, and who was right."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    question_id: str
    prompt: str
    answer: str
    answer_text: str
    choices: tuple[ChoiceReveal, ...]
    explain: str | None
    trap: str | None
    refs: tuple[str, ...]
    channel_id: str
    answered: int
    question_ref: str | None = None  # the platform's reference of the question's post, once known
    author: str | None = None  # a member's question: who wrote it
    demo: str | None = None  # the question's `/demo` request ("see it run" under the reveal), if it has one


@dataclass(frozen=True)
class AlreadyOpen:
    """The daily round for this channel and local day exists already: still open, or `closed`
    (revealed or past its window), then with when the next one opens (`next_opens`, local)."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    local_date: str
    closed: bool = False
    next_opens: str | None = None  # e.g. "2026-11-24 18:30 (Europe/Berlin)"
