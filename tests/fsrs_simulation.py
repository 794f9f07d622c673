"""A seeded simulation of a community's review log, and the log loss that scores a fit on it,
for the fit's tests (tests/test_fsrs_fit.py) and bench/learning.py.

Members miss questions on random days; each miss starts a card that the bot schedules with
the default parameters, as it does before a fit, and the member reviews it on its due day or
a few days late. Whether they recall it follows FSRS with the community's true parameters (not
the defaults), and so does how their memory changes with each grade."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from fsrs import Card, Rating, Scheduler

from bot.core.rules.fsrs_params import DEFAULTS, LoggedReview, Parameters, by_card

START = datetime(2026, 1, 5, 18, 0, tzinfo=timezone.utc)

# A community whose members remember a question they missed better than a forgotten flashcard
# (they read every choice's why), forget more slowly after each review, and grow stability less.
# fmt: off
TRUE_PARAMETERS: Parameters = (
    1.2, 2.0, 3.5, 9.0,  # first stabilities after Again, Hard, Good, Easy (days)
    6.0, 0.7, 2.5, 0.01,  # difficulty
    1.4, 0.2, 0.9,  # stability after a recall
    1.9, 0.08, 0.35, 1.5,  # stability after a lapse
    0.5, 2.2,  # the Hard penalty and the Easy bonus
    0.5, 0.1, 0.06,  # same-day reviews
    0.25,  # decay
)
# fmt: on

# How a member grades a question they recalled: unsure (Hard), sure (Good), sure and fast (Easy).
RECALLED_GRADES = ((Rating.Hard, 0.25), (Rating.Good, 0.65), (Rating.Easy, 0.10))
# How many days after it is due a member gets to their review: mostly on the day, some later.
LATENESS = ((0, 0.45), (1, 0.2), (2, 0.12), (3, 0.08), (5, 0.08), (8, 0.07))


@dataclass(frozen=True)
class Simulated:
    """A simulated log: every review, and the cards held out for testing (the others train)."""

    reviews: tuple[LoggedReview, ...]
    held_out: frozenset[int]

    def train(self) -> tuple[LoggedReview, ...]:
        return tuple(r for r in self.reviews if r.card not in self.held_out)

    def test(self) -> tuple[LoggedReview, ...]:
        return tuple(r for r in self.reviews if r.card in self.held_out)


def binary(log: tuple[LoggedReview, ...]) -> tuple[LoggedReview, ...]:
    """The same log graded pass/fail only: Hard and Easy become Good."""
    return tuple(
        LoggedReview(r.card, int(Rating.Again if r.rating == Rating.Again else Rating.Good), r.at) for r in log
    )


def _pick(rng: random.Random, weighted: tuple[tuple[object, float], ...]) -> object:
    return rng.choices([v for v, _ in weighted], weights=[w for _, w in weighted])[0]


def simulate(
    seed: int = 7,
    members: int = 40,
    cards_per_member: int = 12,
    days: int = 150,
    parameters: Parameters = TRUE_PARAMETERS,
    held_out: float = 0.25,
) -> Simulated:
    """Review logs of `members` members, each missing `cards_per_member` questions within the
    first half of `days` days and reviewing them until then; a share `held_out` of the cards
    (whole cards, so no card is both trained and tested on) kept for testing."""
    rng = random.Random(seed)
    memory = Scheduler(parameters=parameters, enable_fuzzing=False)
    bot = Scheduler(
        parameters=DEFAULTS,
        learning_steps=(timedelta(days=1),),
        relearning_steps=(timedelta(days=1),),
        enable_fuzzing=False,
    )
    end = START + timedelta(days=days)
    reviews: list[LoggedReview] = []
    card_id = 0
    for _ in range(members):
        for _ in range(cards_per_member):
            card_id += 1
            at = START + timedelta(days=rng.randrange(days // 2), minutes=rng.randrange(600))
            truth = Card(card_id=card_id, due=at)
            schedule = Card(card_id=card_id, due=at)
            rating = Rating.Again  # the first miss
            while True:
                reviews.append(LoggedReview(card_id, int(rating), at))
                truth, _ = memory.review_card(truth, rating, at)
                schedule, _ = bot.review_card(schedule, rating, at)
                late = int(_pick(rng, LATENESS))  # type: ignore[call-overload]
                at = schedule.due + timedelta(days=late, minutes=rng.randrange(-120, 240))
                if at >= end:
                    break
                recalled = rng.random() < float(memory.get_card_retrievability(truth, at))
                rating = _pick(rng, RECALLED_GRADES) if recalled else Rating.Again  # type: ignore[assignment]
    cards = list(range(1, card_id + 1))
    rng.shuffle(cards)
    return Simulated(tuple(reviews), frozenset(cards[: int(len(cards) * held_out)]))


_EPSILON = 1e-7  # keeps a predicted recall of 0 or 1 from an infinite loss


def log_loss(log: Iterable[LoggedReview], parameters: Sequence[float] | None = None) -> tuple[float, int]:
    """The mean log loss of the recall FSRS predicts with `parameters` (None: the defaults)
    on every counted review of the log (recalled: any rating but Again), and how many."""
    scheduler = Scheduler(parameters=tuple(parameters) if parameters is not None else DEFAULTS, enable_fuzzing=False)
    total = 0.0
    count = 0
    for card_id, reviews in by_card(log).items():
        card = Card(card_id=card_id, due=reviews[0].at)
        for review in reviews:
            if card.last_review is not None and (review.at - card.last_review).days > 0:
                p = min(max(float(scheduler.get_card_retrievability(card, review.at)), _EPSILON), 1 - _EPSILON)
                total -= math.log(p) if review.rating != Rating.Again else math.log(1 - p)
                count += 1
            card, _ = scheduler.review_card(card, Rating(review.rating), review.at)
    return (total / count if count else math.nan), count
