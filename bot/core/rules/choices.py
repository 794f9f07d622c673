"""The two codecs every platform shares: the order a round shows its choices in, and the
id a button carries (`round:choice`), so Discord, Slack and the console speak one language."""

from __future__ import annotations

import random
import re

# A button's id: "sb1:a:<round>:<shown choice>". Discord allows 100 characters in a
# custom_id and Slack 255 in an action_id; these stay under 40.
ANSWER_PREFIX = "sb1:a:"
MAX_ID = 100
_ANSWER_RE = re.compile(r"sb1:a:([1-9][0-9]{0,17}):([0-4])")
_ORDER_RE = re.compile(r"[0-4](,[0-4]){0,4}")
_RANDOM = random.SystemRandom()


def encode_answer(round_id: int, choice: int) -> str:
    """The id of the button for shown choice `choice` (0-4) of round `round_id`."""
    if round_id < 1 or not 0 <= choice <= 4:
        raise ValueError(f"no button for round {round_id}, choice {choice}")
    return f"{ANSWER_PREFIX}{round_id}:{choice}"


def decode_answer(text: object) -> tuple[int, int] | None:
    """(round id, shown choice) from a button id, or None for anything that is not exactly
    one of ours: another prefix, a sign, a leading zero, extra characters, too long."""
    if not isinstance(text, str) or len(text) > MAX_ID:
        return None
    match = _ANSWER_RE.fullmatch(text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def draw_order(count: int, rng: random.Random | None = None) -> tuple[int, ...]:
    """A fresh order for `count` choices: position i shows the bank's choice order[i]."""
    order = list(range(count))
    (rng or _RANDOM).shuffle(order)
    return tuple(order)


def format_order(order: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in order)


def parse_order(stored: str | None, count: int) -> tuple[int, ...]:
    """The stored order, or the bank's own order when none was stored (older rounds) or the
    stored one no longer fits the question (its choices were edited since)."""
    if stored and _ORDER_RE.fullmatch(stored):
        order = tuple(int(i) for i in stored.split(","))
        if sorted(order) == list(range(count)):
            return order
    return tuple(range(count))
