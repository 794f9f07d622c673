"""Frozen values that cross the boundary between the engine and the platforms, one module per
feature: refs (who and where), notices, rounds (questions, answers, reveals), practice (reviews
and members' questions), boards (scores, leaderboards, Home), admin (/config, /forget-me), demos,
web (the web pages' values) and cards (the unions every platform renders). Every name is
importable from here: `from bot.core.values import QuestionCard`, or `values.QuestionCard`."""

from __future__ import annotations

from .admin import ConfigCard, ConfirmForget, Forgotten
from .boards import (
    AnswerWithHome,
    Calibration,
    HomeCard,
    LeaderboardCard,
    LeaderboardRow,
    RepairOffer,
    ScoreCard,
    StatsLine,
)
from .cards import Card, Delivery, Posted
from .demos import DemoChart, DemoFailedCard, DemoProgressCard, DemoQueued, DemoRequest, DemoResultCard
from .notices import Notice, Problem
from .practice import (
    FieldProblem,
    NothingDue,
    SuggestionDecided,
    SuggestionDraft,
    SuggestionForm,
    SuggestionItem,
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
    TopicLevel,
)
from .refs import ChannelRef, CommunityRef, UserRef
from .rounds import (
    LETTERS,
    AlreadyAnswered,
    AlreadyNoted,
    AlreadyOpen,
    AnswerFeedback,
    ChoiceReveal,
    ConfidenceNoted,
    QuestionCard,
    RevealCard,
    RoundClosed,
    RoundKind,
    letter,
)
from .web import (
    AdminPage,
    AnkiDeck,
    BankEntry,
    BankPage,
    DemoEntry,
    DemosPage,
    LeaderboardPage,
    LinkVersions,
    MemberPage,
    MissedQuestion,
    TopicAccuracy,
    WebCommunity,
    WeekPoints,
)

__all__ = [
    # refs
    "UserRef",
    "ChannelRef",
    "CommunityRef",
    # notices
    "Notice",
    "Problem",
    # rounds
    "RoundKind",
    "LETTERS",
    "letter",
    "QuestionCard",
    "AnswerFeedback",
    "ConfidenceNoted",
    "AlreadyNoted",
    "AlreadyAnswered",
    "RoundClosed",
    "ChoiceReveal",
    "RevealCard",
    "AlreadyOpen",
    # practice
    "NothingDue",
    "TopicLevel",
    "SuggestionForm",
    "FieldProblem",
    "SuggestionRefused",
    "SuggestionDraft",
    "SuggestionReceived",
    "SuggestionItem",
    "SuggestionQueue",
    "SuggestionDecided",
    # boards
    "StatsLine",
    "ScoreCard",
    "RepairOffer",
    "Calibration",
    "LeaderboardRow",
    "LeaderboardCard",
    "HomeCard",
    "AnswerWithHome",
    # admin
    "ConfirmForget",
    "Forgotten",
    "ConfigCard",
    # demos
    "DemoRequest",
    "DemoQueued",
    "DemoChart",
    "DemoResultCard",
    "DemoProgressCard",
    "DemoFailedCard",
    # web
    "LinkVersions",
    "WebCommunity",
    "LeaderboardPage",
    "WeekPoints",
    "TopicAccuracy",
    "MissedQuestion",
    "MemberPage",
    "BankEntry",
    "BankPage",
    "AnkiDeck",
    "DemoEntry",
    "DemosPage",
    "AdminPage",
    # cards
    "Posted",
    "Card",
    "Delivery",
]
