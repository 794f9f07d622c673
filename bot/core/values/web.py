"""The web pages' values: whose page it is, the leaderboard, a member's page, the revealed
bank and its Anki deck, the demos and the admin page, and what a signed link must carry."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from .boards import Calibration, LeaderboardRow, ScoreCard
from .demos import DemoResultCard
from .refs import CommunityRef
from .rounds import ChoiceReveal


@dataclass(frozen=True)
class LinkVersions:
    """What a signed link must carry to open: its community's version (advanced by `/config
    web rotate`) and its holder's (advanced by their /forget-me or, on an admin link, by their
    losing the right). 0 until first advanced."""

    community: int = 0
    holder: int = 0


@dataclass(frozen=True)
class WebCommunity:
    """Who a web page belongs to: the community, and whether its pages are public."""

    ref: CommunityRef
    name: str
    public: bool
    timezone: str


@dataclass(frozen=True)
class LeaderboardPage:
    """A leaderboard for the web: one page of rows of the whole ranking, with its weeks."""

    community: WebCommunity
    scope: str  # an ISO week, or "all"
    rows: tuple[LeaderboardRow, ...]
    members: int  # ranked members in all
    page: int
    pages: int
    this_week: str
    previous_week: str | None  # None on the all-time board
    next_week: str | None  # None when `scope` is this week (or all time)
    highlight: str | None = None  # the member's own name, when a member's link shows the board


@dataclass(frozen=True)
class WeekPoints:
    """A member's points in one ISO week."""

    week: str
    points: int


@dataclass(frozen=True)
class TopicAccuracy:
    """A member's answers and right answers on one topic."""

    topic: str
    answered: int
    correct: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.answered if self.answered else 0.0


@dataclass(frozen=True)
class MissedQuestion:
    """A question the member got wrong, with every choice's why (in the order and with the
    letters that round showed)."""

    question_id: str
    topic: str
    prompt: str
    chosen: str  # the letter of what they chose
    answer: str
    choices: tuple[ChoiceReveal, ...]  # count: 1 on the choice they made, else 0
    explain: str | None
    refs: tuple[str, ...]
    answered_at: datetime


@dataclass(frozen=True)
class MemberPage:
    """Everything the member's web page shows."""

    community: WebCommunity
    score: ScoreCard
    weeks: tuple[WeekPoints, ...]  # oldest first, weeks without points included
    topics: tuple[TopicAccuracy, ...]
    missed: tuple[MissedQuestion, ...]  # newest first
    next_review: datetime | None


@dataclass(frozen=True)
class BankEntry:
    """One question as the web page's question bank lists it."""

    question_id: str
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[ChoiceReveal, ...]  # the bank's order, or a round's shown order; count unused (0)
    explain: str | None
    trap: str | None
    refs: tuple[str, ...]


@dataclass(frozen=True)
class BankPage:
    """The questions already revealed in the community (never one in an open daily round)."""

    community: WebCommunity
    topics: tuple[tuple[str, int, int], ...]  # topic, revealed here, in the bank
    topic: str | None
    questions: tuple[BankEntry, ...]
    page: int
    pages: int
    hidden: int  # questions of this topic (or all) not yet revealed here


@dataclass(frozen=True)
class AnkiDeck:
    """Questions to take into Anki as one package: a member's misses (`/review export`, their
    web page) or the community's revealed bank (its web page). bot/anki.py writes the .apkg."""

    kind: Literal["misses", "bank"]
    name: str  # the deck's name in Anki
    filename: str  # the .apkg's file name
    notes: tuple[BankEntry, ...]  # one note per question, newest miss first (the bank: its order)


@dataclass(frozen=True)
class DemoEntry:
    """One demo job as the web page's demo list shows it."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    module: str
    user: str
    state: str
    created_at: datetime
    finished_at: datetime | None
    result: DemoResultCard | None
    error: str | None
    has_chart: bool


@dataclass(frozen=True)
class DemosPage:
    """The community's demos page."""

    community: WebCommunity
    demos: tuple[DemoEntry, ...]  # newest first


@dataclass(frozen=True)
class AdminPage:
    """The community's admin page: settings, the next scheduled posts, and alerts."""

    community: WebCommunity
    settings: tuple[tuple[str, str], ...]
    next_daily: datetime | None  # the next daily round's time (UTC), None when paused or no channel
    next_close: datetime | None
    next_leaderboard: datetime | None
    alerts: tuple[str, ...]  # posts that failed or were given up
    demos: tuple[DemoEntry, ...]
    flagged: tuple[tuple[str, tuple[str, ...]], ...]  # question id, what the item analysis says
    calibration: Calibration | None = None  # the community's, over every answer given with a confidence
