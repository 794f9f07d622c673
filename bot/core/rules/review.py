"""Spaced repetition of each user's missed questions, with the FSRS scheduler (py-fsrs).

Every function takes `parameters`: a community's fitted FSRS weights, or None for the
package's defaults. One Scheduler is kept per parameter tuple."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import lru_cache

from fsrs import Card, Rating, Scheduler

Parameters = tuple[float, ...]


@lru_cache(maxsize=256)
def scheduler(parameters: Parameters | None = None) -> Scheduler:
    """The scheduler for these weights (None: the defaults). A missed question comes back the
    next day; after that FSRS stretches the intervals."""
    return Scheduler(
        parameters=Scheduler().parameters if parameters is None else parameters,
        learning_steps=(timedelta(days=1),),
        relearning_steps=(timedelta(days=1),),
        enable_fuzzing=False,
    )


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc)


def first_miss(card_id: int, now: datetime, parameters: Parameters | None = None) -> tuple[str, datetime]:
    """A new review card for a question just answered wrong: its state and when it is due."""
    return first_miss_later(now, parameters)(card_id)


def first_miss_later(now: datetime, parameters: Parameters | None = None) -> Callable[[int], tuple[str, datetime]]:
    """first_miss in two steps: the FSRS work now (outside the write lock), the card id
    (known once the member row exists) when the returned function is called. The schedule
    does not depend on the card id, so the result is first_miss(card_id, now)."""
    card, _ = scheduler(parameters).review_card(Card(card_id=0, due=_utc(now)), Rating.Again, _utc(now))
    state = card.to_dict()
    due = card.due

    def finish(card_id: int) -> tuple[str, datetime]:
        return json.dumps({**state, "card_id": card_id}), due

    return finish


def after_review(
    state: str, correct: bool, now: datetime, parameters: Parameters | None = None
) -> tuple[str, datetime]:
    """The card after a review: Good when the answer was right, Again when it was wrong."""
    return after_grade(state, Rating.Good if correct else Rating.Again, now, parameters)


def after_grade(
    state: str, rating: Rating, now: datetime, parameters: Parameters | None = None
) -> tuple[str, datetime]:
    """The card after a review graded `rating` at `now`."""
    card = Card.from_dict(json.loads(state))
    card, _ = scheduler(parameters).review_card(card, rating, _utc(now))
    return json.dumps(card.to_dict()), card.due


def due_of(state: str) -> datetime:
    """When a stored card is due."""
    return Card.from_dict(json.loads(state)).due


def last_review(state: str) -> datetime | None:
    """When a stored card was last reviewed (None: never)."""
    return Card.from_dict(json.loads(state)).last_review
