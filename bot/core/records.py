"""Plain values the store hands the engine: rows as frozen dataclasses, so that the rules
in bot/core never see SQLAlchemy."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from bot.core.values import RoundKind


@dataclass(frozen=True)
class OpenedView:
    """A form (a Slack modal) the bot opened, and where its answer may be sent back."""

    view_id: str
    reply_url: str | None


@dataclass(frozen=True)
class RoundRecord:
    """A round as the store reads it back."""

    id: int
    community_id: int
    channel_id: str
    question_id: str
    kind: RoundKind
    member_id: int | None
    opened_at: datetime
    closes_at: datetime | None
    closed_at: datetime | None
    late: bool
    message_ref: str | None
    choice_order: str | None
    number: int  # its number in its community, as members see it (the id is shared by all)


@dataclass(frozen=True)
class AnswerContext:
    """What the answer hot path reads before it writes: the round, its community's time
    zone, the member if known, and that member's earlier answer (shown index) if any."""

    round: RoundRecord
    timezone: str
    known_member: int | None
    previous: int | None
    forgotten: bool = False  # answered, then asked to be forgotten, while the round is open


@dataclass(frozen=True)
class NewAnswer:
    """An answer to write: who answered which round, what and how it scored."""

    round_id: int
    member_id: int
    community_id: int
    kind: str
    choice: int  # the index the member saw
    correct: bool
    points: int
    answered_at: datetime
    week: str
    question_id: str  # the round's question, and the choice in the bank file's order, for the item analysis
    file_choice: int


@dataclass(frozen=True)
class NewDaily:
    """A daily round to open (one of a batch, bot/core/services/daily_batch.py)."""

    community_id: int
    channel_id: str
    question_id: str
    local_date: str
    daily_key: str  # unique: the round is opened at most once
    opened_at: datetime
    closes_at: datetime
    late: bool
    choice_order: str


@dataclass(frozen=True)
class NewPost:
    """An outbox row to queue (one of a batch), once per (community, kind, key)."""

    community_id: int
    platform: str
    channel_id: str
    kind: str
    key: str


@dataclass(frozen=True)
class OutboxRecord:
    """A post waiting in the outbox, with the platform and channel it goes to."""

    id: int
    community_id: int
    platform: str
    community: str  # the platform's community id
    channel_id: str
    kind: str  # question | reveal | leaderboard
    key: str
    attempts: int
    state: str
    last_error: str | None
    next_try: datetime


@dataclass(frozen=True)
class DemoJobRecord:
    """A queued or finished demo job, with where its result is posted."""

    id: int
    community_id: int
    platform: str
    community: str  # the platform's community id
    channel_id: str
    user_id: str
    user_name: str
    module: str
    args: tuple[str, ...]
    state: str  # queued | running | done | failed
    progress: str  # JSON: {"total": n, "info": {...}, "rows": [...]}
    result: str | None
    chart_path: str | None
    error: str | None
    backend: str | None
    message_ref: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    failure: str | None = None  # why it failed: the member's run or the bot's (migration 0021)
    number: int = 0  # its number in its community, as members see it (Demo #1)


@dataclass(frozen=True)
class AnswerRow:
    """One answer for the item analysis: who (any stable key of a member), to what, which
    choice (in the bank file's order), and whether it was right."""

    question_id: str
    member: str
    choice: int
    correct: bool


@dataclass(frozen=True)
class ChoiceCount:
    """Kept per question and choice (file order) for the item analysis: answers, how many right."""

    question_id: str
    choice: int
    answers: int
    correct: int


@dataclass(frozen=True)
class MemberPick:
    """One member's answers to one question with one choice, beside all their answers (to
    every question they answered): what the item analysis's rest-score is made of."""

    member: str
    question_id: str
    choice: int
    answers: int
    correct: int
    member_answers: int
    member_correct: int


