"""The bank's values: a Question with its Choices, a Bank of them, and the topics a question
file may name. What every caller of the bank holds; how a file becomes them is loading.py's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

TOPICS: tuple[str, ...] = (
    "fundamentals",
    "memory-anatomy",
    "schedules",
    "pytorch-api",
    "selective",
    "correctness",
    "performance",
    "frameworks",
    "combining",
    "measuring",
    "large-scale",
    "compile",
    "offloading",
    "debugging",
)


@dataclass(frozen=True)
class Choice:
    """One answer of a question: its text, whether it is right, and why."""

    text: str
    correct: bool
    why: str


@dataclass(frozen=True)
class Question:
    """One question of the bank, as its YAML file holds it."""

    id: str
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[Choice, ...]
    refs: tuple[str, ...]
    trap: str | None = None
    explain: str | None = None
    check: str | None = None
    demo: str | None = None
    source: str = ""
    hint: str | None = None

    @property
    def answer_index(self) -> int:
        return next(i for i, c in enumerate(self.choices) if c.correct)


@dataclass(frozen=True)
class Bank:
    """The questions loaded, in file order, with an index by id."""

    questions: tuple[Question, ...]
    by_id: dict[str, Question] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def of(cls, questions: Iterable[Question]) -> Bank:
        qs = tuple(questions)
        return cls(qs, {q.id: q for q in qs})

    def get(self, question_id: str) -> Question | None:
        return self.by_id.get(question_id)

    def topics(self) -> list[str]:
        return sorted({q.topic for q in self.questions})

    def __len__(self) -> int:
        return len(self.questions)


def normalise(text: str) -> str:
    """Casefold and drop everything but letters and digits: how text answers are compared."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())
