"""Adaptive practice: an Elo rating of each member and of each question, updated on every answer.

The model is the Elo system as used in adaptive learning systems (Pelanek, R. (2016).
"Applications of the Elo rating system in adaptive educational systems". Computers &
Education 98, 169-179): the chance that a member answers a question right is the logistic
function of the member's skill minus the question's difficulty, both in logits,

    P(right) = 1 / (1 + exp(-(skill + topic_skill - difficulty)))

and after each answer (1 right, 0 wrong) both move by the surprise, scaled by an uncertainty
function that starts large and shrinks as answers accumulate (K(n) = a / (1 + b n)):

    skill       += K(n_member) * (answer - P)
    topic_skill += K(n_member_topic) * (answer - P)   (the topic's offset, Pelanek's "concepts")
    difficulty  -= K(n_question) * (answer - P)

A maintained library was looked for first: the Elo packages on PyPI rate players in matches
(chess, sports, team games) and the IRT packages (girth, catsim, adaptivetesting) estimate
abilities from a whole answer matrix with numpy/scipy; none updates one member and one item per
answer, which is what practice needs, so this is the model in a few lines, tested on a
simulated population (tests/test_adaptive.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# Where a question starts before anyone has answered it: its author's level (1 intro,
# 2 practitioner, 3 expert) in logits.
START_DIFFICULTY = {1: -1.2, 2: 0.0, 3: 1.2}
K_START = 1.0  # a: how far the first answer moves a rating
K_DECAY = 0.05  # b: how fast the steps shrink as answers accumulate
OVERALL = ""  # the member rating row that is not a topic's


@dataclass(frozen=True)
class Rating:
    """An Elo rating (a member's skill or a question's difficulty, in logits) and the answers it rests on."""

    value: float
    answers: int


def chance(skill: float, difficulty: float) -> float:
    """The predicted chance of a right answer."""
    x = max(-30.0, min(30.0, skill - difficulty))
    return 1.0 / (1.0 + math.exp(-x))


def step(answers: int) -> float:
    """The uncertainty function K(n)."""
    return K_START / (1.0 + K_DECAY * max(0, answers))


def start_difficulty(level: int) -> float:
    return START_DIFFICULTY.get(level, 0.0)


@dataclass(frozen=True)
class Update:
    """What one answer changes: the deltas of the member's overall skill, their topic offset,
    and the question's difficulty, and the chance that was predicted before."""

    predicted: float
    skill: float
    topic: float
    difficulty: float


def update(member: Rating, topic: Rating, question: Rating, correct: bool) -> Update:
    predicted = chance(member.value + topic.value, question.value)
    surprise = (1.0 if correct else 0.0) - predicted
    return Update(
        predicted=predicted,
        skill=step(member.answers) * surprise,
        topic=step(topic.answers) * surprise,
        difficulty=-step(question.answers) * surprise,
    )


def nearest(
    candidates: Iterable[tuple[str, float]], skill_of: dict[str, float], target: float, tie: dict[str, str]
) -> str | None:
    """The candidate (id, difficulty) whose predicted chance is nearest `target`; `skill_of`
    gives the member's skill for the candidate (overall + topic), `tie` a per-id tie-break key."""
    best: tuple[float, str, str] | None = None
    for qid, difficulty in candidates:
        distance = abs(chance(skill_of.get(qid, 0.0), difficulty) - target)
        key = (round(distance, 6), tie.get(qid, qid), qid)
        if best is None or key < best:
            best = key
    return None if best is None else best[2]


LEVELS = ((-1.0, "beginner"), (0.0, "learning"), (1.0, "practitioner"), (math.inf, "expert"))
# A level is named, and a chance of a right answer estimated, only after this many answers on a
# topic: one right answer is no "expert", one miss no "about 7% right".
MIN_LEVEL_ANSWERS = 5


def level_name(skill: float) -> str:
    """A word for a skill in logits (against a level-2 question, difficulty 0)."""
    return next(name for limit, name in LEVELS if skill < limit)
