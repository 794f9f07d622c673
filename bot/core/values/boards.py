"""Scores and leaderboards: a member's /score with its streak repair and calibration, the
weekly and all-time boards, and the Home a member sees after an answer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .notices import Notice
from .practice import TopicLevel
from .rounds import AlreadyAnswered, AnswerFeedback, RoundClosed


@dataclass(frozen=True)
class StatsLine:
    """Answers and right answers of one kind (daily, practice...)."""

    answered: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass(frozen=True)
class ScoreCard:
    """A member's /score: this week's points and rank, all-time points, and accuracy by kind."""

    user: str
    week: str
    week_points: int
    week_rank: int | None
    total_points: int
    daily: StatsLine
    practice: StatsLine
    streak: int
    best_streak: int
    reviews_due: int
    link: str | None = None  # a signed, expiring link to the member's web page, when one is set up
    levels: tuple[TopicLevel, ...] = ()  # adaptive practice: the member's level per topic answered
    calibration: Calibration | None = None  # None until they said how sure they were at least once
    repaired: tuple[str, ...] = ()  # streak repair: the local dates of the days earned back, newest first
    repair: RepairOffer | None = None  # the missed day that broke the streak, still to be earned back


@dataclass(frozen=True)
class RepairOffer:
    """A missed daily round that broke a member's streak and can be earned back by clearing their
    due reviews (`due` now) before `deadline`; `blocked_until`: the once-a-week rule forbids it
    until then (after the deadline, when the window ends first)."""

    missed: str  # the round's local date
    deadline: datetime
    due: int
    blocked_until: datetime | None
    timezone: str


@dataclass(frozen=True)
class Calibration:
    """Accuracy when sure and when unsure, and the Brier score of those confidences (sure
    counts as 90%, unsure as 50%; 0 is perfect), None below `needed` more answers
    (bot/core/rules/calibration.py)."""

    sure: StatsLine
    unsure: StatsLine
    brier: float | None
    needed: int = 0  # answers with a confidence still needed before the score is shown


@dataclass(frozen=True)
class LeaderboardRow:
    """One line of a leaderboard."""

    rank: int
    user: str
    points: int


@dataclass(frozen=True)
class LeaderboardCard:
    """A community's leaderboard for a week or for all time."""

    community: str
    scope: str  # an ISO week such as "2026-W48", or "all"
    rows: tuple[LeaderboardRow, ...]
    flagged: tuple[str, ...] = ()  # weekly post: question ids the item analysis flags, for admins


@dataclass(frozen=True)
class HomeCard:
    """A member's own page (Slack's App Home): their score and this week's leaderboard."""

    score: ScoreCard
    board: LeaderboardCard


@dataclass(frozen=True)
class AnswerWithHome:
    """An answer's feedback and, when it was scored (a first answer), the member's HomeCard
    as it is after it (Slack publishes it after the feedback); None for a repeat, a closed
    round, a Notice (a letter the round does not show) or a Home that could not be read."""

    feedback: AnswerFeedback | AlreadyAnswered | RoundClosed | Notice
    home: HomeCard | None