@dataclass(frozen=True)
class TopThird:
    """One question's strongest third of answers by rest-score (the item analysis's wrong-key
    check), counted in the store: `top` answers (a third of those with a rest-score, rounded
    up), how many of them picked each choice (file order), and the most answers one member gave
    the question (what one later answer can move)."""

    question_id: str
    top: int
    picks: tuple[int, ...]
    heaviest: int


@dataclass(frozen=True)
class SuggestionRecord:
    """A member's question as stored: its state, the question as JSON (`body`), the id it has
    in the community's bank once approved, and its author (None once they were forgotten)."""

    id: int
    community_id: int
    state: str  # draft | pending | approved | rejected | returned | removed
    topic: str
    body: str
    question_id: str | None
    note: str | None
    channel_id: str
    created_at: datetime
    author_member: int | None
    author_user: str | None
    author_name: str | None
    number: int = 0  # its number in its community once sent (0: a draft)


@dataclass(frozen=True)
class ConfidenceContext:
    """A member's answer to a round as confidence needs it: how it went, how sure they said
    they were (None: not yet), the review card before that answer reviewed it (None: it
    reviewed none), and the round's question and opening time (for "fast")."""

    round_id: int
    member_id: int
    kind: str
    correct: bool
    answered_at: datetime
    confidence: str | None
    review_before: str | None
    question_id: str
    opened_at: datetime
    number: int  # the round's number in its community


@dataclass(frozen=True)
class AnsweredReview:
    """One answer as the review log reads it: whose card (member and question), what kind of
    round, right or wrong, when, how sure the member said they were (None: not said) and when
    its round was shown (for a fast answer's Easy)."""

    member_id: int
    question_id: str
    kind: str
    correct: bool
    answered_at: datetime
    confidence: str | None = None
    opened_at: datetime | None = None


@dataclass(frozen=True)
class FsrsFit:
    """A community's stored FSRS fit: its parameters as JSON (None: none fitted), when they
    were fitted, and from how many counted reviews."""

    parameters: str | None
    fitted_at: datetime | None
    reviews: int


@dataclass(frozen=True)
class DailyOutcome:
    """One daily round of a community as a member's streak reads it: when it ended (or ends)
    and whether the member answered it right (None: they did not answer)."""

    round_id: int
    local_date: str | None
    closed_at: datetime | None
    closes_at: datetime | None
    correct: bool | None


@dataclass(frozen=True)
class MissedAnswer:
    """A member's wrong answer: the question, the choice they pressed (shown position), the
    order its round showed the choices in, and when."""

    question_id: str
    shown: int
    choice_order: str | None
    answered_at: datetime


@dataclass(frozen=True)
class QuestionOutcome:
    """A member's answers to one question, and how many were right."""

    question_id: str
    answers: int
    correct: int


@dataclass(frozen=True)
class RankedRow:
    """One row of a leaderboard page, ranked in SQL (equal points share a rank)."""

    rank: int
    name: str
    points: int


@dataclass(frozen=True)
class WeekRank:
    """A member's points in one week and their rank on that week's board."""

    points: int
    rank: int


@dataclass(frozen=True)
class NamedMember:
    """A member's row id and display name."""

    id: int
    name: str


@dataclass(frozen=True)
class ExportedAnswer:
    """One answer of a community for the CSV export (the choice as shown)."""

    answered_at: datetime
    week: str
    user_id: str
    display_name: str
    kind: str
    question_id: str
    choice: int
    choice_order: str | None
    correct: bool
    points: int


@dataclass(frozen=True)
class DemoGuess:
    """A member's guess on a checkpoint demo: their display name and the band they guessed."""

    name: str
    band: int


@dataclass(frozen=True)
class SuggestionCounts:
    """A member's questions waiting for a decision now, and those sent since a moment."""

    pending: int
    recent: int



SettingColumn = Literal["channel_id", "timezone", "daily_time", "window_hours", "topics", "web_public", "paused"]


@dataclass(frozen=True)
class SettingChange:
    """One community setting to store (bot/core/rules/community.py's `parse_setting` checks it)."""

    column: SettingColumn
    value: str | int | bool
