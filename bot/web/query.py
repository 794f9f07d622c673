"""The web page's query parameters, read strictly: numbers are ASCII digits within bounds
(`"²".isdigit()` and `int("٣")` accept what no link of ours holds), weeks are ISO weeks
within years the bot can count back and forth from, topics are the bank's. A bad value is an
`InvalidInput` with one sentence, which the page answers with 400: never a 500."""

from __future__ import annotations

import re
from datetime import date

from bot.core.bank import TOPICS
from bot.core.errors import InvalidInput
from bot.core.rules.numbers import ascii_int

# A page number: at most this (the board and the bank are 100 rows a page).
MAX_PAGE = 100_000
# Weeks a board can show: the years between these (previous and next week stay in range).
FIRST_YEAR, LAST_YEAR = 2000, 2999
_WEEK = re.compile(r"([0-9]{4})-[Ww]([0-9]{2})")


def ascii_number(text: str, low: int, high: int) -> int | None:
    """`text` as a whole number from low to high, written in ASCII digits only (at most 12);
    else None."""
    number = ascii_int(text, max_digits=12)
    return number if number is not None and low <= number <= high else None


def page_number(value: str | None) -> int:
    """`?page=N`: 1 when absent; N from 1 to MAX_PAGE in ASCII digits, else InvalidInput."""
    if value is None or value == "":
        return 1
    number = ascii_number(value, 1, MAX_PAGE)
    if number is None:
        raise InvalidInput(f"page must be a whole number from 1 to {MAX_PAGE:,}, such as page=2.")
    return number


def week_scope(value: str | None) -> str | None:
    """`?week=`: None (this week) when absent, "all", or an ISO week such as 2026-W48 in
    years FIRST_YEAR to LAST_YEAR; else InvalidInput."""
    if value is None or value == "":
        return None
    if value.lower() == "all":
        return "all"
    found = _WEEK.fullmatch(value)
    if found is not None:
        year, week = int(found.group(1)), int(found.group(2))
        if FIRST_YEAR <= year <= LAST_YEAR:
            try:
                date.fromisocalendar(year, week, 1)
            except ValueError:
                pass
            else:
                return f"{year}-W{week:02d}"
    raise InvalidInput(f"week must be all or an ISO week such as 2026-W48, in the years {FIRST_YEAR} to {LAST_YEAR}.")


def topic(value: str | None) -> str | None:
    """`?topic=`: None (every topic) when absent, else one of the bank's topics."""
    if value is None or value == "":
        return None
    if value not in TOPICS:
        raise InvalidInput(f"topic must be one of {', '.join(TOPICS)}.")
    return value


def job_number(value: str) -> int | None:
    """A demo job's number in a path (ASCII digits, at most 12 of them), else None (a 404)."""
    return ascii_number(value, 1, 10**12 - 1)
