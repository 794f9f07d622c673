"""Text rules shared by every platform: safe display names and reading a text answer."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.bank import normalise
from bot.core.values import LETTERS

MAX_TEXT = 2000
MAX_NAME = 80
LETTER_RE = re.compile(r"^\s*([a-eA-E])\s*[).]?\s*$")
ANY_LETTER_RE = re.compile(r"^\s*[a-zA-Z]\s*[).]?\s*$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def clean_name(name: str) -> str:
    """A display name safe to store and show: no control or direction characters, bounded."""
    cleaned = " ".join(_CONTROL_RE.sub(" ", name).split())[:MAX_NAME]
    return cleaned or "someone"


def looks_like_letter(text: str) -> bool:
    return LETTER_RE.match(text) is not None


def looks_like_any_letter(text: str) -> bool:
    """One letter of the alphabet (`z`, `E)`): meant as an answer, whether or not it is a choice."""
    return ANY_LETTER_RE.match(text) is not None


def parse_choice(text: str, choices: Sequence[str]) -> int | None:
    """The choice a text reply means: a letter (a-e, any case, optional ')' or '.') or a
    choice's full text ignoring case, spaces and punctuation; None when it is neither.
    `choices` are in the order the user was shown them, so the letter is the shown one."""
    if len(text) > MAX_TEXT:
        return None
    match = LETTER_RE.match(text)
    if match:
        index = LETTERS.index(match.group(1).lower())
        return index if index < len(choices) else None
    wanted = normalise(text)
    if not wanted:
        return None
    for index, choice in enumerate(choices):
        if normalise(choice) == wanted:
            return index
    return None
