"""How sure a member was of an answer: given once, after the click (the Sure / Unsure buttons
of the private feedback) or with the answer (the console's `b sure`); it changes no points.
The Confidence service records it; its rules are bot/core/rules/confidence_rules.py.

The FSRS grade of a review follows it: wrong -> Again, right and unsure -> Hard, right and
sure -> Good, right and sure within FAST of the review being shown -> Easy; an answer without
a confidence keeps Good / Again. The click already reviewed the card (as Good or Again), so a
confidence given afterwards re-grades that review from the card as it was before it
(answers.review_before). A confident wrong answer brings its question back the next day,
also when the question already had a review card the answer did not touch."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Protocol

from fsrs import Rating

from bot.core import wording
from bot.core.errors import InvalidInput, NotFound
from bot.core.records import ConfidenceContext
from bot.core.rules import review as spaced
from bot.core.rules.confidence_rules import decode_confidence, grade
from bot.core.rules.timing import as_utc
from bot.core.services.base import EngineBase, Shared
from bot.core.services.fsrs_community import CommunityFsrs
from bot.core.services.rounds import Rounds
from bot.core.units import UnitsOfWork, WithCommunities, WithConfidence, WithMembers, WithReviews
from bot.core.values import (
    AlreadyNoted,
    ConfidenceNoted,
    UserRef,
)

log = logging.getLogger(__name__)


# A button's id: "sb1:cf:<round>:<s|u>" (well under Discord's 100 characters).
class ConfidencePort(WithCommunities, WithMembers, WithReviews, WithConfidence, Protocol):
    """The features Confidence's units of work touch."""


class Confidence(EngineBase[ConfidencePort]):
    """How sure a member was, and the review re-graded by it."""

    def __init__(self, shared: Shared, store: UnitsOfWork[ConfidencePort], fsrs: CommunityFsrs, rounds: Rounds) -> None:
        super().__init__(shared, store)
        self.fsrs = fsrs
        self.rounds = rounds

    def confidence_button(self, user: UserRef, custom_id: str) -> ConfidenceNoted | AlreadyNoted:
        """A press of Sure or Unsure under the feedback: its id says the round."""
        decoded = decode_confidence(custom_id)
        if decoded is None:
            raise InvalidInput(wording.STALE_BUTTON)
        return self.confide(user, *decoded)

    def confide(self, user: UserRef, round_id: int, sure: bool) -> ConfidenceNoted | AlreadyNoted:
        """Record how sure the member was of their answer to `round_id`, once; re-grade the
        review the answer made (or, sure and wrong, bring the question back tomorrow)."""
        now = self.now()
        with self.store.write() as tx:
            community = tx.communities.find_community(user.platform, user.community_id)
            member_id = None if community is None else tx.members.find_member(community.id, user.user_id)
            found = None if member_id is None else tx.confidence.confidence_context(round_id, member_id)
            if found is None:
                raise NotFound(wording.NO_ANSWER_TO_RATE)
            if found.confidence is not None or not tx.confidence.set_confidence(round_id, found.member_id, _word(sure)):
                again = tx.confidence.confidence_context(round_id, found.member_id)
                stored = found.confidence or (again.confidence if again else None) or _word(sure)
                return AlreadyNoted(round_id, found.number, stored == "sure")
            # the community's fitted FSRS parameters, as the click's review used them
            parameters = None if community is None else self.fsrs.community_parameters(community.id)
            rating, due = self._regrade(tx, found, sure, now, parameters)
        log.info("round %s: member %s was %s (%s)", round_id, found.member_id, _word(sure), rating)
        return ConfidenceNoted(round_id, found.number, sure, found.correct, rating, due)

    # ------------------------------------------------------------ the review

    def _regrade(
        self,
        tx: ConfidencePort,
        found: ConfidenceContext,
        sure: bool,
        now: datetime,
        parameters: tuple[float, ...] | None = None,
    ) -> tuple[str | None, datetime | None]:
        """Redo the review this answer made with the grade its confidence gives; returns the
        grade FSRS was given and when the card is due (None, None: no card was touched)."""
        state = tx.reviews.review_state(found.member_id, found.question_id)
        if state is None:
            return None, None
        answered_at = as_utc(found.answered_at)
        reviewed = spaced.last_review(state)
        by_this = reviewed is not None and abs(as_utc(reviewed) - answered_at) < timedelta(seconds=1)
        seconds = (answered_at - as_utc(found.opened_at)).total_seconds()
        rating = grade(found.correct, sure, found.kind, seconds)
        if by_this and found.review_before is not None and rating != Rating.Good and found.correct:
            new_state, due = spaced.after_grade(found.review_before, rating, answered_at, parameters)
            tx.reviews.update_review(found.member_id, found.question_id, new_state, due)
            return rating.name, due
        if by_this:  # the click's own grade stands (Again for a miss, Good without re-grading)
            return rating.name, spaced.due_of(state)
        if sure and not found.correct:  # an existing card this answer did not review: tomorrow
            new_state, due = spaced.after_grade(state, Rating.Again, now, parameters)
            tx.reviews.update_review(found.member_id, found.question_id, new_state, due)
            return Rating.Again.name, due
        return None, None


def _word(sure: bool) -> str:
    return "sure" if sure else "unsure"
