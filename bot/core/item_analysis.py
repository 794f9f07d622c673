"""Item analysis: what the answers people gave say about each question of the bank.

Per question: how many answered, the share right, the discrimination (the point-biserial
correlation of being right with the member's accuracy on the other questions, the rest-score)
and how often each choice was picked; and flags an editor should look at:

- wrong-key: few are right and the strongest members (the top third by rest-score) mostly
  pick one particular wrong choice: the key is likely wrong, or the prompt misleads;
- too-easy: nearly everyone is right, so the question teaches little;
- dead-distractor: a wrong choice nobody picks is no distractor at all;
- unanswered: a question in the bank that nobody has answered yet.

Pure: plain rows in, plain values out. Choices are indexes in the bank file's order (the store
maps a shuffled display back before the rows get here).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from bot.core.bank import Question
from bot.core.records import AnswerRow

__all__ = ["AnswerRow", "ItemStats", "analyse", "point_biserial"]

MIN_ANSWERS = 10  # no flag (but unanswered) before a question has this many answers
TOO_EASY_SHARE = 0.95  # share right at or above which a question is too easy
WRONG_KEY_MAX_SHARE = 0.4  # "few right": share right at or below this
WRONG_KEY_TOP_SHARE = 0.5  # the top third picks one wrong choice at least this often
WRONG_KEY_MIN_TOP = 3  # observations in the top third needed to judge the strongest members

WRONG_KEY = "wrong-key"
TOO_EASY = "too-easy"
DEAD_DISTRACTOR = "dead-distractor"
UNANSWERED = "unanswered"
FLAGS = (WRONG_KEY, TOO_EASY, DEAD_DISTRACTOR, UNANSWERED)


@dataclass(frozen=True)
class ItemStats:
    question_id: str
    key: int  # the correct choice's index in the bank file
    answers: int
    share_correct: float | None  # None without answers
    discrimination: float | None  # None when it cannot be computed (too few, no spread)
    pick_rates: tuple[float, ...]  # per choice, file order; zeros without answers
    flags: tuple[str, ...]
    suspect_choice: int | None = None  # wrong-key: the wrong choice the strongest members pick
    dead_choices: tuple[int, ...] = ()  # dead-distractor: the choices nobody picks
    # The question's difficulty rating (logits; bot/core/rating.py), the same number adaptive
    # practice picks by: None when the caller has no ratings.
    difficulty: float | None = None

    def describe(self, texts: Sequence[str] = ()) -> list[str]:
        """One plain sentence per flag, for an admin. With the choices' `texts` (file order),
        choices are named by their text, since every round shows them in its own order."""

        def letter(index: int) -> str:
            if 0 <= index < len(texts):
                return f'"{texts[index][:40]}"'
            return _file_letter(index)

        lines = []
        for flag in self.flags:
            if flag == WRONG_KEY and self.suspect_choice is not None:
                lines.append(
                    f"{self.question_id}: likely wrong key: {_pct(self.share_correct)} right, and the strongest "
                    f"members mostly pick {letter(self.suspect_choice)} instead of {letter(self.key)}"
                )
            elif flag == TOO_EASY:
                lines.append(f"{self.question_id}: too easy: {_pct(self.share_correct)} of {self.answers} right")
            elif flag == DEAD_DISTRACTOR:
                choices = ", ".join(letter(i) for i in self.dead_choices)
                lines.append(f"{self.question_id}: nobody picks {choices} in {self.answers} answers")
            elif flag == UNANSWERED:
                lines.append(f"{self.question_id}: nobody has answered it yet")
        return lines


def _file_letter(index: int) -> str:
    return chr(ord("A") + index)


letter = _file_letter  # the CLI's table names choices by their letter in the bank file


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def point_biserial(right: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Pearson correlation of a 0/1 outcome with a score; None without spread in either."""
    n = len(right)
    if n < 2 or n != len(scores):
        return None
    xs = [1.0 if r else 0.0 for r in right]
    mean_x, mean_y = sum(xs) / n, sum(scores) / n
    cov = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, scores, strict=True))
    var_x = sum((x - mean_x) ** 2 for x in xs)
    var_y = sum((y - mean_y) ** 2 for y in scores)
    if var_x == 0 or var_y < 1e-12:
        return None
    return cov / math.sqrt(var_x * var_y)


