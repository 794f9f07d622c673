"""Learning beyond points: how sure a member was and their calibration, levels by topic, streak
repair, and the guesses on a checkpoint demo."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bot.core.rules.rating import MIN_LEVEL_ANSWERS
from bot.core.values import AlreadyNoted, Calibration, ConfidenceNoted, RepairOffer, ScoreCard, StatsLine
from bot.core.wording.common import count, percent

# ------------------------------------------------- how sure, calibration

SURE_LABEL = "Sure"
UNSURE_LABEL = "Unsure"
ASK_SURE = "How sure were you? (It changes no points; it tunes your reviews.)"


SURE_WRONG = "You were sure: this one comes back tomorrow."
NO_ANSWER_TO_RATE = "You have no answer to that question, so there is nothing to say how sure you were of."


def noted(card: ConfidenceNoted) -> str:
    """The reply to "how sure": a confident wrong answer says when it comes back."""
    if card.sure and not card.correct:
        return SURE_WRONG
    how = "sure" if card.sure else "unsure"
    outcome = "" if not card.correct else (", and right" if card.sure else ", and right this time")
    text = f"Noted: you were {how}{outcome}."
    if card.grade is not None and card.due is not None:
        text += f" Your review was graded {card.grade}; it comes back {card.due:%Y-%m-%d %H:%M} UTC."
    return text


def already_noted(card: AlreadyNoted) -> str:
    how = "sure" if card.sure else "unsure"
    return f"Already recorded: you said you were {how} of your answer to #{card.number}, and that stands."


def calibration_lines(card: Calibration | None) -> list[str]:
    """/score's and the web pages' lines on calibration (none before any confidence was given)."""
    if card is None:
        return []

    def right(line: StatsLine) -> str:
        return f"{percent(line)} right" if line.answered else "none yet"

    lines = [f"When sure: {right(card.sure)}; when unsure: {right(card.unsure)}."]
    if card.brier is None:
        lines.append(f"Calibration shows after {count(card.needed, 'more answer')} with sure or unsure.")
    else:
        lines.append(f"Calibration (Brier score; 0 is perfect, 0.25 a coin toss): {card.brier:.3f}.")
    return lines


# ------------------------------------------------------- levels by topic


def level_line(level: Any) -> str:
    if level.name is None or level.chance is None:
        return f"{level.topic}: {count(level.answers, 'answer')} so far; a level shows after {MIN_LEVEL_ANSWERS}."
    return (
        f"{level.topic}: {level.name} (rating {level.rating:+.1f}, about {level.chance:.0%} right on a level-2 "
        f"question; {count(level.answers, 'answer')})"
    )


def levels_lines(levels: Iterable[Any]) -> list[str]:
    found = [level_line(level) for level in levels]
    return ["Your level by topic:", *found] if found else []


# --------------------------------------------------------- streak repair


def _local(moment: datetime, tz: str) -> str:
    """'Thu 3 Dec 09:00 Europe/Paris': a moment in the community's time zone."""
    local = moment.astimezone(ZoneInfo(tz))
    return f"{local:%a} {local.day} {local:%b %H:%M} {tz}"


def streak_repaired(missed: str) -> str:
    """A review answer that cleared the member's last due review earned their missed day back."""
    return (
        f"Your reviews are clear: the daily round of {missed} you missed counts for your streak again "
        "(one repair a week)."
    )


def repair_offer(offer: RepairOffer) -> str:
    """/score and the member's page: how the missed day that broke the streak can be earned back."""
    if offer.blocked_until is not None:
        return (
            f"You missed the daily round of {offer.missed}, which broke your streak. A streak can be "
            f"repaired once a week; the next repair is possible from {_local(offer.blocked_until, offer.timezone)}."
        )
    deadline = _local(offer.deadline, offer.timezone)
    if offer.due == 0:
        how = f"no review is due now; if one comes due before {deadline}, clearing it earns the day back."
    else:
        how = f"clear your {count(offer.due, 'due review')} (/review) by {deadline} to earn it back."
    return f"You missed the daily round of {offer.missed}, which broke your streak: {how}"


def repaired_days(days: tuple[str, ...]) -> str:
    return f"Repaired {count(len(days), 'day')} of your streak: {', '.join(days)}."


def streak_repair_lines(card: ScoreCard) -> list[str]:
    lines = [repair_offer(card.repair)] if card.repair is not None else []
    if card.repaired:
        lines.append(repaired_days(card.repaired[:5]))
    return lines


# ------------------------------------------------------- guess, then run

GUESS_BANDS = ("under 25%", "25-50%", "50-75%", "over 75%")
GUESS_INVITE = "Guess first: how much less peak memory will block checkpointing need than none?"
GUESS_COUNTED = "Your guess is in: {band}. The result names who guessed right."
GUESS_STANDS = "You guessed {band} already; your first guess stands."
GUESS_CLOSED = "Guesses closed when the first figure arrived; watch the result."
GUESS_NONE_OPEN = "No checkpoint demo here is taking guesses now; guesses open when /demo checkpoint is queued."
CONSOLE_GUESS_USAGE = "Guess with a number: " + ", ".join(f"guess {i + 1} ({b})" for i, b in enumerate(GUESS_BANDS))


def guess_counted(band: int) -> str:
    return GUESS_COUNTED.format(band=GUESS_BANDS[band])


def guess_stands(band: int) -> str:
    return GUESS_STANDS.format(band=GUESS_BANDS[band])


def guess_result(saving: float | None, band: int, winners: tuple[str, ...], guesses: int) -> str:
    """The result card's line on the guesses (the saving: 1 - block peak / none peak, in `band`)."""
    made = f"{guesses} guess" if guesses == 1 else f"{guesses} guesses"
    if saving is None:
        return f"{made} made, but this run measured no none and block peaks to judge them by."
    measured = f"Block checkpointing needed {saving:.0%} less peak memory than none ({GUESS_BANDS[band]})"
    if not winners:
        return f"{measured}: nobody guessed right ({made})."
    names = ", ".join(winners[:20]) + (f" and {len(winners) - 20} more" if len(winners) > 20 else "")
    return f"{measured}: guessed right by {names} ({len(winners)} of {made})."
