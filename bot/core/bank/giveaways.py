"""The give-away rules of `questions lint`: what lets a reader pick the key without knowing the
answer. Per question: a correct choice much longer than the distractors, a hint that names the
key, a folded line that broke a piece of code. Across the bank: how often the key is the
longest choice, and how evenly its length rank spreads. A give-away never stops the bot's
loader; CI's lint refuses it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.bank.schema import Loc
from bot.core.bank.values import Choice, Question
from bot.core.bank.words import terms

# Give-aways: the correct choice may be at most this many times the distractors' mean length,
# and the strictly longest choice in at most this share of the bank (chance is 1 in 3 to 5).
MAX_CORRECT_LENGTH_RATIO = 1.3
MAX_LONGEST_CORRECT_SHARE = 0.30
# The length tell, one place on: across the bank no length rank of the correct choice (longest,
# second longest, ...) may hold more than this share (chance is about 1 in 4). Banks smaller
# than MIN_LENGTH_RANK_BANK are not held to it: a handful of questions cannot spread evenly.
MAX_LENGTH_RANK_SHARE = 0.30
MIN_LENGTH_RANK_BANK = 20

# A YAML fold (`>-`) turns a line break into a space: `use_reentrant=` + newline + `False`
# renders as "use_reentrant= False", `partial(` + newline + `f` as "partial( f".
_FOLD_RE = re.compile(r"[A-Za-z0-9_]+= [A-Za-z0-9_]+|[A-Za-z0-9_]+\( [A-Za-z0-9_]+")


def style_problems(question: Question) -> list[tuple[Loc, str]]:
    """The give-aways of one well-formed question, each where it is as a schema location (()
    the question itself): the key's length at its text, the hint at the hint, a folded line at
    the question (wherever the fold is)."""
    found: list[tuple[Loc, str]] = []
    length = length_giveaway(question.choices)
    if length:
        found.append((("choices", question.answer_index, "text"), length))
    if question.hint is not None:
        giveaway = hint_giveaway(question.hint, question.prompt, question.choices)
        if giveaway:
            found.append((("hint",), giveaway))
    found.extend(((), fold) for fold in fold_problems(question))
    return found


def length_giveaway(choices: Sequence[Choice]) -> str | None:
    """Why the correct choice stands out by its length (a give-away), or None."""
    right = next(len(c.text) for c in choices if c.correct)
    wrong = [len(c.text) for c in choices if not c.correct]
    mean = sum(wrong) / len(wrong)
    if right <= MAX_CORRECT_LENGTH_RATIO * mean:
        return None
    return (
        f"the correct choice is {right} characters, {right / mean:.2f}x the distractors' mean of "
        f"{mean:.0f}; the limit is {MAX_CORRECT_LENGTH_RATIO}x (its length gives it away)"
    )


def fold_problems(question: Question) -> list[str]:
    """A sentence per text of the question where a YAML fold broke a piece of code in two."""
    shown = [("prompt", question.prompt), ("trap", question.trap), ("explain", question.explain)]
    shown += [("hint", question.hint)]
    shown += [("a why", c.why) for c in question.choices] + [("a choice", c.text) for c in question.choices]
    found = []
    for what, text in shown:
        fold = _FOLD_RE.search(text or "")
        if fold:
            found.append(f"{what} has '{fold.group(0)}': a folded line broke a piece of code; keep it on one line")
    return found


def distinctive_terms(prompt: str, choices: Sequence[Choice]) -> set[str]:
    """The correct choice's words (as terms() counts them) that no distractor and not the prompt
    has: what would point at the key if anything else repeated it."""
    right = next((c for c in choices if c.correct), None)
    if right is None:
        return set()
    others: set[str] = set(terms(prompt))
    for choice in choices:
        if not choice.correct:
            others |= set(terms(choice.text))
    return set(terms(right.text)) - others


def hint_giveaway(hint: str, prompt: str, choices: Sequence[Choice]) -> str | None:
    """Why a hint gives the key away, or None: it uses a word only the correct choice has, or it
    names every word of the correct choice while naming no distractor whole."""
    said = set(terms(hint))
    leaked = sorted(distinctive_terms(prompt, choices) & said)
    if leaked:
        words = ", ".join(f"'{w}'" for w in leaked)
        return f"the hint uses {words}, which only the correct choice has (it gives the key away)"
    right = next((c for c in choices if c.correct), None)
    key = set(terms(right.text)) if right is not None else set()
    named = [set(terms(c.text)) <= said for c in choices if not c.correct]
    if key and key <= said and not any(named):
        return "the hint names the correct choice and no other (it gives the key away)"
    return None


def correct_is_longest(question: Question) -> bool:
    """Whether the correct choice is strictly longer than every other choice."""
    right = len(question.choices[question.answer_index].text)
    return all(len(c.text) < right for c in question.choices if not c.correct)


def longest_correct_share(questions: Sequence[Question]) -> tuple[int, int]:
    """(questions whose correct choice is the strictly longest, questions)."""
    return sum(correct_is_longest(q) for q in questions), len(questions)


def key_length_ranks(question: Question) -> dict[int, float]:
    """Where the correct choice ranks by length (1 = longest), as weights summing to 1. A tie
    shares the weight equally: a key as long as one other choice, with one longer than both,
    counts half to rank 2 and half to rank 3 (its length tells nothing between them)."""
    right = len(question.choices[question.answer_index].text)
    others = [len(c.text) for c in question.choices if not c.correct]
    longer = sum(n > right for n in others)
    tied = sum(n == right for n in others)
    return {longer + 1 + i: 1 / (tied + 1) for i in range(tied + 1)}


def length_rank_distribution(questions: Sequence[Question]) -> dict[int, float]:
    """How many questions have their correct choice at each length rank (1 = the longest),
    ties shared as in key_length_ranks(); the values sum to the number of questions."""
    counts: dict[int, float] = {}
    for question in questions:
        for rank, weight in key_length_ranks(question).items():
            counts[rank] = counts.get(rank, 0.0) + weight
    return dict(sorted(counts.items()))


def length_rank_summary(questions: Sequence[Question]) -> str:
    """One line for `questions lint`: each rank's count and share of the bank."""
    total = len(questions)
    parts = [
        f"{_rank_name(rank)} {_count(count)} ({count / total:.1%})"
        for rank, count in length_rank_distribution(questions).items()
    ]
    return (
        f"correct choice by length rank (ties shared): {', '.join(parts)}; "
        f"the limit is {MAX_LENGTH_RANK_SHARE:.0%} per rank"
    )


def _rank_name(rank: int) -> str:
    suffix = {2: "nd", 3: "rd"}.get(rank, "th")
    return "longest" if rank == 1 else f"{rank}{suffix} longest"


def _count(count: float) -> str:
    return f"{round(count, 1):g}"


def length_rank_problems(questions: Sequence[Question], where: str) -> list[str]:
    """A problem per length rank holding more than MAX_LENGTH_RANK_SHARE of the questions."""
    total = len(questions)
    if total < MIN_LENGTH_RANK_BANK:
        return []
    return [
        f"{where}: the correct choice is the {_rank_name(rank)} in {_count(count)} of "
        f"{total} questions ({count / total:.1%}, ties shared); the limit is {MAX_LENGTH_RANK_SHARE:.0%} "
        "per rank (its length rank gives it away)"
        for rank, count in length_rank_distribution(questions).items()
        if count / total > MAX_LENGTH_RANK_SHARE
    ]
