"""The engine's use cases of a community's fitted FSRS parameters: which ones its scheduler
uses (read at every review, kept a minute), its review log for the worker's fit, the fit's
outcome, and the weekly fit's claim. StudyEngine (bot/core/engine.py) mixes this in."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence

from bot.core import wording
from bot.core.engine_base import EngineBase
from bot.core.errors import InvalidInput, NotFound
from bot.core.fsrs_params import (
    AnsweredReview,
    FitRequest,
    FsrsInUse,
    Parameters,
    counted_reviews,
    in_use,
    review_log,
    valid,
)
from bot.core.ports import StoreTx
from bot.core.values import CommunityRef

log = logging.getLogger(__name__)

# How long a process trusts the parameters it read: a fit stored by another process (the CLI,
# the weekly job of another bot process) is used within this many seconds.
MEMO_S = 60.0


def config_pair(tx: StoreTx, community_id: int) -> tuple[str, str]:
    """The ("fsrs", what is in use) line /config shows."""
    used = in_use(tx.fsrs_parameters(community_id))
    return "fsrs", wording.fsrs_in_use(used.parameters is not None, used.fitted_at, used.reviews)


class FsrsMixin(EngineBase):
    """A community's FSRS parameters, for StudyEngine."""

    _fsrs_memo: dict[int, tuple[float, Parameters | None]]

    def community_parameters(self, community_id: int) -> Parameters | None:
        """The FSRS parameters the community's reviews are scheduled with (None: the defaults)."""
        seen = self._fsrs_memo.get(community_id)
        moment = time.monotonic()
        if seen is not None and moment - seen[0] < MEMO_S:
            return seen[1]
        with self.store.read() as tx:
            found = in_use(tx.fsrs_parameters(community_id)).parameters
        self._fsrs_memo[community_id] = (moment, found)
        return found

    def fsrs_in_use(self, community: CommunityRef) -> FsrsInUse:
        with self.store.read() as tx:
            config = tx.find_community(community.platform, community.community_id)
            return FsrsInUse() if config is None else in_use(tx.fsrs_parameters(config.id))

    def fsrs_request(self, community: CommunityRef) -> FitRequest:
        """The community's review log as the fit reads it."""
        with self.store.read() as tx:
            config = tx.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(f"There is no community {community.platform}/{community.community_id} yet.")
            rows = tx.fsrs_answers(config.id)
        reviews = review_log(AnsweredReview(*row) for row in rows)
        return FitRequest(name=config.name, log=reviews, counted=counted_reviews(reviews))

    def fsrs_claim_week(self, community: CommunityRef, week: str) -> bool:
        """The weekly fit of `week` for this community: True once, whichever process asks."""
        with self.store.write() as tx:
            config = tx.find_community(community.platform, community.community_id)
            return config is not None and tx.fsrs_claim_week(config.id, week)

    def fsrs_outcome(self, community: CommunityRef, parameters: Sequence[float] | None, counted: int) -> FsrsInUse:
        """Store a fit's outcome: new parameters from `counted` reviews, or None (too few, or the
        optimizer kept its defaults) to keep those in use; the community's reviews use them now."""
        if parameters is not None and not valid(parameters):
            raise InvalidInput("The worker returned FSRS parameters the scheduler cannot use; nothing was changed.")
        text = None if parameters is None else json.dumps([round(float(w), 6) for w in parameters])
        with self.store.write() as tx:
            config = tx.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(f"There is no community {community.platform}/{community.community_id} yet.")
            tx.fsrs_save(config.id, text, counted, self.now())
            used = in_use(tx.fsrs_parameters(config.id))
        self._fsrs_memo.pop(config.id, None)
        if parameters is not None:
            log.info("FSRS fitted for %s/%s from %s reviews", community.platform, community.community_id, counted)
        return used
