"""Practice and review: /review's due reviews, the Anki deck of misses, /quiz refused, and each
community's FSRS fit."""

from __future__ import annotations

from datetime import datetime

from bot.core.values import NothingDue
from bot.core.wording.common import count

# --------------------------------------------------------------- reviews


def nothing_due(card: NothingDue) -> str:
    when = f" The next one is due {card.next_due:%Y-%m-%d %H:%M} UTC." if card.next_due else ""
    return f"No reviews are due.{when}"


# ----------------------------------------------------------- Anki export

START_REVIEW = "Start a review"
ANKI_NOTHING_MISSED = "You have not missed a question here yet, so there is nothing to put in an Anki deck."
ANKI_HOW = "In Anki: File > Import. Importing a newer export updates these cards instead of adding copies."
ANKI_EXPORT_OPTION = "export: your missed questions as an Anki deck (.apkg)"


def anki_deck_line(kind: str, notes: int) -> str:
    """What an Anki deck holds: `kind` "misses" (a member's) or "bank" (a community's revealed questions)."""
    what = count(notes, "missed question" if kind == "misses" else "revealed question")
    return f"Your Anki deck: {what}, each with every choice's why and its references."


def anki_attached(kind: str, notes: int) -> str:
    return f"{anki_deck_line(kind, notes)} {ANKI_HOW}"


def anki_saved(kind: str, notes: int, path: str) -> str:
    return f"{anki_deck_line(kind, notes)} Saved to {path}\n{ANKI_HOW}"


def anki_sent(kind: str, notes: int) -> str:
    """Slack: the deck went to the member's messages with the app (a file cannot be ephemeral)."""
    what = count(notes, "missed question" if kind == "misses" else "revealed question")
    return f"Your Anki deck ({what}) is in your messages with me. {ANKI_HOW}"


# ------------------------------------------ FSRS fitted to the community

# FSRS fitted to the community (bot/core/services/fsrs_community.py, `studybot fsrs fit`, /config).
FSRS_DEFAULTS = "defaults"
FSRS_FITTED_ON = "fitted on {date} from {reviews:,} reviews"
FSRS_TOO_FEW = (
    "Not enough reviews to fit FSRS yet: {counted:,} of the {minimum:,} the fit needs (a review counts "
    "when it comes a day or more after the card's previous one); {more:,} more needed. "
    "The community keeps the default parameters."
)
FSRS_KEPT = (
    "The fit kept the default parameters ({reviews:,} reviews were not enough for the optimizer); "
    "the community keeps the parameters it had."
)
FSRS_FITTED = (
    "Fitted FSRS to {reviews:,} reviews of {community} in {seconds:.1f} s on the worker: its reviews "
    "are scheduled with these parameters from now on."
)
FSRS_FIT_FAILED = "The fit did not run, so {community} keeps its parameters: {reason}"


def fsrs_in_use(parameters: bool, fitted_at: datetime | None, reviews: int) -> str:
    """What /config says about the FSRS parameters a community uses."""
    if not parameters or fitted_at is None:
        return FSRS_DEFAULTS
    return FSRS_FITTED_ON.format(date=f"{fitted_at:%Y-%m-%d}", reviews=reviews)


# --------------------------------------------------------- /quiz refused


def no_questions_on(topic: str | None) -> str:
    """/quiz [TOPIC] with no question to ask (`topic` None: the bank is empty)."""
    return f"The bank has no questions on {topic} yet."


def seen_every_question(days: int) -> str:
    """/quiz without a topic when the member has seen the whole pool lately."""
    return f"You have seen every question here in the last {days} days: try /review, or a topic with /quiz TOPIC."


# ------------------------------------------------------ FSRS fit refused

FSRS_PARAMETERS_UNUSABLE = "The worker returned FSRS parameters the scheduler cannot use; nothing was changed."


def no_community_yet(platform: str, community_id: str) -> str:
    return f"There is no community {platform}/{community_id} yet."
