"""Whole numbers read from what people type (chat, commands, button ids): ASCII digits only.

`str.isdigit()` is true for "²" and "٣", and `int()` refuses the one and reads the other, so
a check with one and a parse with the other turns `repeat=²` into an incident. Every number a
member types goes through `ascii_int`."""

from __future__ import annotations


def ascii_int(text: str, max_digits: int = 18) -> int | None:
    """`text` as a whole number when it is 1 to `max_digits` ASCII digits 0-9 (no sign, no
    spaces, no other script's digits), else None."""
    if not text or len(text) > max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)
