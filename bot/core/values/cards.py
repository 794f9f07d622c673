"""The unions every platform works from: `Card`, each card a member or an admin can be shown,
and `Posted`, the cards the outbox sends; and `Delivery`, an outbox row due for sending."""

from __future__ import annotations

from dataclasses import dataclass

from .admin import ConfigCard, ConfirmForget, Forgotten
from .boards import HomeCard, LeaderboardCard, ScoreCard
from .demos import DemoFailedCard, DemoProgressCard, DemoQueued, DemoResultCard
from .notices import Notice, Problem
from .practice import (
    NothingDue,
    SuggestionDecided,
    SuggestionDraft,
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
)
from .refs import ChannelRef
from .rounds import (
    AlreadyAnswered,
    AlreadyNoted,
    AlreadyOpen,
    AnswerFeedback,
    ConfidenceNoted,
    QuestionCard,
    RevealCard,
    RoundClosed,
)
from .web import AnkiDeck

# The cards the outbox posts (each is also a Card): in a channel, and a decision on a member's
# question to its author privately (the outbox row's channel is the author's user id).
Posted = QuestionCard | RevealCard | LeaderboardCard | DemoResultCard | DemoFailedCard | SuggestionDecided


# Every card a member or an admin is shown, in a channel, privately or as a reply: each
# platform's `render` matches on it and ends in `assert_never`, so mypy proves that every
# platform lays out every card. A new card goes here (tests/test_engine.py checks that every
# card the engine returns is in it).
Card = (
    QuestionCard
    | AnswerFeedback
    | ConfidenceNoted
    | AlreadyNoted
    | AlreadyAnswered
    | RoundClosed
    | RevealCard
    | AlreadyOpen
    | ScoreCard
    | LeaderboardCard
    | NothingDue
    | ConfirmForget
    | Forgotten
    | ConfigCard
    | Notice
    | Problem
    | DemoQueued
    | DemoResultCard
    | DemoProgressCard
    | DemoFailedCard
    | HomeCard
    | SuggestionRefused
    | SuggestionDraft
    | SuggestionReceived
    | SuggestionQueue
    | SuggestionDecided
    | AnkiDeck
)


@dataclass(frozen=True)
class Delivery:
    """An outbox row due for sending: where, what, and how many tries it took so far."""

    outbox_id: int
    channel: ChannelRef
    card: Posted
    attempts: int
