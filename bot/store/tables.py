"""SQLModel tables. Times are stored as naive UTC; the engine converts at the edge."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel


class Community(SQLModel, table=True):
    """A Discord guild, Slack workspace or console, and its settings."""

    __tablename__ = "communities"
    __table_args__ = (
        UniqueConstraint("platform", "external_id", name="uq_community_platform_external"),
        Index("ix_communities_version", "version"),
    )

    id: int | None = Field(default=None, primary_key=True)
    platform: str = Field(max_length=16)
    external_id: str = Field(max_length=64)
    name: str = Field(max_length=100)
    timezone: str = Field(default="UTC", max_length=64)
    daily_time: str = Field(default="09:00", max_length=5)
    window_hours: int = Field(default=12)
    channel_id: str | None = Field(default=None, max_length=64)
    topics: str = Field(default="", max_length=400)
    paused: bool = Field(default=False)
    created_at: datetime
    # Its web pages: private (signed links only) unless an admin sets `/config web public`.
    web_public: bool = Field(default=False, sa_column_kwargs={"server_default": "0"})
    # The settings' version: every change (and a new community) takes the next value of one
    # counter shared by all rows, so a scheduler's refresh reads only `version > last seen`.
    version: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # What it has numbered (migration 0020): its rounds and its members' questions are #1, #2...
    rounds_numbered: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    suggestions_numbered: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    demos_numbered: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class Member(SQLModel, table=True):
    """A member of one community, with their running totals."""

    __tablename__ = "members"
    __table_args__ = (
        UniqueConstraint("community_id", "user_id", name="uq_member_community_user"),
        Index("ix_members_board", "community_id", "points_total"),
    )

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    user_id: str = Field(max_length=64)
    display_name: str = Field(max_length=80)
    created_at: datetime
    # The sum of this member's answer points, kept in the same transaction as each answer so
    # the all-time board reads 1 row per member instead of every answer.
    points_total: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


class Round(SQLModel, table=True):
    """A question asked: a daily round, or one member's practice question."""

    __tablename__ = "rounds"
    __table_args__ = (
        Index("ix_rounds_community_kind", "community_id", "kind", "id"),
        Index("ix_rounds_member_open", "member_id", "closed_at"),
        Index("ix_rounds_due", "closed_at", "closes_at"),
        Index("uq_rounds_community_number", "community_id", "number", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    channel_id: str = Field(max_length=64)
    question_id: str = Field(max_length=60)
    kind: str = Field(max_length=8)  # daily | practice | review
    member_id: int | None = Field(default=None, foreign_key="members.id", ondelete="CASCADE")
    local_date: str | None = Field(default=None, max_length=10)
    # "community|channel|YYYY-MM-DD" for daily rounds, NULL otherwise: one daily round per
    # community, channel and local day (a Slack Connect channel id can be in two workspaces).
    daily_key: str | None = Field(default=None, max_length=96, unique=True)
    opened_at: datetime
    closes_at: datetime | None = None
    closed_at: datetime | None = None
    late: bool = Field(default=False)
    message_ref: str | None = Field(default=None, max_length=128)
    # The order the choices are shown in, drawn when the round opens: "2,0,3,1" means the
    # first shown choice is the bank's third. NULL (rounds from before 0003): the file order.
    choice_order: str | None = Field(default=None, max_length=16)
    number: int | None = None  # its number in the community, as members see it (#1, #2...)


class Answer(SQLModel, table=True):
    """A member's answer to a round and the points it scored."""

    __tablename__ = "answers"
    __table_args__ = (
        UniqueConstraint("round_id", "member_id", name="uq_answer_round_member"),
        Index("ix_answers_week", "community_id", "week", "member_id", "points"),
        Index("ix_answers_member", "community_id", "member_id", "points"),
        Index("ix_answers_member_kind", "member_id", "kind", "correct"),
        Index("ix_answers_confidence", "community_id", "confidence", "correct"),
    )

    id: int | None = Field(default=None, primary_key=True)
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE")
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    kind: str = Field(max_length=8)
    choice: int
    correct: bool
    points: int
    answered_at: datetime
    week: str = Field(max_length=8)  # ISO week in the community's time zone, e.g. 2026-W48
    # How sure the member said they were (given once, after the click): "sure" | "unsure", NULL
    # when not said. review_before: the review card (FSRS JSON) before this answer reviewed it,
    # kept so that the confidence can re-grade that review (bot/core/services/confidence.py).
    confidence: str | None = Field(default=None, max_length=6)
    review_before: str | None = Field(default=None, max_length=1000)


class WeeklyPoints(SQLModel, table=True):
    """A member's points in one ISO week (the week of `answers.week`), kept in the answer's own
    transaction beside `members.points_total`: the weekly board reads one row per member."""

    __tablename__ = "weekly_points"
    __table_args__ = (Index("ix_weekly_points_board", "community_id", "week", "points", "member_id"),)

    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE", primary_key=True)
    week: str = Field(max_length=8, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    points: int


class Review(SQLModel, table=True):
    """A member's spaced-repetition card for one question (FSRS state and due time)."""

    __tablename__ = "reviews"
    __table_args__ = (
        UniqueConstraint("member_id", "question_id", name="uq_review_member_question"),
        Index("ix_reviews_due", "member_id", "due"),
    )

    id: int | None = Field(default=None, primary_key=True)
    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE")
    question_id: str = Field(max_length=60)
    state: str = Field(max_length=1000)  # the FSRS card as JSON
    due: datetime


class LeaderboardPost(SQLModel, table=True):
    """The weekly leaderboard posted for a community (one per week)."""

    __tablename__ = "leaderboard_posts"
    __table_args__ = (UniqueConstraint("community_id", "week", name="uq_leaderboard_community_week"),)

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    week: str = Field(max_length=8)
    posted_at: datetime


class SlackView(SQLModel, table=True):
    """A Slack modal the bot opened (the external_id it gave it), in which workspace, for whom (the salted
    hash /forget-me keys forgotten answers by, never the member's id), with which callback and
    where its answer may go back (a click's response_url): a view_submission for any other view
    is refused (migration 0019). Kept a day."""

    __tablename__ = "slack_views"
    __table_args__ = (Index("ix_slack_views_opened", "opened_at"),)

    view_id: str = Field(max_length=32, primary_key=True)
    team_id: str = Field(max_length=64)
    holder: str = Field(max_length=64)
    callback_id: str = Field(max_length=100)
    reply_url: str | None = Field(default=None, max_length=500)
    opened_at: datetime


class ForgottenAnswer(SQLModel, table=True):
    """A member who asked to be forgotten while a round was still open: only a salted hash
    of who they were, so that a second answer to that round is refused (the first is final)
    while nothing else about them is kept. Deleted when the round closes."""

    __tablename__ = "forgotten_answers"

    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE", primary_key=True)
    user_key: str = Field(max_length=64, primary_key=True)


class LinkVersion(SQLModel, table=True):
    """The version a community's signed links (holder "") and one holder's links (a salted
    hash of the member: it outlives their /forget-me) must carry; advancing it revokes every
    older link. No row is version 0 (migration 0018)."""

    __tablename__ = "link_versions"

    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE", primary_key=True)
    holder: str = Field(max_length=64, primary_key=True)
    version: int = 0


class Outbox(SQLModel, table=True):
    """A post the engine decided on and a platform must deliver: written in the same
    transaction as the decision (a round opened, a round closed, a week's board claimed)."""

    __tablename__ = "outbox"
    __table_args__ = (
        UniqueConstraint("community_id", "kind", "key", name="uq_outbox_community_kind_key"),
        Index("ix_outbox_due", "platform", "state", "next_try"),
    )

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    platform: str = Field(max_length=16)
    channel_id: str = Field(max_length=64)
    kind: str = Field(max_length=16)  # question | reveal | leaderboard
    key: str = Field(max_length=32)  # the round id, or the ISO week
    state: str = Field(default="pending", max_length=8)  # pending | sent | failed
    attempts: int = Field(default=0)
    next_try: datetime
    claimed_by: str | None = Field(default=None, max_length=64)
    claimed_until: datetime | None = None
    message_ref: str | None = Field(default=None, max_length=128)
    last_error: str | None = Field(default=None, max_length=300)
    created_at: datetime
    sent_at: datetime | None = None


class DemoJob(SQLModel, table=True):
    """A `/demo` request: queued, running on a worker (local or Celery), then done or failed."""

    __tablename__ = "demo_jobs"
    __table_args__ = (
        Index("ix_demo_jobs_state", "state", "id"),
        Index("ix_demo_jobs_user", "community_id", "user_id", "created_at"),
        Index("uq_demo_jobs_community_number", "community_id", "number", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    channel_id: str = Field(max_length=64)
    user_id: str = Field(max_length=64)
    user_name: str = Field(max_length=80)
    module: str = Field(max_length=32)  # demos.checkpoint | demos.estimate
    args: str = Field(max_length=1000)  # the validated command-line arguments, JSON
    state: str = Field(default="queued", max_length=8)  # queued | running | done | failed
    progress: str = Field(default="[]", max_length=20000)  # rows reported so far, JSON
    result: str | None = Field(default=None)  # the demo's JSON result
    chart_path: str | None = Field(default=None, max_length=500)
    error: str | None = Field(default=None, max_length=500)
    # Why it failed (migration 0021): the member's run (refused | timeout | memory | failed),
    # charged to their cooldown, or the bot's (restart | unavailable | worker | bug), not.
    failure: str | None = Field(default=None, max_length=16)
    backend: str | None = Field(default=None, max_length=16)
    worker: str | None = Field(default=None, max_length=64)
    message_ref: str | None = Field(default=None, max_length=128)
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    number: int | None = None  # its number in the community, as members see it (Demo #1)


class PlatformState(SQLModel, table=True):
    """What a platform adapter must remember across restarts, by key (the Discord command
    tree's hash last synced, per target)."""

    __tablename__ = "platform_state"

    key: str = Field(max_length=100, primary_key=True)
    value: str = Field(max_length=500)
    updated_at: datetime


class PlatformEvent(SQLModel, table=True):
    """Platform events already handled (Slack's event_id), kept about a day, so that a retry
    arriving after a restart is not answered twice."""

    __tablename__ = "platform_events"
    __table_args__ = (Index("ix_platform_events_seen", "seen_at"),)

    platform: str = Field(max_length=16, primary_key=True)
    event_id: str = Field(max_length=64, primary_key=True)
    seen_at: datetime


class Suggestion(SQLModel, table=True):
    """A member's question (`/suggest`): a draft (Discord's first form), pending in the admins'
    queue, then approved (the community's own question, `question_id`), rejected, returned
    with a note, or removed by an admin (its rounds and answers stay). `body` is the question
    as JSON; the author is the member (SET NULL when they ask to be forgotten)."""

    __tablename__ = "suggestions"
    __table_args__ = (
        Index("ix_suggestions_state", "community_id", "state", "id"),
        Index("ix_suggestions_member", "member_id", "created_at"),
        Index("uq_suggestions_community_number", "community_id", "number", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    member_id: int | None = Field(default=None, foreign_key="members.id", ondelete="SET NULL")
    channel_id: str = Field(max_length=64)
    state: str = Field(max_length=10)  # draft | pending | approved | rejected | returned | removed
    topic: str = Field(max_length=40)
    body: str = Field(max_length=8000)
    question_id: str | None = Field(default=None, max_length=60, unique=True)
    note: str | None = Field(default=None, max_length=500)
    created_at: datetime
    decided_at: datetime | None = None
    number: int | None = None  # its number in the community once sent (a draft has none)


class MemberRating(SQLModel, table=True):
    """A member's ability (Elo, logits): overall (`topic` "") and per topic."""

    __tablename__ = "member_ratings"

    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE", primary_key=True)
    topic: str = Field(max_length=40, primary_key=True)
    rating: float
    answers: int


class QuestionRating(SQLModel, table=True):
    """A question's difficulty (Elo, logits), learnt from every answer in every community: the
    one difficulty number practice, the item analysis and the CLI use. The sum of its rows:
    slot 0 holds the start, the others (PostgreSQL) changes only (bot/store/question_ratings.py)."""

    __tablename__ = "question_ratings"

    question_id: str = Field(max_length=60, primary_key=True)
    slot: int = Field(default=0, primary_key=True)
    rating: float
    answers: int


class StreakRepair(SQLModel, table=True):
    """A daily round a member missed and earned back for their streak by clearing their due
    reviews within 48 hours of it (bot/core/services/streak_repair.py): at most one a week."""

    __tablename__ = "streak_repairs"
    __table_args__ = (UniqueConstraint("member_id", "round_id", name="uq_streak_repair_member_round"),)

    id: int | None = Field(default=None, primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE")
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    repaired_at: datetime


class DemoGuess(SQLModel, table=True):
    """A member's guess, before the first figure, of how much less peak memory a checkpoint
    demo's block strategy needs than none: band 0-3 (bot/core/services/guesses.py). One per member."""

    __tablename__ = "demo_guesses"
    __table_args__ = (UniqueConstraint("job_id", "member_id", name="uq_demo_guess_job_member"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(foreign_key="demo_jobs.id", ondelete="CASCADE")
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE")
    band: int
    guessed_at: datetime


class CommunityFsrs(SQLModel, table=True):
    """The FSRS parameters fitted to a community's review log (bot/worker/fsrs_fit.py); no row, or
    `parameters` NULL, means the package's defaults. `week`: the ISO week the weekly fit last
    claimed; `reviews`: the counted reviews of the last fit or check."""

    __tablename__ = "community_fsrs"

    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE", primary_key=True)
    parameters: str | None = Field(default=None, max_length=1000)  # a JSON list of 21 weights
    reviews: int = Field(default=0)
    fitted_at: datetime | None = None
    checked_at: datetime | None = None
    week: str | None = Field(default=None, max_length=8)


class ItemCount(SQLModel, table=True):
    """Answers to one question with one choice (bank file order) in a community, and how many
    were right: kept in each answer's transaction (bot/store/item_stats.py). `slot` (the
    member's id mod 8) spreads a question everyone answers at once over a few rows."""

    __tablename__ = "item_counts"

    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE", primary_key=True)
    question_id: str = Field(max_length=60, primary_key=True)
    choice: int = Field(primary_key=True)
    slot: int = Field(primary_key=True)
    answers: int
    correct: int


class ItemPick(SQLModel, table=True):
    """A member's answers to one question with one choice, and how many were right: the
    item analysis's rest-scores, kept in each answer's transaction."""

    __tablename__ = "item_picks"
    __table_args__ = (Index("ix_item_picks_question", "community_id", "question_id"),)

    member_id: int = Field(foreign_key="members.id", ondelete="CASCADE", primary_key=True)
    question_id: str = Field(max_length=60, primary_key=True)
    choice: int = Field(primary_key=True)
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    answers: int
    correct: int


class ItemMember(SQLModel, table=True):
    """All of a member's answers, and how many were right: beside `item_picks`, the rest-score."""

    __tablename__ = "item_members"

    member_id: int = Field(
        foreign_key="members.id", ondelete="CASCADE", primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    community_id: int = Field(foreign_key="communities.id", ondelete="CASCADE")
    answers: int
    correct: int
