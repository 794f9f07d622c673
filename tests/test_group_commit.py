"""Group commit: concurrent first answers share one transaction on SQLite (each in its own
savepoint) and one each on PostgreSQL; either way every rule of a first answer holds, and
a unit that fails loses only itself."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text

from bot.background.bridge import Bridge
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.values import AlreadyAnswered, AnswerFeedback, ChannelRef, Problem, QuestionCard, RevealCard, UserRef
from bot.store.answers import AnswersRepo
from bot.store.repository import SqlStore, SqlTx
from tests.conftest import FakeClock

CH = ChannelRef("console", "guild", "general")


def user(name: str) -> UserRef:
    return UserRef("console", "guild", name.lower(), name)


def shown_right(bank: Bank, card: QuestionCard) -> int:
    question = bank.get(card.question_id)
    assert question is not None
    return card.choices.index(question.choices[question.answer_index].text)


def open_round(engine: StudyEngine) -> QuestionCard:
    card = engine.rounds.open_daily(CH)
    assert isinstance(card, QuestionCard)
    return card


def scalar(engine: StudyEngine, sql: str, **params: Any) -> Any:
    store = engine.store
    assert isinstance(store, SqlStore)
    with store.db.read() as conn:
        return conn.execute(text(sql), params).scalar_one()


async def test_concurrent_first_answers_are_stored_once_with_every_rule(
    engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    """200 users, each clicking twice at once, through the bridge: 200 answers stored, the
    duplicates told AlreadyAnswered, streak bonuses, points totals and review cards right."""
    yesterday = open_round(engine)
    for i in range(0, 200, 2):  # the even users were right yesterday: +1 streak bonus today
        engine.rounds.answer(user(f"u{i}"), yesterday.round_id, shown_right(test_bank, yesterday))
    assert isinstance(engine.rounds.close_round(yesterday.round_id), RevealCard)
    clock.advance(days=1)
    card = open_round(engine)
    right = shown_right(test_bank, card)
    wrong = (right + 1) % len(card.choices)
    picks = {f"u{i}": right if i % 4 < 2 else wrong for i in range(200)}
    bridge = Bridge(threads=8)
    try:
        results = await asyncio.gather(
            *(
                bridge.call(engine.rounds.answer, user(name), card.round_id, pick)
                for name, pick in picks.items()
                for _ in (0, 1)
            )
        )
    finally:
        bridge.close()
    feedback = [r for r in results if isinstance(r, AnswerFeedback)]
    assert len(feedback) == 200 and sum(isinstance(r, AlreadyAnswered) for r in results) == 200
    by_user = {
        name: f
        for name, f in zip([n for n in picks for _ in (0, 1)], results, strict=True)
        if isinstance(f, AnswerFeedback)
    }
    assert len(by_user) == 200
    for name, shown in by_user.items():
        i = int(name[1:])
        assert shown.correct == (picks[name] == right)
        expected = 0 if not shown.correct else 11 if i % 2 == 0 else 10
        assert shown.points == expected and shown.streak_bonus == (1 if expected == 11 else 0)
    assert scalar(engine, "SELECT count(*) FROM answers WHERE round_id = :r", r=card.round_id) == 200
    today = sum(f.points for f in feedback)
    assert scalar(engine, "SELECT sum(points_total) FROM members") == today + 100 * 10
    misses = sum(1 for f in feedback if not f.correct)
    assert scalar(engine, "SELECT count(*) FROM reviews") == misses == 100
    store = engine.store
    assert isinstance(store, SqlStore)
    if store.group is not None:  # SQLite: the burst was written in fewer transactions than answers
        assert store.group.units >= 200 and store.group.transactions < store.group.units


def _queued(store: SqlStore, count: int) -> None:
    """Wait until `count` units are queued behind the running one."""
    assert store.group is not None
    deadline = time.monotonic() + 30
    while len(store.group._queue) < count:
        assert time.monotonic() < deadline, "the units never queued"
        time.sleep(0.005)


async def test_a_failing_unit_does_not_lose_the_others_of_its_transaction(
    sqlite_url: str, test_bank: Bank, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: while one unit holds the writer, 40 first answers queue; they then commit in
    ONE transaction. One of them fails after writing its member row (its savepoint is rolled
    back: nothing of it stays), one chose a letter that does not exist (refused before
    writing); the other 38 are stored and scored."""
    from bot.store.database import Database

    database = Database(sqlite_url)
    store = SqlStore(database)
    engine = StudyEngine(store, test_bank, clock=clock)
    assert store.group is not None
    card = open_round(engine)
    right = shown_right(test_bank, card)

    real_insert = AnswersRepo.insert_answer

    def failing_insert(repo: AnswersRepo, answer: Any) -> bool:
        stored = real_insert(repo, answer)
        name = repo.conn.execute(text("SELECT user_id FROM members WHERE id = :m"), {"m": answer.member_id}).scalar()
        if name == "doomed":
            raise RuntimeError("disk on fire")
        return stored

    monkeypatch.setattr(AnswersRepo, "insert_answer", failing_insert)
    holding, release = threading.Event(), threading.Event()

    def hold(_tx: SqlTx) -> str:
        holding.set()
        release.wait(30)
        return "held"

    names = [f"u{i}" for i in range(38)] + ["doomed"]
    bridge = Bridge(threads=48)
    try:
        loop = asyncio.get_running_loop()
        held = loop.run_in_executor(None, store.grouped, hold)
        await loop.run_in_executor(None, holding.wait, 30)
        before = store.group.transactions
        calls = [bridge.call(engine.rounds.answer, user(n), card.round_id, right) for n in names]
        calls.append(bridge.call(engine.rounds.answer, user("typo"), card.round_id, 9))
        answers = asyncio.gather(*calls)
        await loop.run_in_executor(None, _queued, store, len(names))
        release.set()
        results = await answers
        assert await held == "held"
    finally:
        bridge.close()
    *stored, doomed, typo = results
    assert all(isinstance(r, AnswerFeedback) and r.correct and r.points == 10 for r in stored)
    assert isinstance(doomed, Problem) and doomed.incident  # a bug, reported with its incident id
    assert isinstance(typo, Problem) and "Choose one of" in typo.text
    assert store.group.transactions - before == 2  # the held unit's, then the 39 writes in one
    assert scalar(engine, "SELECT count(*) FROM answers WHERE round_id = :r", r=card.round_id) == 38
    assert scalar(engine, "SELECT count(*) FROM members WHERE user_id IN ('doomed', 'typo')") == 0
    assert scalar(engine, "SELECT sum(points_total) FROM members") == 380
    monkeypatch.setattr(AnswersRepo, "insert_answer", real_insert)  # and the doomed user can answer later
    again = engine.rounds.answer(user("doomed"), card.round_id, right)
    assert isinstance(again, AnswerFeedback) and again.points == 10
    database.dispose()