def analyse(
    rows: Iterable[AnswerRow],
    questions: Sequence[Question],
    min_answers: int = MIN_ANSWERS,
    ratings: Mapping[str, float] | None = None,
) -> list[ItemStats]:
    """Stats and flags for every question of the bank, in bank order. Answers to questions no
    longer in the bank are left out, of the items and of the members' accuracy alike.
    `ratings`: each question's difficulty rating (the one practice uses), carried as is."""
    bank = {q.id: q for q in questions}
    kept = [r for r in rows if r.question_id in bank]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # member -> [right, answered]
    per_item: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # (member, question) -> same
    by_question: dict[str, list[AnswerRow]] = defaultdict(list)
    for row in kept:
        totals[row.member][0] += row.correct
        totals[row.member][1] += 1
        per_item[(row.member, row.question_id)][0] += row.correct
        per_item[(row.member, row.question_id)][1] += 1
        by_question[row.question_id].append(row)
    items = [_item(q, by_question.get(q.id, []), totals, per_item, min_answers) for q in questions]
    if ratings is None:
        return items
    return [replace(item, difficulty=ratings.get(item.question_id)) for item in items]


def _item(
    question: Question,
    rows: list[AnswerRow],
    totals: dict[str, list[int]],
    per_item: dict[tuple[str, str], list[int]],
    min_answers: int,
) -> ItemStats:
    key = question.answer_index
    width = len(question.choices)
    if not rows:
        return ItemStats(question.id, key, 0, None, None, (0.0,) * width, (UNANSWERED,))
    picks = [0] * width
    for row in rows:
        if 0 <= row.choice < width:
            picks[row.choice] += 1
    answers = len(rows)
    share = sum(r.correct for r in rows) / answers
    rates = tuple(n / answers for n in picks)

    # The rest-score: each member's accuracy on every other question.
    observed: list[tuple[float, AnswerRow]] = []
    for row in rows:
        right_all, count_all = totals[row.member]
        right_here, count_here = per_item[(row.member, question.id)]
        if count_all > count_here:
            observed.append(((right_all - right_here) / (count_all - count_here), row))
    discrimination = point_biserial([r.correct for _, r in observed], [s for s, _ in observed])

    flags: list[str] = []
    suspect: int | None = None
    dead: tuple[int, ...] = ()
    if answers >= min_answers:
        suspect = _suspect_choice(observed, key, width) if share <= WRONG_KEY_MAX_SHARE else None
        if suspect is not None:
            flags.append(WRONG_KEY)
        if share >= TOO_EASY_SHARE:
            flags.append(TOO_EASY)
        dead = tuple(i for i in range(width) if i != key and picks[i] == 0)
        if dead:
            flags.append(DEAD_DISTRACTOR)
    return ItemStats(question.id, key, answers, share, discrimination, rates, tuple(flags), suspect, dead)


def _suspect_choice(observed: list[tuple[float, AnswerRow]], key: int, width: int) -> int | None:
    """The wrong choice that most of the strongest third picks, ahead of the key, if any."""
    ranked = sorted(observed, key=lambda item: -item[0])
    top = ranked[: math.ceil(len(ranked) / 3)]
    if len(top) < WRONG_KEY_MIN_TOP:
        return None
    picks = [0] * width
    for _, row in top:
        if 0 <= row.choice < width:
            picks[row.choice] += 1
    best = max((i for i in range(width) if i != key), key=lambda i: picks[i])
    if picks[best] >= WRONG_KEY_TOP_SHARE * len(top) and picks[best] > picks[key]:
        return best
    return None
