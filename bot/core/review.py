"""Spaced repetition of each user's missed questions, with the FSRS scheduler (py-fsrs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from fsrs import Card, Rating, Scheduler

# A missed question comes back the next day; after that FSRS stretches the intervals.
_SCHEDULER = Scheduler(
    learning_steps=(timedelta(days=1),),
    relearning_steps=(timedelta(days=1),),
    enable_fuzzing=False,
)


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc)


def first_miss(card_id: int, now: datetime) -> tuple[str, datetime]:
    """A new review card for a question just answered wrong: its state and when it is due."""
    return first_miss_later(now)(card_id)


def first_miss_later(now: datetime) -> Callable[[int], tuple[str, datetime]]:
    """first_miss in two steps: the FSRS work now (outside the write lock), the card id
    (known once the member row exists) when the returned function is called. The schedule
    does not depend on the card id, so the result is first_miss(card_id, now)."""
    card, _ = _SCHEDULER.review_card(Card(card_id=0, due=_utc(now)), Rating.Again, _utc(now))
    state = card.to_dict()
    due = card.due

    def finish(card_id: int) -> tuple[str, datetime]:
        return json.dumps({**state, "card_id": card_id}), due

    return finish


def after_review(state: str, correct: bool, now: datetime) -> tuple[str, datetime]:
    """The card after a review: Good when the answer was right, Again when it was wrong."""
    card = Card.from_dict(json.loads(state))
    rating = Rating.Good if correct else Rating.Again
    card, _ = _SCHEDULER.review_card(card, rating, _utc(now))
    return json.dumps(card.to_dict()), card.due
