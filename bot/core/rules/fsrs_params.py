"""A community's FSRS parameters, pure: the review log built from its answers, how many of its
reviews the optimizer counts, the log loss of parameters on a log, and which parameters are in
use. The fit itself (fsrs.Optimizer, torch) runs on the demo worker: bot/worker/fsrs_fit.py."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from fsrs import Rating
from fsrs.scheduler import DEFAULT_PARAMETERS, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS

from bot.core.records import AnsweredReview, FsrsFit
from bot.core.rules.confidence_rules import grade

Parameters = tuple[float, ...]

# fsrs.Optimizer (6.3.2) keeps the defaults below one mini-batch of counted reviews (its
# `mini_batch_size`), and reads only the first 64 reviews of each card (`max_seq_len`).
MIN_REVIEWS = 512
MAX_PER_CARD = 64
DEFAULTS: Parameters = tuple(float(w) for w in DEFAULT_PARAMETERS)


@dataclass(frozen=True)
class LoggedReview:
    """One review of a card for FSRS: the card, its rating (1 Again .. 4 Easy) and when (UTC)."""

    card: int
    rating: int
    at: datetime


@dataclass(frozen=True)
class FsrsInUse:
    """The parameters a community's scheduler uses: None means the package's defaults; else
    fitted at `fitted_at` from `reviews` counted reviews."""

    parameters: Parameters | None = None
    fitted_at: datetime | None = None
    reviews: int = 0


def rating_of(answer: AnsweredReview) -> Rating:
    """The grade the answer gave its card, as bot.core.services.confidence grades it: wrong -> Again,
    right and unsure -> Hard, right and sure -> Good (Easy when fast on a review), right
    without a confidence -> Good."""
    sure = None if answer.confidence is None else answer.confidence == "sure"
    seconds = None if answer.opened_at is None else (answer.answered_at - answer.opened_at).total_seconds()
    return grade(answer.correct, sure, answer.kind, seconds)


def review_log(answers: Iterable[AnsweredReview]) -> tuple[LoggedReview, ...]:
    """The review log the bot keeps implicitly: a card per member and question, starting at its
    first miss (Again), then one review per answer to a review round of that question, in time
    order. Answers before the first miss and later daily or /quiz answers change no card."""
    by_card: dict[tuple[int, str], list[AnsweredReview]] = defaultdict(list)
    for answer in answers:
        by_card[(answer.member_id, answer.question_id)].append(answer)
    log: list[LoggedReview] = []
    for index, key in enumerate(sorted(by_card)):
        started = False
        for answer in sorted(by_card[key], key=lambda a: a.answered_at):
            if not started:
                if answer.correct:
                    continue
                started = True
            elif answer.kind != "review":
                continue
            rating = rating_of(answer)
            log.append(LoggedReview(card=index + 1, rating=int(rating), at=_utc(answer.answered_at)))
    return tuple(log)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def by_card(log: Iterable[LoggedReview]) -> dict[int, list[LoggedReview]]:
    """Each card's reviews in time order."""
    cards: dict[int, list[LoggedReview]] = defaultdict(list)
    for review in log:
        cards[review.card].append(review)
    for reviews in cards.values():
        reviews.sort(key=lambda r: r.at)
    return dict(cards)


def counted_reviews(log: Iterable[LoggedReview]) -> int:
    """The reviews fsrs.Optimizer learns from: each card's first 64, less its first review and
    those within a day of the one before."""
    counted = 0
    for reviews in by_card(log).values():
        head = reviews[:MAX_PER_CARD]
        counted += sum(1 for before, now in zip(head, head[1:], strict=False) if (now.at - before.at).days > 0)
    return counted


def valid(parameters: Sequence[float]) -> bool:
    """Whether a parameter list is one the fsrs scheduler accepts (the right length, in bounds)."""
    return len(parameters) == len(DEFAULTS) and all(
        isinstance(w, (int, float)) and math.isfinite(w) and low <= w <= high
        for w, low, high in zip(parameters, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS, strict=False)
    )


def encode_log(log: Iterable[LoggedReview]) -> list[list[int | str]]:
    """The log as JSON-ready rows [card, rating, ISO time], as the worker receives it."""
    return [[r.card, r.rating, r.at.isoformat()] for r in log]


def decode_parameters(text: str | None) -> Parameters | None:
    """Stored parameters (a JSON list), or None for the defaults (also for anything unusable)."""
    if not text:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    if not isinstance(found, list) or not valid(found):
        return None
    return tuple(float(w) for w in found)


@dataclass(frozen=True)
class FitRequest:
    """A community's review log, ready for the worker, and how many reviews the fit counts."""

    name: str
    log: tuple[LoggedReview, ...]
    counted: int

    @property
    def needed(self) -> int:
        """Counted reviews still missing before the fit can run (0: it can)."""
        return max(0, MIN_REVIEWS - self.counted)


def in_use(row: FsrsFit | None) -> FsrsInUse:
    """What the stored fit means; no row: the defaults."""
    if row is None:
        return FsrsInUse()
    parameters = decode_parameters(row.parameters)
    return FsrsInUse(parameters, row.fitted_at if parameters else None, row.reviews if parameters else 0)
