"""The answer path's machinery: the bridge's own thread pool (every call answered, errors
handed back, cancelled callers, close), SQLite's held reader connections (fresh reads, nested
reads, forks, dispose, the limit) and PostgreSQL's reads in autocommit."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from bot.background.bridge import Bridge
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput
from bot.core.values import AlreadyAnswered, AnswerFeedback, ChannelRef, CommunityRef, Problem, QuestionCard, UserRef
from bot.store.database import Database
from bot.store.held import HELD_LIMIT
from bot.store.repository import SqlStore
from tests.conftest import FakeClock, PostgresDatabases

CH = ChannelRef("console", "guild", "general")
DEADLINE = 20.0


def user(name: str) -> UserRef:
    return UserRef("console", "guild", name.lower(), name)


def open_round(engine: StudyEngine) -> QuestionCard:
    card = engine.rounds.open_daily(CH)
    assert isinstance(card, QuestionCard)
    return card


def stored_answers(engine: StudyEngine, round_id: int) -> list[tuple[str, int]]:
    store = engine.store
    assert isinstance(store, SqlStore)
    with store.db.read() as conn:
        rows = conn.execute(
            text(
                "SELECT m.user_id, a.choice FROM answers a JOIN members m ON m.id = a.member_id "
                "WHERE a.round_id = :r ORDER BY m.user_id"
            ),
            {"r": round_id},
        ).all()
    return [(str(u), int(c)) for u, c in rows]


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait on the event loop until `condition()` holds, failing after DEADLINE seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


class Gate:
    """A job that says when it started and waits until it is let through."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.thread: threading.Thread | None = None

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def gated(*args: Any) -> Any:
            self.thread = threading.current_thread()
            self.started.set()
            assert self.release.wait(DEADLINE), "never released"
            try:
                return call(*args)
            finally:
                self.finished.set()

        return gated


# ------------------------------------------------------------------ the bridge


