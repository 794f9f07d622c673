"""What the study web page shows, built from one read-only unit of work each: the engine's
`*_page` methods call these, and bot/web renders the values they return. Nothing here
writes, and nothing shows a question that has not been revealed in the community yet (the
daily round is never spoiled)."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from functools import lru_cache

from bot.core.bank import TOPICS, Bank, Question
from bot.core.records import DemoJobRecord, MissedAnswer, QuestionOutcome
from bot.core.rules import choices as codec
from bot.core.rules import scoring, timing
from bot.core.rules.community import CommunityConfig
from bot.core.rules.demo_result import outcome_card
from bot.core.units import WithBoards, WithRounds
from bot.core.values import (
    BankEntry,
    ChoiceReveal,
    CommunityRef,
    DemoEntry,
    DemoResultCard,
    LeaderboardPage,
    LeaderboardRow,
    MissedQuestion,
    TopicAccuracy,
    WebCommunity,
    WeekPoints,
    letter,
)

BOARD_PAGE = 100
BANK_PAGE = 20
HISTORY_WEEKS = 12
MISSED_LIMIT = 50


def web_community(ref: CommunityRef, config: CommunityConfig) -> WebCommunity:
    return WebCommunity(ref=ref, name=config.name, public=config.web_public, timezone=config.timezone)


def week_after(week: str) -> str:
    year, number = (int(part) for part in week.split("-W"))
    y, w, _ = (date.fromisocalendar(year, number, 1) + timedelta(days=7)).isocalendar()
    return f"{y}-W{w:02d}"


def pages_of(count: int, size: int) -> int:
    return max(1, -(-count // size))


def leaderboard_page(
    tx: WithBoards,
    community: WebCommunity,
    community_id: int,
    now: datetime,
    week: str | None,
    page: int,
    highlight: str | None = None,
) -> LeaderboardPage:
    """One page of the weekly (`week`, default this week) or all-time (`week` "all") board."""
    this_week = scoring.iso_week(now, community.timezone)
    scope = week or this_week
    board_week = None if scope == "all" else scope
    members = tx.boards.board_size(community_id, board_week)
    pages = pages_of(members, BOARD_PAGE)
    page = min(max(1, page), pages)
    rows = tx.boards.board_slice(community_id, board_week, (page - 1) * BOARD_PAGE, BOARD_PAGE)
    return LeaderboardPage(
        community=community,
        scope=scope,
        rows=tuple(LeaderboardRow(rank=row.rank, user=row.name, points=row.points) for row in rows),
        members=members,
        page=page,
        pages=pages,
        this_week=this_week,
        previous_week=None if scope == "all" else scoring.previous_week(scope),
        next_week=None if scope in ("all", this_week) or scope > this_week else week_after(scope),
        highlight=highlight,
    )


def week_history(points: dict[str, int], this_week: str, weeks: int = HISTORY_WEEKS) -> tuple[WeekPoints, ...]:
    """The last `weeks` ISO weeks up to this one, oldest first, a week without answers at 0."""
    names = [this_week]
    for _ in range(weeks - 1):
        names.append(scoring.previous_week(names[-1]))
    return tuple(WeekPoints(week, points.get(week, 0)) for week in reversed(names))


def topic_accuracy(outcomes: list[QuestionOutcome], bank: Bank) -> tuple[TopicAccuracy, ...]:
    answered: dict[str, int] = {}
    correct: dict[str, int] = {}
    for outcome in outcomes:
        question = bank.get(outcome.question_id)
        if question is None:
            continue
        answered[question.topic] = answered.get(question.topic, 0) + outcome.answers
        correct[question.topic] = correct.get(question.topic, 0) + outcome.correct
    return tuple(TopicAccuracy(t, answered[t], correct[t]) for t in TOPICS if t in answered)


def _choices(question: Question, chosen: int | None = None, order: tuple[int, ...] = ()) -> tuple[ChoiceReveal, ...]:
    """The choices as a round showed them: `order` is its shown order (shown position -> bank
    index; the bank's own order when empty), `chosen` a shown position; letters are shown ones."""
    shown = order or tuple(range(len(question.choices)))
    return tuple(
        ChoiceReveal(
            letter(position),
            question.choices[index].text,
            question.choices[index].correct,
            question.choices[index].why,
            1 if position == chosen else 0,
        )
        for position, index in enumerate(shown)
    )


def missed_questions(rows: list[MissedAnswer], bank: Bank) -> tuple[MissedQuestion, ...]:
    """Each missed question once (its newest miss), choices in the order that round showed them,
    so "you chose B" is the letter the member pressed."""
    seen: set[str] = set()
    missed = []
    for row in rows:
        question = bank.get(row.question_id)
        if question is None or row.question_id in seen:
            continue
        seen.add(row.question_id)
        order = codec.parse_order(row.choice_order, len(question.choices))
        missed.append(
            MissedQuestion(
                question_id=question.id,
                topic=question.topic,
                prompt=question.prompt,
                chosen=letter(row.shown) if 0 <= row.shown < len(order) else "?",
                answer=letter(order.index(question.answer_index)),
                choices=_choices(question, row.shown, order),
                explain=question.explain,
                refs=question.refs,
                answered_at=timing.as_utc(row.answered_at),
            )
        )
    return tuple(missed)


@lru_cache(maxsize=4096)
def bank_entry(question: Question, order: tuple[int, ...] = ()) -> BankEntry:
    """A question as the bank page shows it (kept: a question is a frozen value); with a
    round's shown `order`, its choices and letters as that round showed them."""
    return BankEntry(
        question_id=question.id,
        topic=question.topic,
        difficulty=question.difficulty,
        prompt=question.prompt,
        choices=_choices(question, None, order),
        explain=question.explain,
        trap=question.trap,
        refs=question.refs,
    )


def shown_questions(tx: WithRounds, community_id: int, bank: Bank) -> list[Question]:
    """The bank's questions revealed in the community and not in a daily round open now."""
    revealed, open_now = tx.rounds.daily_questions(community_id)
    return [q for q in bank.questions if q.id in revealed and q.id not in open_now]


def demo_entry(job: DemoJobRecord) -> DemoEntry:
    result = None
    if job.state == "done" and job.result:
        card = outcome_card(job)
        result = card if isinstance(card, DemoResultCard) else None
    return DemoEntry(
        job_id=job.id,
        number=job.number,
        module=job.module,
        user=job.user_name,
        state=job.state,
        created_at=job.created_at,
        finished_at=job.finished_at,
        result=result,
        error=job.error,
        has_chart=bool(result and result.chart),
    )


def next_runs(config: CommunityConfig, now: datetime) -> tuple[datetime | None, datetime | None]:
    """When the next daily round and the next weekly leaderboard are due (None when paused)."""
    if config.paused or config.channel_id is None:
        return None, None
    return (
        timing.next_daily(now, config.daily_time, config.timezone),
        timing.next_weekly(now, config.daily_time, config.timezone),
    )
