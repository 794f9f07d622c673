"""A member's question's author hears the decision through the outbox (issue 20): written in
the decision's own transaction, sent privately by the platform's deliverer, retried like a
post when it fails for a while, given up where admins see it when it cannot be sent."""

from __future__ import annotations

from bot.background.delivery import Deliverer
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, CommunityRef, Notice, SuggestionDecided, SuggestionReceived, UserRef
from tests.conftest import FakeClock
from tests.test_suggestions import good_form

CLUB = CommunityRef("console", "club")
ANN = UserRef("console", "club", "ann", "Ann")


def suggested(engine: StudyEngine) -> int:
    received = engine.practice.suggest(ANN, ChannelRef("console", "club", "lobby"), good_form())
    assert isinstance(received, SuggestionReceived)
    return received.suggestion_id


def test_the_decision_is_queued_for_its_author_and_retried(engine: StudyEngine, clock: FakeClock) -> None:
    number = suggested(engine)
    decided = engine.practice.decide_suggestion(CLUB, number, "approve")
    assert isinstance(decided, SuggestionDecided)
    [due] = engine.outbox.due_posts("console", "worker-1")
    assert due.channel == ChannelRef("console", "club", "ann")  # privately, to the author
    assert isinstance(due.card, SuggestionDecided)
    assert (due.card.action, due.card.prompt, due.card.question_id) == ("approved", decided.prompt, decided.question_id)
    assert due.card.author is not None and due.card.author.user_id == "ann"

    # the platform is down: tried again after the outbox's backoff, not lost and not dropped
    assert engine.outbox.delivery_failed(due.outbox_id, "Discord error 503") is False
    assert engine.outbox.due_posts("console", "worker-2") == []
    clock.advance(seconds=engine.delivery.base_delay_s + 1)
    [again] = engine.outbox.due_posts("console", "worker-2")
    assert again.outbox_id == due.outbox_id and again.attempts == 1

    # their messages are closed: given up, and the admins' /config says so
    assert engine.outbox.delivery_failed(again.outbox_id, "the bot may not post there (50007)", permanent=True)
    [alert] = engine.admin.config(CLUB).alerts
    assert f"decision on suggestion #{number}" in alert and "50007" in alert and "gave up" in alert

    # a second decision is refused and queues nothing more
    assert isinstance(engine.practice.decide_suggestion(CLUB, number, "reject"), Notice)
    clock.advance(hours=1)
    assert engine.outbox.due_posts("console", "worker-3") == []


def test_a_deliverer_tells_the_author_once_across_failures(engine: StudyEngine, clock: FakeClock) -> None:
    number = suggested(engine)
    engine.practice.decide_suggestion(CLUB, number, "note", "Name the layer it recomputes.")
    told: list[SuggestionDecided] = []
    attempts = 0

    def send(channel: ChannelRef, card: object) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionResetError("connection reset by peer")
        assert isinstance(card, SuggestionDecided) and channel.channel_id == "ann"
        told.append(card)
        return f"dm:{attempts}"

    deliverer = Deliverer(engine, "console")
    assert deliverer.deliver_due(send) == 0
    clock.advance(seconds=engine.delivery.base_delay_s + 1)
    assert deliverer.deliver_due(send) == 1
    clock.advance(hours=2)
    assert deliverer.deliver_due(send) == 0
    assert [(c.action, c.note) for c in told] == [("returned", "Name the layer it recomputes.")]
    assert engine.outbox.undelivered(CLUB) == []


def test_an_author_forgotten_before_delivery_is_not_messaged(engine: StudyEngine) -> None:
    number = suggested(engine)
    engine.practice.decide_suggestion(CLUB, number, "reject")
    engine.admin.forget_me(ANN, confirm=True)
    assert engine.outbox.due_posts("console", "worker-1") == []  # nothing is sent to someone forgotten
    # the message to them went with the rest of them (issue 27): no row names them, no alert
    assert engine.outbox.undelivered(CLUB) == []
