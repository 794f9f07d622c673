"""Frozen values that cross the boundary between the engine and the platforms."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

RoundKind = Literal["daily", "practice", "review"]
LETTERS = "abcde"


def letter(index: int) -> str:
    """The letter a user sees for choice `index` (0 -> 'A')."""
    return LETTERS[index].upper()


@dataclass(frozen=True)
class UserRef:
    platform: str
    community_id: str
    user_id: str
    display_name: str


@dataclass(frozen=True)
class ChannelRef:
    platform: str
    community_id: str
    channel_id: str


@dataclass(frozen=True)
class CommunityRef:
    platform: str
    community_id: str


@dataclass(frozen=True)
class LinkVersions:
    """What a signed link must carry to open: its community's version (advanced by `/config
    web rotate`) and its holder's (advanced by their /forget-me or, on an admin link, by their
    losing the right). 0 until first advanced."""

    community: int = 0
    holder: int = 0


@dataclass(frozen=True)
class QuestionCard:
    """A question to post: publicly for a daily round, privately for practice and review."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    question_id: str
    kind: RoundKind
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[str, ...]
    closes_at: datetime | None = None
    late: bool = False
    admin_note: str | None = None
    # A private round: the number of the member's unanswered practice question or review it
    # replaces (said).
    replaced: int | None = None


@dataclass(frozen=True)
class AnswerFeedback:
    """Private feedback on a user's first answer to a round."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    kind: RoundKind
    correct: bool
    points: int
    chosen: str
    chosen_text: str
    answer: str
    answer_text: str
    why: str
    trap: str | None
    streak_bonus: int = 0
    # How sure the member said they were, when they said it with the answer (the console's
    # `b sure`); None: the platform asks after the click (Sure / Unsure buttons).
    noted: ConfidenceNoted | None = None
    streak_repaired: str | None = None  # a review that cleared the last due: the missed day earned back


@dataclass(frozen=True)
class ConfidenceNoted:
    """How sure a member was of an answer, recorded once (it changes no points). `grade`: what
    FSRS was given for the review card (Again, Hard, Good, Easy), None when the answer touched
    no review card; `due`: when that card comes back."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    sure: bool
    correct: bool
    grade: str | None = None
    due: datetime | None = None


@dataclass(frozen=True)
class AlreadyNoted:
    """A second "how sure" for the same answer: the first one stands."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    sure: bool


@dataclass(frozen=True)
class AlreadyAnswered:
    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    chosen: str | None  # None: answered before the member asked to be forgotten


@dataclass(frozen=True)
class RoundClosed:
    """An answer that came after the round closed: not scored."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    answer: str


@dataclass(frozen=True)
class ChoiceReveal:
    letter: str
    text: str
    correct: bool
    why: str
    count: int


@dataclass(frozen=True)
class RevealCard:
    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    question_id: str
    prompt: str
    answer: str
    answer_text: str
    choices: tuple[ChoiceReveal, ...]
    explain: str | None
    trap: str | None
    refs: tuple[str, ...]
    channel_id: str
    answered: int
    question_ref: str | None = None  # the platform's reference of the question's post, once known
    author: str | None = None  # a member's question: who wrote it
    demo: str | None = None  # the question's `/demo` request ("see it run" under the reveal), if it has one


@dataclass(frozen=True)
class AlreadyOpen:
    """The daily round for this channel and local day exists already: still open, or `closed`
    (revealed or past its window), then with when the next one opens (`next_opens`, local)."""

    round_id: int  # the row's id, shared by every community: buttons carry it, nobody sees it
    number: int  # the round's number in its community, as members see it (#1, #2...)
    local_date: str
    closed: bool = False
    next_opens: str | None = None  # e.g. "2026-11-24 18:30 (Europe/Berlin)"


@dataclass(frozen=True)
class StatsLine:
    answered: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass(frozen=True)
class ScoreCard:
    user: str
    week: str
    week_points: int
    week_rank: int | None
    total_points: int
    daily: StatsLine
    practice: StatsLine
    streak: int
    best_streak: int
    reviews_due: int
    link: str | None = None  # a signed, expiring link to the member's web page, when one is set up
    levels: tuple[TopicLevel, ...] = ()  # adaptive practice: the member's level per topic answered
    calibration: Calibration | None = None  # None until they said how sure they were at least once
    repaired: tuple[str, ...] = ()  # streak repair: the local dates of the days earned back, newest first
    repair: RepairOffer | None = None  # the missed day that broke the streak, still to be earned back


@dataclass(frozen=True)
class RepairOffer:
    """A missed daily round that broke a member's streak and can be earned back by clearing their
    due reviews (`due` now) before `deadline`; `blocked_until`: the once-a-week rule forbids it
    until then (after the deadline, when the window ends first)."""

    missed: str  # the round's local date
    deadline: datetime
    due: int
    blocked_until: datetime | None
    timezone: str


@dataclass(frozen=True)
class Calibration:
    """Accuracy when sure and when unsure, and the Brier score of those confidences (sure
    counts as 90%, unsure as 50%; 0 is perfect), None below `needed` more answers
    (bot/core/calibration.py)."""

    sure: StatsLine
    unsure: StatsLine
    brier: float | None
    needed: int = 0  # answers with a confidence still needed before the score is shown


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int
    user: str
    points: int


@dataclass(frozen=True)
class LeaderboardCard:
    community: str
    scope: str  # an ISO week such as "2026-W48", or "all"
    rows: tuple[LeaderboardRow, ...]
    flagged: tuple[str, ...] = ()  # weekly post: question ids the item analysis flags, for admins


@dataclass(frozen=True)
class NothingDue:
    """No review is due; `next_due` says when the next one is, if any."""

    next_due: datetime | None


@dataclass(frozen=True)
class ConfirmForget:
    """Ask the user to confirm before anything is deleted."""

    user: str
    answers: int


@dataclass(frozen=True)
class Forgotten:
    user: str
    answers_deleted: int


@dataclass(frozen=True)
class ConfigCard:
    community: str
    settings: tuple[tuple[str, str], ...]
    changed: str | None = None
    alerts: tuple[str, ...] = ()  # what an admin should know: posts that could not be delivered
    link: str | None = None  # a signed, expiring link to the community's admin page


@dataclass(frozen=True)
class Notice:
    """A plain sentence for the user (a hint, a confirmation)."""

    text: str


@dataclass(frozen=True)
class DemoRequest:
    """A validated `/demo` request: the demo module and its command-line arguments."""

    module: str
    args: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Problem:
    """What a user is told when their request failed: a StudyBotError's own sentence, or an
    apology with the incident id under which the traceback was logged."""

    text: str
    incident: str | None = None


@dataclass(frozen=True)
class DemoQueued:
    """A `/demo` request accepted into the queue. `position` 1 means it runs next (or now).
    The adapter posts a message for it and reports that message's reference back
    (`engine.demo_message(job_id, ref)`), so progress can edit it in place."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    position: int
    module: str
    user: str
    args: tuple[str, ...] = ()
    guesses: bool = False  # a checkpoint run of none and block: members may guess the saving first


@dataclass(frozen=True)
class DemoChart:
    """One PNG chart of a demo's result: `kind` timeline, budget, memory or sweep; a file path
    on the bot's machine."""

    kind: str
    path: str


@dataclass(frozen=True)
class DemoResultCard:
    """A demo's measured result as a table every platform lays out its own way."""

    module: str
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]
    chart: str | None  # the main PNG chart's path (the memory timeline), when the demo drew one
    wall_s: float
    data: dict[str, Any] = field(default_factory=dict, compare=False)
    job_id: int | None = None
    where: str | None = None  # device, memory, torch version, CPU threads
    message_ref: str | None = None  # the queued message to edit, when the adapter kept one
    charts: tuple[DemoChart, ...] = ()  # every chart the run drew, the main one first

    def pictures(self) -> tuple[DemoChart, ...]:
        """Every chart, the memory timeline first (a card built with only `chart` has that one)."""
        if self.charts:
            return self.charts
        return (DemoChart("chart", self.chart),) if self.chart else ()


@dataclass(frozen=True)
class DemoProgressCard:
    """A running demo's rows so far (one per finished strategy): edit the queued message."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    module: str
    channel: ChannelRef
    message_ref: str | None
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    done: int
    total: int


@dataclass(frozen=True)
class DemoFailedCard:
    """A demo that did not finish: one sentence for the channel where it was asked."""

    job_id: int  # the row's id, shared by every community: buttons and files carry it
    number: int  # its number in its community, as members see it (Demo #1)
    module: str
    text: str
    message_ref: str | None = None


@dataclass(frozen=True)
class HomeCard:
    """A member's own page (Slack's App Home): their score and this week's leaderboard."""

    score: ScoreCard
    board: LeaderboardCard


@dataclass(frozen=True)
class AnswerWithHome:
    """An answer's feedback and, when it was scored (a first answer), the member's HomeCard
    as it is after it (Slack publishes it after the feedback); None for a repeat, a closed
    round, a Notice (a letter the round does not show) or a Home that could not be read."""

    feedback: AnswerFeedback | AlreadyAnswered | RoundClosed | Notice
    home: HomeCard | None


# Posted (the cards the outbox sends) is defined after the suggestion cards, below.


@dataclass(frozen=True)
class Delivery:
    """An outbox row due for sending: where, what, and how many tries it took so far."""

    outbox_id: int
    channel: ChannelRef
    card: Posted
    attempts: int


# ------------------------------------------------------------------ web pages


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
    week: str
    points: int


@dataclass(frozen=True)
class TopicAccuracy:
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
    community: WebCommunity
    score: ScoreCard
    weeks: tuple[WeekPoints, ...]  # oldest first, weeks without points included
    topics: tuple[TopicAccuracy, ...]
    missed: tuple[MissedQuestion, ...]  # newest first
    next_review: datetime | None


@dataclass(frozen=True)
class BankEntry:
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
    community: WebCommunity
    demos: tuple[DemoEntry, ...]  # newest first


@dataclass(frozen=True)
class AdminPage:
    community: WebCommunity
    settings: tuple[tuple[str, str], ...]
    next_daily: datetime | None  # the next daily round's time (UTC), None when paused or no channel
    next_close: datetime | None
    next_leaderboard: datetime | None
    alerts: tuple[str, ...]  # posts that failed or were given up
    demos: tuple[DemoEntry, ...]
    flagged: tuple[tuple[str, tuple[str, ...]], ...]  # question id, what the item analysis says
    calibration: Calibration | None = None  # the community's, over every answer given with a confidence


# ------------------------------------------------- members' questions, adaptive practice


@dataclass(frozen=True)
class TopicLevel:
    """A member's level on one topic: their rating (logits, against a level-2 question), a
    word for it, the chance of a right answer on a typical question, and answers counted.
    `name` and `chance` are None until the topic has enough answers to say (rating.py)."""

    topic: str
    rating: float
    name: str | None
    chance: float | None
    answers: int


@dataclass(frozen=True)
class SuggestionForm:
    """What a member typed into /suggest (a modal, guided prompts), as typed: the engine
    parses and checks it. `choices` and `whys` pair up by position; `correct` is a letter
    (A-E) or the right choice's text; `level` 1-3 or intro/practitioner/expert."""

    topic: str = ""
    level: str = ""
    prompt: str = ""
    choices: tuple[str, ...] = ()
    whys: tuple[str, ...] = ()
    correct: str = ""
    trap: str = ""
    explain: str = ""
    refs: tuple[str, ...] = ()
    hint: str = ""  # optional: narrows the reasoning before an answer (the bank's `hint:`)


@dataclass(frozen=True)
class FieldProblem:
    """Why one field of a suggestion is refused. `field`: a stable key (topic, level, prompt,
    choices, correct, choice_0..4, why_0..4, trap, explain, hint, refs) that forms map to their
    inputs; `label`: how a member names it ("why of choice B")."""

    field: str
    label: str
    reason: str


@dataclass(frozen=True)
class SuggestionRefused:
    """A form refused field by field; `retry_id`, on Discord, is the button that opens it
    again with what was typed (a modal cannot answer a modal)."""

    problems: tuple[FieldProblem, ...]
    retry_id: str | None = None


@dataclass(frozen=True)
class SuggestionDraft:
    """Discord's first form was kept: the member continues with the second (the whys, the
    trap and the reference) by the button `custom_id`."""

    draft_id: int
    choices: tuple[str, ...]
    custom_id: str


@dataclass(frozen=True)
class SuggestionReceived:
    suggestion_id: int
    number: int  # its number in the community, as members and admins see and type it
    prompt: str
    pending: int  # the author's suggestions now waiting


@dataclass(frozen=True)
class SuggestionItem:
    """One suggestion in the admins' queue, with its approve / note / reject button ids."""

    suggestion_id: int
    number: int  # its number in the community (what /config approve N takes)
    author: str
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[str, ...]
    answer: int
    whys: tuple[str, ...]
    trap: str | None
    explain: str | None
    refs: tuple[str, ...]
    approve_id: str
    note_id: str
    reject_id: str


@dataclass(frozen=True)
class SuggestionQueue:
    community: str
    items: tuple[SuggestionItem, ...]
    waiting: int  # in all (items shows the oldest few)


@dataclass(frozen=True)
class SuggestionDecided:
    """An admin's decision. `author` (None when they were forgotten) is told `action` privately
    by the platform that renders this card."""

    suggestion_id: int
    number: int  # its number in the community
    action: str  # approved | rejected | returned
    prompt: str
    question_id: str | None
    note: str | None
    author: UserRef | None
    queue: SuggestionQueue | None = None  # a button's decision: the queue as it is now (Slack redraws it)


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
