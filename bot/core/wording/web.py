"""The web pages' own sentences (bot/web): the calibration section and a missing topic."""

from __future__ import annotations

# The web pages' calibration section (bot/web/templates/calibration.html).
CALIBRATION_NOTE = (
    "Sure counts as a 90% chance of being right and unsure as 50%; the Brier score is the mean squared gap "
    "between that chance and what happened: 0 is perfect, 0.25 is a coin toss."
)
CALIBRATION_NONE = "No answer with sure or unsure yet: say how sure you were after an answer."


def no_such_topic(topic: str) -> str:
    """A topic page for a topic the bank does not have."""
    return f"There is no topic '{topic[:40]}'."