async def test_the_bridge_answers_every_call_with_its_own_result_and_at_most_its_threads_at_once() -> None:
    bridge = Bridge(threads=3)
    running = 0
    most = 0
    lock = threading.Lock()
    workers: set[threading.Thread] = set()

    def job(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            workers.add(threading.current_thread())
        try:
            return i * i
        finally:
            with lock:
                running -= 1

    results = await asyncio.gather(*(bridge.run(job, i) for i in range(500)))
    bridge.close()
    assert results == [i * i for i in range(500)]
    assert most <= 3
    assert 1 <= len(workers) <= 3


async def test_a_call_submitted_beside_a_slow_one_does_not_wait_for_it() -> None:
    """Two calls put in the same loop tick: the second runs on a second thread while the
    first is still busy (a click is not held behind a slow page)."""
    bridge = Bridge(threads=4)
    slow = Gate()
    first = asyncio.ensure_future(bridge.run(slow.wrap(lambda: "slow")))
    second = asyncio.ensure_future(bridge.run(lambda: "quick"))
    await until(second.done, "the quick call while the slow one is busy")
    assert second.result() == "quick"
    assert not first.done()
    slow.release.set()
    assert await first == "slow"
    bridge.close()


async def test_errors_come_back_to_their_caller_and_the_bridge_keeps_serving() -> None:
    bridge = Bridge(threads=2)

    def broken() -> None:
        raise ValueError("broken on purpose")

    def refused() -> None:
        raise InvalidInput("Choose one of A, B.")

    def stops() -> int:
        return next(iter([]))

    with pytest.raises(ValueError, match="broken on purpose"):
        await bridge.run(broken)
    # a Future refuses StopIteration itself: it still comes back, as a RuntimeError, and the
    # calls finished beside it are answered
    outcomes = await asyncio.gather(bridge.run(stops), *(bridge.run(int, i) for i in range(50)), return_exceptions=True)
    assert isinstance(outcomes[0], RuntimeError) and isinstance(outcomes[0].__cause__, StopIteration)
    assert outcomes[1:] == list(range(50))
    assert await bridge.call(refused) == Problem("Choose one of A, B.")
    bug = await bridge.call(broken)
    assert isinstance(bug, Problem) and bug.incident is not None and bug.incident in bug.text
    assert await bridge.run(lambda: "still serving") == "still serving"
    bridge.close()


@pytest.mark.usefixtures("test_bank")
async def test_a_caller_cancelled_while_its_answer_is_written_keeps_that_answer_once(engine: StudyEngine) -> None:
    bridge = Bridge(threads=4)
    card = open_round(engine)
    gate = Gate()
    ann = user("Ann")
    task = asyncio.ensure_future(bridge.call(gate.wrap(engine.rounds.answer), ann, card.round_id, 0))
    await until(gate.started.is_set, "the answer to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.release.set()
    await until(gate.finished.is_set, "the answer to finish")
    again = await bridge.call(engine.rounds.answer, ann, card.round_id, 2)
    assert again == AlreadyAnswered(round_id=card.round_id, number=card.number, chosen="A")
    assert stored_answers(engine, card.round_id) == [("ann", 0)]
    bridge.close()


@pytest.mark.usefixtures("test_bank")
async def test_a_caller_cancelled_while_queued_stores_nothing_and_its_next_click_counts(engine: StudyEngine) -> None:
    bridge = Bridge(threads=1)
    card = open_round(engine)
    blocker = Gate()
    busy = asyncio.ensure_future(bridge.run(blocker.wrap(lambda: "done")))
    await until(blocker.started.is_set, "the blocker to start")
    bob = user("Bob")
    queued = asyncio.ensure_future(bridge.call(engine.rounds.answer, bob, card.round_id, 1))
    await until(lambda: bridge._jobs.qsize() == 1, "the answer to wait in the queue behind the blocker")
    assert not queued.done() and blocker.started.is_set() and not blocker.finished.is_set()
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    blocker.release.set()
    assert await busy == "done"
    assert await bridge.run(lambda: "after") == "after"  # the one thread has passed the cancelled job
    assert stored_answers(engine, card.round_id) == []
    first = await bridge.call(engine.rounds.answer, bob, card.round_id, 1)
    assert isinstance(first, AnswerFeedback) and first.chosen == "B"
    assert stored_answers(engine, card.round_id) == [("bob", 1)]
    bridge.close()


async def test_close_lets_a_running_call_finish_cancels_queued_ones_and_refuses_new_ones() -> None:
    bridge = Bridge(threads=1)
    running = Gate()
    ran: list[str] = []
    first = asyncio.ensure_future(bridge.run(running.wrap(lambda: "finished")))
    await until(running.started.is_set, "the running call")
    queued = asyncio.ensure_future(bridge.run(lambda: ran.append("queued")))
    await until(lambda: bridge._jobs.qsize() == 1, "the second call to wait in the queue")
    assert not queued.done()
    bridge.close()
    running.release.set()
    assert await first == "finished"
    with pytest.raises(asyncio.CancelledError):
        await queued
    with pytest.raises(RuntimeError, match="closed"):
        await bridge.run(lambda: ran.append("late"))
    worker = running.thread
    assert worker is not None
    await until(lambda: not worker.is_alive(), "the worker to stop")
    assert ran == []


async def test_close_of_an_idle_bridge_stops_its_workers() -> None:
    bridge = Bridge(threads=4)
    threads = set(await asyncio.gather(*(bridge.run(threading.current_thread) for _ in range(20))))
    bridge.close()
    await until(lambda: not any(t.is_alive() for t in threads), "the idle workers to stop")


# ------------------------------------------------------------- held reader connections


def db_files(path: Path) -> list[str]:
    """This process's open file descriptors on the database file (and its -wal, -shm)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


@pytest.fixture
def sqlite_db(sqlite_url: str) -> Iterator[Database]:
    db = Database(sqlite_url)
    with db.write() as conn:
        conn.execute(text("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
    yield db
    db.dispose()


def notes(db: Database) -> list[str]:
    with db.read() as conn:
        return [str(b) for b in conn.execute(text("SELECT body FROM notes ORDER BY id")).scalars()]


def add_note(db: Database, body: str) -> None:
    with db.write() as conn:
        conn.execute(text("INSERT INTO notes (body) VALUES (:b)"), {"b": body})


def test_a_reading_thread_sees_what_another_thread_committed_since_its_last_read(sqlite_db: Database) -> None:
    with ThreadPoolExecutor(max_workers=1) as reader:  # one thread: its held connection each time
        assert reader.submit(notes, sqlite_db).result() == []
        add_note(sqlite_db, "one")
        assert reader.submit(notes, sqlite_db).result() == ["one"]

        def fails_mid_read() -> None:
            with sqlite_db.read() as conn:
                conn.execute(text("SELECT count(*) FROM notes")).scalar_one()  # begins its snapshot
                raise LookupError("the read's own error")

        with pytest.raises(LookupError):
            reader.submit(fails_mid_read).result()
        add_note(sqlite_db, "two")
        assert reader.submit(notes, sqlite_db).result() == ["one", "two"]  # no snapshot left open


async def test_a_repeat_click_on_another_bridge_thread_sees_the_first_answer(
    sqlite_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    db = Database(sqlite_url)
    engine = StudyEngine(SqlStore(db), test_bank, clock=clock)
    card = open_round(engine)
    bridge = Bridge(threads=4)
    # every thread reads once (each keeps a held connection), then Cy answers, then every
    # thread is asked for Cy's repeat click
    gates = [Gate() for _ in range(4)]
    community = CommunityRef("console", "guild")
    warm = [asyncio.ensure_future(bridge.run(g.wrap(engine.boards.leaderboard), community)) for g in gates]
    await until(lambda: all(g.started.is_set() for g in gates), "four threads")
    for g in gates:
        g.release.set()
    await asyncio.gather(*warm)
    cy = user("Cy")
    assert isinstance(await bridge.call(engine.rounds.answer, cy, card.round_id, 2), AnswerFeedback)
    repeats = await asyncio.gather(*(bridge.call(engine.rounds.answer, cy, card.round_id, 0) for _ in range(40)))
    assert repeats == [AlreadyAnswered(round_id=card.round_id, number=card.number, chosen="C")] * 40
    bridge.close()
    db.dispose()


def test_a_read_nested_in_a_read_works_and_the_thread_keeps_one_connection(sqlite_db: Database) -> None:
    add_note(sqlite_db, "outer")
    pool = sqlite_db.reader.pool
    with sqlite_db.read() as outer:
        assert outer.execute(text("SELECT count(*) FROM notes")).scalar_one() == 1
        with sqlite_db.read() as inner:
            assert inner is not outer
            assert [b for b in inner.execute(text("SELECT body FROM notes")).scalars()] == ["outer"]
        assert outer.execute(text("SELECT body FROM notes")).scalar_one() == "outer"
    add_note(sqlite_db, "after")
    for _ in range(5):
        assert notes(sqlite_db) == ["outer", "after"]
    # the thread's held connection, lent again each time
    assert pool.checkedout() == 1  # type: ignore[attr-defined]


def test_at_most_eight_connections_are_held_and_every_thread_still_reads(sqlite_db: Database) -> None:
    add_note(sqlite_db, "n")
    threads = HELD_LIMIT + 4
    everyone_read = threading.Barrier(threads + 1)
    done = threading.Event()
    seen: list[list[str]] = []

    def reader() -> None:
        seen.append(notes(sqlite_db))
        everyone_read.wait(DEADLINE)
        done.wait(DEADLINE)  # stay alive: a live thread's connection is not reclaimed

    workers = [threading.Thread(target=reader) for _ in range(threads)]
    for w in workers:
        w.start()
    everyone_read.wait(DEADLINE)
    assert seen == [["n"]] * threads
    assert sqlite_db.reader.pool.checkedout() == HELD_LIMIT  # type: ignore[attr-defined]
    done.set()
    for w in workers:
        w.join(DEADLINE)
    # threads that ended give their places to new ones
    later = [threading.Thread(target=lambda: seen.append(notes(sqlite_db))) for _ in range(HELD_LIMIT)]
    for w in later:
        w.start()
    for w in later:
        w.join(DEADLINE)
    assert len(seen) == threads + HELD_LIMIT and all(s == ["n"] for s in seen)
    assert sqlite_db.reader.pool.checkedout() <= HELD_LIMIT  # type: ignore[attr-defined]


async def test_dispose_closes_every_connection_of_the_database_file(
    tmp_path: Path, sqlite_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    path = tmp_path / "studybot.db"
    assert db_files(path) == []
    db = Database(sqlite_url)
    engine = StudyEngine(SqlStore(db), test_bank, clock=clock)
    card = open_round(engine)
    bridge = Bridge(threads=4)
    answers = [bridge.call(engine.rounds.answer, user(f"u{i}"), card.round_id, i % 3) for i in range(30)]
    assert all(isinstance(a, AnswerFeedback) for a in await asyncio.gather(*answers))
    with db.read() as outer, db.read() as inner:  # a held and a pooled one
        outer.execute(text("SELECT 1"))
        inner.execute(text("SELECT 1"))
    assert db_files(path) != []
    db.dispose()
    assert db_files(path) == []
    # and the database still serves afterwards, on new connections
    again = await bridge.call(engine.rounds.answer, user("u0"), card.round_id, 1)
    assert again == AlreadyAnswered(round_id=card.round_id, number=card.number, chosen="A")
    bridge.close()
    db.dispose()
    assert db_files(path) == []


def test_dispose_during_a_read_on_another_thread_leaves_that_read_to_finish_then_closes_it(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A bot shutting down (or a test tearing down) while the deliverer reads: the read runs
    to its end on its connection, which is closed once the read lets go of it."""
    path = tmp_path / "studybot.db"
    db = Database(sqlite_url)
    inside, go, done = threading.Event(), threading.Event(), threading.Event()
    results: list[object] = []

    def reader() -> None:
        try:
            with db.read() as conn:
                inside.set()
                go.wait(DEADLINE)
                results.append(conn.execute(text("SELECT count(*) FROM rounds")).scalar_one())
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results.append(exc)
        finally:
            done.set()
            go.wait(DEADLINE)  # stay alive past the check below

    thread = threading.Thread(target=reader)
    thread.start()
    assert inside.wait(DEADLINE)
    db.dispose()  # the held connection is in use: left to its read
    go.set()
    assert done.wait(DEADLINE)
    assert results == [0]
    assert db_files(path) == []  # closed when the read ended, its thread still alive
    thread.join(DEADLINE)


# --------------------------------------------------------------------------- fork


def _mark_connections(db: Database) -> list[str]:
    """Record, from now on, any use of a connection by a process other than the one that
    opened it (checkouts on both databases; on SQLite every statement, since held and kept
    connections are not checked out again)."""
    foreign: list[str] = []

    def on_connect(dbapi_connection: Any, record: Any) -> None:
        opened_by = os.getpid()
        record.info["pid"] = opened_by
        if db.is_sqlite:

            def trace(sql: str) -> None:
                if os.getpid() != opened_by:
                    foreign.append(sql)

            dbapi_connection.set_trace_callback(trace)

    def on_checkout(_dbapi: Any, record: Any, _proxy: Any) -> None:
        if record.info.get("pid") != os.getpid():
            foreign.append("checkout")

    for engine in {db.reader, db.writer}:
        event.listen(engine, "connect", on_connect)
        event.listen(engine, "checkout", on_checkout)
    return foreign


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
async def test_a_forked_child_opens_its_own_connections(db_url: str, test_bank: Bank, clock: FakeClock) -> None:
    db = Database(db_url)
    foreign = _mark_connections(db)
    engine = StudyEngine(SqlStore(db), test_bank, clock=clock)
    card = open_round(engine)
    bridge = Bridge(threads=4)
    first = await asyncio.gather(
        *(bridge.call(engine.rounds.answer, user(f"p{i}"), card.round_id, 0) for i in range(8))
    )
    assert all(isinstance(a, AnswerFeedback) for a in first)
    with db.read() as outer, db.read() as inner:  # the parent holds one and has one in its pool
        outer.execute(text("SELECT 1"))
        inner.execute(text("SELECT 1"))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a click, a repeat and a read, then its report
        code = 1
        try:
            fed = engine.rounds.answer(user("child"), card.round_id, 2)
            again = engine.rounds.answer(user("p0"), card.round_id, 1)
            seen = len(stored_answers(engine, card.round_id))
            report = f"{type(fed).__name__} {type(again).__name__} {seen} {len(foreign)}"
            os.write(write_end, report.encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        report = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert report == "AnswerFeedback AlreadyAnswered 9 0"
    # the parent's own connections still serve it
    assert len(stored_answers(engine, card.round_id)) == 9
    late = await bridge.call(engine.rounds.answer, user("late"), card.round_id, 1)
    assert isinstance(late, AnswerFeedback)
    assert foreign == []
    bridge.close()
    db.dispose()


# ------------------------------------------------------------------- PostgreSQL reads


@pytest.fixture
def postgres_db(postgres_databases: PostgresDatabases) -> Iterator[Database]:
    with postgres_databases.fresh(migrated=False) as url:  # an empty database of this test's own
        db = Database(url)
        with db.write() as conn:
            conn.execute(text("CREATE TABLE notes (id SERIAL PRIMARY KEY, body TEXT)"))
        yield db
        db.dispose()


def test_postgres_reads_leave_no_transaction_open_and_see_committed_writes(postgres_db: Database) -> None:
    db = postgres_db
    with db.read() as conn:
        assert conn.execute(text("SELECT count(*) FROM notes")).scalar_one() == 0
        backend = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.write() as other:  # another connection, committed while the read is open
            other.execute(text("INSERT INTO notes (body) VALUES ('one')"))
            assert other.execute(text("SELECT pg_backend_pid()")).scalar_one() != backend
        with db.write() as other:
            state = other.execute(text("SELECT state FROM pg_stat_activity WHERE pid = :p"), {"p": backend}).scalar()
        assert state == "idle"  # not "idle in transaction": no snapshot or lock held
        assert conn.execute(text("SELECT body FROM notes")).scalars().all() == ["one"]


def test_a_write_on_a_connection_a_read_used_is_still_one_transaction(postgres_db: Database) -> None:
    """The read's autocommit ends with the read: a unit that fails on the same pooled
    connection afterwards stores none of its statements."""
    db = postgres_db
    with db.read() as conn:
        reader = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with pytest.raises(LookupError), db.write() as conn:
        assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() == reader  # the same one
        conn.execute(text("INSERT INTO notes (body) VALUES ('half')"))
        raise LookupError("the unit fails after its first statement")
    assert notes(db) == []


# ------------------------------------------------------------ question ratings' rows


def shown_right(bank: Bank, card: QuestionCard) -> int:
    question = bank.get(card.question_id)
    assert question is not None
    return card.choices.index(question.choices[question.answer_index].text)


async def test_a_question_rating_is_its_start_plus_every_answers_change(engine: StudyEngine, test_bank: Bank) -> None:
    """However its rows are spread, a question's rating is the Elo replay of its answers, and
    answers given at once are each counted."""
    from bot.core.rules import rating as elo
    from bot.store.item_stats import question_ratings as analysis_ratings

    card = open_round(engine)
    question = test_bank.get(card.question_id)
    assert question is not None
    right = shown_right(test_bank, card)
    replay = elo.Rating(elo.start_difficulty(question.difficulty), 0)
    for i in range(40):
        correct = i % 3 == 0
        choice = right if correct else (right + 1) % len(card.choices)
        assert isinstance(engine.rounds.answer(user(f"r{i}"), card.round_id, choice), AnswerFeedback)
        change = elo.update(elo.Rating(0.0, 0), elo.Rating(0.0, 0), replay, correct)
        replay = elo.Rating(replay.value + change.difficulty, replay.answers + 1)
    with engine.store.read() as tx:
        one = tx.ratings.question_ratings((question.id,))
        every = tx.ratings.question_ratings()
    assert list(one) == list(every) == [question.id]
    for value, answers in (one[question.id], every[question.id]):
        assert value == pytest.approx(replay.value)
        assert answers == 40
    store = engine.store
    assert isinstance(store, SqlStore)
    with store.db.read() as conn:
        assert analysis_ratings(conn) == {question.id: pytest.approx(replay.value)}

    bridge = Bridge(threads=8)
    burst = await asyncio.gather(
        *(bridge.call(engine.rounds.answer, user(f"b{i}"), card.round_id, i % 3) for i in range(60))
    )
    assert all(isinstance(a, AnswerFeedback) for a in burst)
    with engine.store.read() as tx:
        assert tx.ratings.question_ratings((question.id,))[question.id][1] == 100
    bridge.close()


def test_an_older_database_keeps_its_question_ratings_through_the_upgrade(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    from bot.store.database import migrations_dir, upgrade

    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "0015")
    old = create_engine(url)
    with old.begin() as conn:
        conn.execute(text("INSERT INTO question_ratings (question_id, rating, answers) VALUES ('q-old', 0.75, 12)"))
    old.dispose()
    upgrade(url)
    db = Database(url)
    with db.read() as conn:
        from bot.store.question_ratings import read

        assert read(conn, ["q-old"]) == {"q-old": (0.75, 12)}
        assert read(conn) == {"q-old": (0.75, 12)}
    db.dispose()
