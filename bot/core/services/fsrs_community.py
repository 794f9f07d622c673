"""The engine's use cases of a community's fitted FSRS parameters: which ones its scheduler
uses (read at every review, kept a minute), its review log for the worker's fit, the fit's
outcome, and the weekly fit's claim. bot/core/engine.py builds it as `engine.fsrs`."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Protocol

from cachetools import TTLCache

from bot.core import wording
from bot.core.errors import InvalidInput, NotFound
from bot.core.rules.fsrs_params import (
    FitRequest,
    FsrsInUse,
    Parameters,
    counted_reviews,
    in_use,
    review_log,
    valid,
)
from bot.core.services.base import EngineBase, Shared
from bot.core.units import UnitsOfWork, WithCommunities, WithFsrs
from bot.core.values import CommunityRef

log = logging.getLogger(__name__)

# How long a process trusts the parameters it read: a fit stored by another process (the CLI,
# the weekly job of another bot process) is used within this many seconds.
MEMO_S = 60.0
# How many communities' parameters one process keeps at once (the least recently used go first).
MEMO_COMMUNITIES = 4096


def config_pair(tx: WithFsrs, community_id: int) -> tuple[str, str]:
    """The ("fsrs", what is in use) line /config shows."""
    used = in_use(tx.fsrs.fsrs_parameters(community_id))
    return "fsrs", wording.fsrs_in_use(used.parameters is not None, used.fitted_at, used.reviews)


class CommunityFsrsPort(WithCommunities, WithFsrs, Protocol):
    """The features CommunityFsrs's units of work touch."""


class CommunityFsrs(EngineBase[CommunityFsrsPort]):
    """A community's FSRS parameters."""

    def __init__(self, shared: Shared, store: UnitsOfWork[CommunityFsrsPort]) -> None:
        super().__init__(shared, store)
        # Fitted parameters, read again after MEMO_S; the lock because engine calls run on many threads.
        self._fsrs_memo: TTLCache[int, Parameters | None] = TTLCache(maxsize=MEMO_COMMUNITIES, ttl=MEMO_S)
        self._fsrs_memo_lock = threading.Lock()

    def community_parameters(self, community_id: int) -> Parameters | None:
        """The FSRS parameters the community's reviews are scheduled with (None: the defaults)."""
        with self._fsrs_memo_lock, suppress(KeyError):  # KeyError: never read, or read too long ago
            return self._fsrs_memo[community_id]  # None is a value here: the defaults
        with self.store.read() as tx:
            found = in_use(tx.fsrs.fsrs_parameters(community_id)).parameters
        with self._fsrs_memo_lock:
            self._fsrs_memo[community_id] = found
        return found

    def fsrs_in_use(self, community: CommunityRef) -> FsrsInUse:
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            return FsrsInUse() if config is None else in_use(tx.fsrs.fsrs_parameters(config.id))

    def fsrs_request(self, community: CommunityRef) -> FitRequest:
        """The community's review log as the fit reads it."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(wording.no_community_yet(community.platform, community.community_id))
            rows = tx.fsrs.fsrs_answers(config.id)
        reviews = review_log(rows)
        return FitRequest(name=config.name, log=reviews, counted=counted_reviews(reviews))

    def fsrs_claim_week(self, community: CommunityRef, week: str) -> bool:
        """The weekly fit of `week` for this community: True once, whichever process asks."""
        with self.store.write() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            return config is not None and tx.fsrs.fsrs_claim_week(config.id, week)

    def fsrs_outcome(self, community: CommunityRef, parameters: Sequence[float] | None, counted: int) -> FsrsInUse:
        """Store a fit's outcome: new parameters from `counted` reviews, or None (too few, or the
        optimizer kept its defaults) to keep those in use; the community's reviews use them now."""
        if parameters is not None and not valid(parameters):
            raise InvalidInput(wording.FSRS_PARAMETERS_UNUSABLE)
        text = None if parameters is None else json.dumps([round(float(w), 6) for w in parameters])
        with self.store.write() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            if config is None:
                raise NotFound(wording.no_community_yet(community.platform, community.community_id))
            tx.fsrs.fsrs_save(config.id, text, counted, self.now())
            used = in_use(tx.fsrs.fsrs_parameters(config.id))
        with self._fsrs_memo_lock:
            self._fsrs_memo.pop(config.id, None)
        if parameters is not None:
            log.info("FSRS fitted for %s/%s from %s reviews", community.platform, community.community_id, counted)
        return used
