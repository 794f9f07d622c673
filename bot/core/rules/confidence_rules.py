"""How sure a member was, as rules: the Sure/Unsure buttons' ids, the words a text answer may
end in (`b sure`), and the FSRS grade an answer gives its card with its confidence (wrong ->
Again, right and unsure -> Hard, right and sure -> Easy when quick, else Good). The service
that records it is bot/core/services/confidence.py; the FSRS fit grades past answers the same way
(bot/core/rules/fsrs_params.py)."""

from __future__ import annotations

import re
from datetime import timedelta

from fsrs import Rating

CONFIDENCE_PREFIX = "sb1:cf:"
_CONFIDENCE_RE = re.compile(r"sb1:cf:([1-9][0-9]{0,17}):([su])")
WORDS = {"sure": True, "unsure": False}
# A right, sure answer to a review this soon after it was shown is graded Easy.
FAST = timedelta(seconds=20)


def encode_confidence(round_id: int, sure: bool) -> str:
    if round_id < 1:
        raise ValueError(f"no confidence button for round {round_id}")
    return f"{CONFIDENCE_PREFIX}{round_id}:{'s' if sure else 'u'}"


def decode_confidence(text: object) -> tuple[int, bool] | None:
    """(round id, sure) from a button id, or None for anything not exactly one of ours."""
    if not isinstance(text, str) or len(text) > 100:
        return None
    match = _CONFIDENCE_RE.fullmatch(text)
    if match is None:
        return None
    return int(match.group(1)), match.group(2) == "s"


def grade(correct: bool, sure: bool | None, kind: str, seconds: float | None = None) -> Rating:
    """The FSRS rating of an answer: `sure` None when no confidence was given."""
    if not correct:
        return Rating.Again
    if sure is None:
        return Rating.Good
    if not sure:
        return Rating.Hard
    if kind == "review" and seconds is not None and 0 <= seconds <= FAST.total_seconds():
        return Rating.Easy
    return Rating.Good


def split_confidence(text: str) -> tuple[str, bool | None]:
    """`b sure` -> ("b", True); a line without a trailing sure/unsure comes back as it was."""
    words = text.split()
    if len(words) >= 2 and words[-1].lower() in WORDS:
        return " ".join(words[:-1]), WORDS[words[-1].lower()]
    return text, None
