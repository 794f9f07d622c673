"""The outbox and its deliverers, on a real SQLite file and a real PostgreSQL server: retries
with backoff, retry-after, giving up where admins see it, restarts, expired leases, two
deliverers on one database, and the message references a send returns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from bot.background.bridge import Bridge
from bot.background.delivery import Deliverer
from bot.core.bank import Bank
from bot.core.engine import DeliveryPolicy, StudyEngine
from bot.core.errors import SendFailed
from bot.core.values import ChannelRef, CommunityRef, Posted, QuestionCard, RevealCard
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock

PLATFORM = "console"
CH = ChannelRef(PLATFORM, "guild", "general")
COMMUNITY = CommunityRef(PLATFORM, "guild")


class Recorder:
    """A platform's send: records every card it is handed and fails as told. `script` holds
    one entry per call: None to succeed, an exception to raise; after it, every call succeeds
    (or fails with `always`)."""

    def __init__(self, script: list[BaseException | None] | None = None, always: BaseException | None = None) -> None:
        self.script = list(script or [])
        self.always = always
        self.calls: list[Posted] = []
        self.sent: list[Posted] = []
        self._lock = threading.Lock()

    def __call__(self, _channel: ChannelRef, card: Posted) -> str:
        with self._lock:
            self.calls.append(card)
            outcome = self.script.pop(0) if self.script else self.always
            if outcome is not None:
                raise outcome
            self.sent.append(card)
            return f"ref-{type(card).__name__}-{len(self.sent)}"


def open_round(engine: StudyEngine, channel: ChannelRef = CH) -> QuestionCard:
    """Open a daily round; the card as the channel gets it (the admin's note is told only to
    whoever opened the round, never posted)."""
    card = engine.rounds.open_daily(channel)
    assert isinstance(card, QuestionCard)
    return replace(card, admin_note=None)


def restarted(db_url: str, bank: Bank, clock: FakeClock) -> tuple[Database, StudyEngine]:
    """A new process on the same database: its own connections and engine."""
    database = Database(db_url)
    return database, StudyEngine(SqlStore(database), bank, clock=clock)


def test_a_sender_that_fails_twice_then_succeeds_posts_once(engine: StudyEngine, clock: FakeClock) -> None:
    card = open_round(engine)
    send = Recorder([RuntimeError("502 Bad Gateway"), RuntimeError("connection reset")])
    deliverer = Deliverer(engine, PLATFORM)

    assert deliverer.deliver_due(send) == 0  # first try fails
    clock.now += engine.delivery.delay(1)
    assert deliverer.deliver_due(send) == 0  # second try fails
    clock.now += engine.delivery.delay(2)
    assert deliverer.deliver_due(send) == 1  # third try posts

    assert len(send.calls) == 3
    assert send.sent == [card]
    clock.advance(days=1)
    assert deliverer.deliver_due(send) == 0  # and never again
    assert len(send.calls) == 3
    assert engine.outbox.undelivered() == []  # a post that got through is nothing to report


def test_a_retry_waits_for_its_backoff(engine: StudyEngine, clock: FakeClock) -> None:
    open_round(engine)
    send = Recorder([RuntimeError("503")])
    deliverer = Deliverer(engine, PLATFORM)
    assert deliverer.deliver_due(send) == 0
    assert len(send.calls) == 1

    assert deliverer.deliver_due(send) == 0  # at once: not due yet
    wait = engine.delivery.delay(1)
    clock.now += wait / 2
    assert deliverer.deliver_due(send) == 0  # halfway: still not due
    assert len(send.calls) == 1
    waiting = engine.outbox.undelivered(COMMUNITY)  # admins see the pending retry meanwhile
    assert len(waiting) == 1 and "next try" in waiting[0] and "503" in waiting[0]

    clock.now += wait / 2
    assert deliverer.deliver_due(send) == 1
    assert len(send.calls) == 2


def test_the_backoff_doubles_up_to_its_cap() -> None:
    policy = DeliveryPolicy(max_attempts=6, base_delay_s=60, max_delay_s=960)
    assert [policy.delay(n).total_seconds() for n in range(1, 7)] == [60, 120, 240, 480, 960, 960]
    assert policy.delay(1, retry_after=600).total_seconds() == 600
    assert policy.delay(4, retry_after=10).total_seconds() == 480  # a shorter retry-after never hurries


def test_a_retry_after_is_honoured(engine: StudyEngine, clock: FakeClock) -> None:
    open_round(engine)
    send = Recorder([SendFailed("429 Too Many Requests", retry_after=600)])
    deliverer = Deliverer(engine, PLATFORM)
    assert deliverer.deliver_due(send) == 0

    assert engine.delivery.delay(1).total_seconds() < 599  # the plain backoff would have retried sooner
    clock.advance(seconds=599)
    assert deliverer.deliver_due(send) == 0
    assert len(send.calls) == 1
    clock.advance(seconds=1)
    assert deliverer.deliver_due(send) == 1
    assert len(send.calls) == 2


def test_a_sender_that_always_fails_is_given_up_after_the_limit(engine: StudyEngine, clock: FakeClock) -> None:
    card = open_round(engine)
    send = Recorder(always=RuntimeError("500 Internal Server Error"))
    deliverer = Deliverer(engine, PLATFORM)
    limit = engine.delivery.max_attempts
    for attempt in range(1, limit + 1):
        assert deliverer.deliver_due(send) == 0
        assert len(send.calls) == attempt
        clock.now += engine.delivery.delay(attempt)
    clock.advance(days=2)
    assert deliverer.deliver_due(send) == 0
    assert len(send.calls) == limit  # given up: no further tries

    alerts = engine.outbox.undelivered()
    assert len(alerts) == 1
    assert f"daily round #{card.round_id}" in alerts[0]
    assert "gave up" in alerts[0] and f"{limit} tries" in alerts[0] and "500 Internal Server Error" in alerts[0]
    assert engine.outbox.undelivered(COMMUNITY) == alerts
    assert engine.admin.config(COMMUNITY).alerts == tuple(alerts)
    assert engine.outbox.undelivered(CommunityRef(PLATFORM, "elsewhere")) == []


def test_a_permanent_failure_is_given_up_at_once(engine: StudyEngine, clock: FakeClock) -> None:
    card = open_round(engine)
    send = Recorder(always=SendFailed("Unknown Channel", permanent=True))
    deliverer = Deliverer(engine, PLATFORM)
    assert deliverer.deliver_due(send) == 0
    clock.advance(days=1)
    assert deliverer.deliver_due(send) == 0
    assert len(send.calls) == 1
    (alert,) = engine.admin.config(COMMUNITY).alerts
    assert f"daily round #{card.round_id}" in alert and "1 try" in alert and "Unknown Channel" in alert


def test_a_crash_between_claim_and_send_delivers_once_after_restart(
    db_url: str, engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    card = open_round(engine)  # the round and its outbox row are written; the process dies here
    database, after_restart = restarted(db_url, test_bank, clock)
    try:
        send = Recorder()
        assert Deliverer(after_restart, PLATFORM).deliver_due(send) == 1
        assert send.sent == [card]
        assert Deliverer(after_restart, PLATFORM).deliver_due(send) == 0  # yet another restart
        assert Deliverer(engine, PLATFORM).deliver_due(send) == 0
        assert send.sent == [card]
    finally:
        database.dispose()


def test_a_row_held_by_a_dead_deliverer_waits_for_its_lease(
    db_url: str, engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    card = open_round(engine)
    claimed = engine.outbox.due_posts(PLATFORM, "dead-worker")  # claimed, then the worker died
    assert [d.card for d in claimed] == [card]

    database, other = restarted(db_url, test_bank, clock)
    try:
        send = Recorder()
        deliverer = Deliverer(other, PLATFORM)
        assert deliverer.deliver_due(send) == 0  # the lease still holds
        clock.advance(seconds=engine.delivery.lease_s - 1)
        assert deliverer.deliver_due(send) == 0
        assert send.calls == []
        clock.advance(seconds=2)  # the lease ran out
        assert deliverer.deliver_due(send) == 1
        assert send.sent == [card]
        assert deliverer.deliver_due(send) == 0
    finally:
        database.dispose()


def test_a_deliverer_only_sends_its_own_platform(engine: StudyEngine) -> None:
    card = open_round(engine)
    other_platform = Recorder()
    assert Deliverer(engine, "discord").deliver_due(other_platform) == 0
    assert Deliverer(engine, PLATFORM, community="someone-else").deliver_due(other_platform) == 0
    assert other_platform.calls == []
    mine = Recorder()
    assert Deliverer(engine, PLATFORM, community="guild").deliver_due(mine) == 1
    assert mine.sent == [card]


def test_two_deliverers_on_one_database_never_send_a_row_twice(
    db_url: str, engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    # 30 rounds: one community has one a day, so 30 communities (issue 28).
    expected = sorted(open_round(engine, ChannelRef(PLATFORM, f"guild-{i}", "ch")).round_id for i in range(30))
    sent: list[tuple[str, int]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    start = threading.Barrier(2)
    # Each deliverer's first send waits (up to a deadline) until the other one is sending too:
    # both hold a claimed batch at once, whatever the threads' timing on a busy machine.
    sending = {"left": threading.Event(), "right": threading.Event()}

    def worker(name: str) -> None:
        database, own = restarted(db_url, test_bank, clock)
        other = "right" if name == "left" else "left"
        try:
            deliverer = Deliverer(own, PLATFORM, batch=3)

            def send(_channel: ChannelRef, card: Posted) -> str:
                assert isinstance(card, QuestionCard)
                with lock:
                    sent.append((name, card.round_id))
                sending[name].set()
                sending[other].wait(timeout=30)
                return f"{name}-{card.round_id}"

            start.wait(timeout=60)
            while deliverer.deliver_due(send):
                pass
        except BaseException as exc:  # noqa: BLE001 - surfaced below, never lost in the thread
            errors.append(exc)
        finally:
            database.dispose()

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a deliverer did not finish"
    assert errors == []
    by = {name: sorted(r for who, r in sent if who == name) for name in ("left", "right")}
    assert by["left"] and by["right"], f"one deliverer sent nothing: {by}"
    assert sorted(by["left"] + by["right"]) == expected, "a row was sent twice or not at all"
    assert Deliverer(engine, PLATFORM).deliver_due(Recorder()) == 0  # nothing left behind


def test_the_question_ref_from_send_reaches_the_reveal(engine: StudyEngine) -> None:
    card = open_round(engine)
    send = Recorder()
    deliverer = Deliverer(engine, PLATFORM)
    assert deliverer.deliver_due(send) == 1
    question_ref = "ref-QuestionCard-1"

    reveal = engine.rounds.close_round(card.round_id)
    assert isinstance(reveal, RevealCard)
    assert reveal.question_ref == question_ref

    assert deliverer.deliver_due(send) == 1  # the reveal goes out through the outbox too
    posted = send.sent[-1]
    assert isinstance(posted, RevealCard) and posted.round_id == card.round_id
    assert posted.question_ref == question_ref


async def test_deliver_due_async_posts_through_the_bridge(engine: StudyEngine) -> None:
    card = open_round(engine)
    sent: list[tuple[ChannelRef, Posted]] = []

    async def send(channel: ChannelRef, posted: Posted) -> str:
        sent.append((channel, posted))
        return "discord-message-1234"

    bridge = Bridge(threads=2)
    try:
        deliverer = Deliverer(engine, PLATFORM)
        assert await deliverer.deliver_due_async(send, bridge.run) == 1
        assert sent == [(CH, card)]
        assert await deliverer.deliver_due_async(send, bridge.run) == 0
        reveal = await bridge.run(engine.rounds.close_round, card.round_id)
        assert isinstance(reveal, RevealCard) and reveal.question_ref == "discord-message-1234"
    finally:
        bridge.close()


async def test_deliver_due_async_records_failures(engine: StudyEngine, clock: FakeClock) -> None:
    open_round(engine)
    calls: list[Posted] = []

    async def send(_channel: ChannelRef, posted: Posted) -> str:
        calls.append(posted)
        if len(calls) == 1:
            raise SendFailed("rate limited", retry_after=300)
        return "ok"

    bridge = Bridge(threads=2)
    try:
        deliverer = Deliverer(engine, PLATFORM)
        assert await deliverer.deliver_due_async(send, bridge.run) == 0
        assert deliverer.failed == 1
        clock.advance(seconds=299)
        assert await deliverer.deliver_due_async(send, bridge.run) == 0
        clock.advance(seconds=1)
        assert await deliverer.deliver_due_async(send, bridge.run) == 1
        assert len(calls) == 2
    finally:
        bridge.close()


def test_a_weekly_board_is_queued_to_the_community_channel(engine: StudyEngine) -> None:
    engine.admin.config(COMMUNITY, "channel", "general")
    board = engine.boards.weekly_post(COMMUNITY, "2026-W48")
    assert board is not None
    assert engine.boards.weekly_post(COMMUNITY, "2026-W48") is None  # claimed once
    channels: list[ChannelRef] = []

    def send(channel: ChannelRef, card: Posted) -> str:
        channels.append(channel)
        assert card == board
        return "board"

    assert Deliverer(engine, PLATFORM).deliver_due(send) == 1
    assert channels == [CH]


def test_deliverers_that_serve_some_communities_split_the_rows(engine: StudyEngine) -> None:
    """Two shard processes on one database: each deliverer claims only the rows of the
    communities its `serves` accepts (up to its batch, however many rows of the other come
    first), and leaves the others' rows unclaimed for them."""
    channels = [ChannelRef(PLATFORM, f"guild{n}", "general") for n in range(6)]
    for channel in channels:
        open_round(engine, channel)
    got: dict[str, list[str]] = {"even": [], "odd": []}

    def sender(name: str) -> Callable[[ChannelRef, Posted], str]:
        def send(channel: ChannelRef, _card: Posted) -> str:
            got[name].append(channel.community_id)
            return f"ref-{channel.community_id}"

        return send

    odd = Deliverer(engine, PLATFORM, batch=2, serves=lambda community: int(community[-1]) % 2 == 1)
    even = Deliverer(engine, PLATFORM, batch=2, serves=lambda community: int(community[-1]) % 2 == 0)
    assert odd.deliver_due(sender("odd")) == 2
    assert even.deliver_due(sender("even")) == 2
    assert odd.deliver_due(sender("odd")) == 1
    assert even.deliver_due(sender("even")) == 1
    assert odd.deliver_due(sender("odd")) == 0 and even.deliver_due(sender("even")) == 0
    assert got == {"odd": ["guild1", "guild3", "guild5"], "even": ["guild0", "guild2", "guild4"]}
