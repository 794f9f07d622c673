"""Issue 28: a community's rounds and members' questions are numbered in that community (#1,
#2, ...), whatever other communities share the tables: a new community's first round is #1, an
admin's `/config approve 1` takes their own community's #1, concurrent rounds never share a
number, and an upgraded database numbers its existing rows in order. SQLite and PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, text

from bot.core import wording
from bot.core.engine import DemoPolicy, StudyEngine
from bot.core.errors import NotFound
from bot.core.values import (
    AlreadyOpen,
    ChannelRef,
    CommunityRef,
    QuestionCard,
    SuggestionDecided,
    SuggestionReceived,
    UserRef,
)
from bot.store.database import migrations_dir, upgrade
from tests.test_suggestions import good_form

OLD = ChannelRef("discord", "old-guild", "quiz")
NEW = ChannelRef("discord", "new-guild", "quiz")


def member(channel: ChannelRef, name: str) -> UserRef:
    return UserRef(channel.platform, channel.community_id, name.lower(), name)


def test_a_new_communitys_first_round_is_number_1(engine: StudyEngine) -> None:
    old_daily = engine.rounds.open_daily(OLD)
    old_quiz = engine.practice.quiz(member(OLD, "Ann"), OLD)
    new_daily = engine.rounds.open_daily(NEW)
    assert isinstance(old_daily, QuestionCard) and isinstance(new_daily, QuestionCard)
    assert (old_daily.number, old_quiz.number, new_daily.number) == (1, 2, 1)
    assert new_daily.round_id > old_quiz.round_id  # the row id is shared: it is never shown
    assert wording.question_title(new_daily).startswith("Daily question #1 ")
    again = engine.rounds.open_daily(NEW)
    assert isinstance(again, AlreadyOpen) and again.number == 1
    assert wording.already_open(again).startswith("Today's round (#1, ")
    feedback = engine.rounds.answer(member(NEW, "Bob"), new_daily.round_id, 0)
    assert wording.answered_which(feedback).startswith("This answered daily round #1")  # type: ignore[arg-type]
    assert engine.rounds.close_round(new_daily.round_id).number == 1  # type: ignore[union-attr]


def test_suggestions_are_numbered_and_decided_per_community(engine: StudyEngine) -> None:
    for name in ("Ann", "Bob"):
        sent = engine.practice.suggest(member(OLD, name), OLD, good_form(prompt=f"{name}: " + good_form().prompt))
        assert isinstance(sent, SuggestionReceived)
    fresh = engine.practice.suggest(member(NEW, "Cy"), NEW, good_form())
    assert isinstance(fresh, SuggestionReceived) and fresh.number == 1
    assert wording.suggestion_received(fresh).startswith("Thanks! Your question #1 is waiting")
    decided = engine.admin.configure(CommunityRef("discord", "new-guild"), "approve", "1")
    assert isinstance(decided, SuggestionDecided) and decided.number == 1
    assert decided.suggestion_id == fresh.suggestion_id  # the new guild's own #1, not the old guild's
    old_queue = engine.practice.suggestion_queue(CommunityRef("discord", "old-guild"))
    assert [item.number for item in old_queue.items] == [1, 2] and old_queue.waiting == 2
    with pytest.raises(NotFound, match=r"There is no suggestion #2 in this community\."):
        engine.admin.configure(CommunityRef("discord", "new-guild"), "reject", "2")


def test_concurrent_rounds_in_one_community_never_share_a_number(engine: StudyEngine) -> None:
    engine.rounds.open_daily(OLD)

    def quiz(n: int) -> int:
        return engine.practice.quiz(member(OLD, f"M{n}"), OLD).number

    with ThreadPoolExecutor(max_workers=8) as pool:
        numbers = sorted(pool.map(quiz, range(24)))
    assert numbers == list(range(2, 26))


def test_an_upgraded_database_numbers_its_rows_in_order(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "0019")  # before rounds had numbers
    db = create_engine(url)
    try:
        with db.begin() as conn:
            for cid, external in ((1, "a"), (2, "b")):
                conn.execute(
                    text(
                        "INSERT INTO communities (id, platform, external_id, name, timezone, daily_time, "
                        "window_hours, topics, paused, created_at, web_public, version) "
                        "VALUES (:id, 'discord', :ext, :ext, 'UTC', '09:00', 12, '', 0, '2026-11-01', 0, 0)"
                    ),
                    {"id": cid, "ext": external},
                )
            for rid, cid in ((1, 1), (2, 2), (3, 1), (4, 2), (5, 1)):
                conn.execute(
                    text(
                        "INSERT INTO rounds (id, community_id, channel_id, question_id, kind, opened_at, late) "
                        "VALUES (:id, :c, 'ch', 't-trade', 'practice', '2026-11-01', 0)"
                    ),
                    {"id": rid, "c": cid},
                )
        upgrade(url)
        with db.connect() as conn:
            numbered = conn.execute(text("SELECT id, number FROM rounds ORDER BY id")).all()
            counters = conn.execute(text("SELECT id, rounds_numbered FROM communities ORDER BY id")).all()
        assert [tuple(r) for r in numbered] == [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3)]
        assert [tuple(c) for c in counters] == [(1, 3), (2, 2)]
    finally:
        db.dispose()


def test_demo_jobs_are_numbered_per_community(engine: StudyEngine) -> None:
    engine.demos.policy = DemoPolicy(cooldown_s=0)
    tiny = "checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block"
    first = engine.demos.request_demo(member(OLD, "Ann"), OLD, tiny)
    second = engine.demos.request_demo(member(OLD, "Bob"), OLD, tiny)
    fresh = engine.demos.request_demo(member(NEW, "Cy"), NEW, tiny)
    assert (first.number, second.number, fresh.number) == (1, 2, 1)
    assert wording.demo_queued(fresh).startswith("Demo #1 (")
    [entry] = engine.web.demos_page(CommunityRef("discord", "new-guild")).demos  # the web page's list
    assert entry.number == 1 and entry.job_id == fresh.job_id


def test_a_round_opened_elsewhere_a_moment_ago_is_named_by_its_day() -> None:
    """A daily round another process opened between our read and write may not be visible to
    this transaction yet: the answer names its day, never a '#0'."""
    assert wording.already_open(AlreadyOpen(0, 0, "2026-11-23")) == "Today's round (2026-11-23) is already open here."
    assert wording.already_open(AlreadyOpen(7000, 3, "2026-11-23")).startswith("Today's round (#3, 2026-11-23)")