def test_a_failed_commit_fails_every_unit_of_the_batch(sqlite_url: str) -> None:
    """When the shared transaction itself fails, no unit is told it was stored."""
    from bot.store.database import Database

    database = Database(sqlite_url)
    store = SqlStore(database)
    assert store.group is not None
    results: list[Any] = []
    holding, release = threading.Event(), threading.Event()

    def unit(value: int) -> Callable[[SqlTx], int]:
        def run(tx: SqlTx) -> int:
            if value == 0:
                holding.set()
                release.wait(30)
            tx.conn.execute(text("CREATE TABLE IF NOT EXISTS t (v INTEGER)"))
            tx.conn.execute(text("INSERT INTO t VALUES (:v)"), {"v": value})
            return value

        return run

    def submit(value: int) -> None:
        try:
            results.append(store.grouped(unit(value)))
        except Exception as exc:  # noqa: BLE001 - collected for the assertions
            results.append(exc)

    threads = [threading.Thread(target=submit, args=(0,))]
    threads[0].start()
    assert holding.wait(30)
    for value in range(1, 6):
        threads.append(threading.Thread(target=submit, args=(value,)))
        threads[-1].start()
    _queued(store, 5)

    real_commit = database.writer.dialect.do_commit
    commits = 0

    def second_commit_fails(dbapi_connection: Any) -> None:
        nonlocal commits
        commits += 1
        if commits == 2:  # the first commits the held unit alone; the second, the batch
            raise RuntimeError("commit failed")
        real_commit(dbapi_connection)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(database.writer.dialect, "do_commit", second_commit_fails)
        release.set()
        for thread in threads:
            thread.join(30)
    assert commits == 2
    assert results[0] == 0
    assert all(isinstance(r, RuntimeError) for r in results[1:]), results
    with database.read() as conn:
        assert conn.execute(text("SELECT v FROM t")).scalars().all() == [0]
    database.dispose()
