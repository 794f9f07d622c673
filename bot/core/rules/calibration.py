"""Calibration: does a member's "sure" mean anything? Pure rules over counts of answers given
with a confidence.

The figure is the Brier score of the stated confidences, sure counted as a 90% chance of being
right and unsure as 50%: the mean of (p - outcome)^2, 0 is perfect, 0.25 is what "unsure"
always scores, and a member right 90% of the time they are sure scores 0.09 on those answers.
It is shown once MIN_ANSWERS answers carry a confidence; before that only the accuracies."""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.values import Calibration, StatsLine

SURE_P = 0.9
UNSURE_P = 0.5
MIN_ANSWERS = 10


def line(counts: Mapping[tuple[str, bool], int], confidence: str) -> StatsLine:
    right, wrong = counts.get((confidence, True), 0), counts.get((confidence, False), 0)
    return StatsLine(right + wrong, right)


def brier(sure: StatsLine, unsure: StatsLine) -> float:
    """The mean squared gap between the stated chance and the outcome (1 right, 0 wrong)."""
    total = 0.0
    for stats, p in ((sure, SURE_P), (unsure, UNSURE_P)):
        total += stats.correct * (1 - p) ** 2 + (stats.answered - stats.correct) * p**2
    answered = sure.answered + unsure.answered
    return total / answered if answered else 0.0


def calibration(counts: Mapping[tuple[str, bool], int]) -> Calibration | None:
    """From (confidence, correct) -> answers: None when no answer carries a confidence."""
    sure, unsure = line(counts, "sure"), line(counts, "unsure")
    answered = sure.answered + unsure.answered
    if answered == 0:
        return None
    if answered < MIN_ANSWERS:
        return Calibration(sure, unsure, None, MIN_ANSWERS - answered)
    return Calibration(sure, unsure, round(brier(sure, unsure), 3))
