"""FSRS fitted to a community (issue 21): on a review log simulated from known parameters the
worker's fit predicts held-out reviews better than the defaults; a small log keeps the defaults
and says how many more reviews are needed; fitted parameters schedule the community's reviews
and /config says which are in use; the weekly job fits each community once a week."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.background.fsrs_runs import WeeklyFits, fit_community
from bot.background.schedule import StudyScheduler
from bot.core import wording
from bot.core.bank import load_bank
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput
from bot.core.rules.fsrs_params import (
    DEFAULTS,
    MIN_REVIEWS,
    AnsweredReview,
    counted_reviews,
    encode_log,
    review_log,
)
from bot.core.values import AnswerFeedback, ChannelRef, CommunityRef, NothingDue, QuestionCard, UserRef
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.worker.fsrs_fit import run_fit_process
from tests.conftest import TEST_BANK, FakeClock, migrated_sqlite, run_studybot
from tests.fsrs_simulation import TRUE_PARAMETERS, log_loss, simulate

LOCAL = CommunityRef("console", "local")
CHANNEL = ChannelRef("console", "local", "console")
ALICE = UserRef("console", "local", "alice", "Alice")
BOB = UserRef("console", "other", "bob", "Bob")


def shown_answer(engine: StudyEngine, card: QuestionCard) -> int:
    question = engine.bank.get(card.question_id)
    assert question is not None
    return card.choices.index(question.choices[question.answer_index].text)


def miss_then_review(
    engine: StudyEngine, clock: FakeClock, user: UserRef = ALICE, channel: ChannelRef = CHANNEL
) -> NothingDue:
    """Miss a /quiz question, review it right the next day; what /review says then."""
    card = engine.practice.quiz(user, channel)
    missed = engine.rounds.answer(user, card.round_id, (shown_answer(engine, card) + 1) % len(card.choices))
    assert isinstance(missed, AnswerFeedback) and not missed.correct
    clock.advance(days=1, hours=1)
    due = engine.practice.review(user, channel)
    assert isinstance(due, QuestionCard) and due.question_id == card.question_id
    right = engine.rounds.answer(user, due.round_id, shown_answer(engine, due))
    assert isinstance(right, AnswerFeedback) and right.correct
    after = engine.practice.review(user, channel)
    assert isinstance(after, NothingDue) and after.next_due is not None
    return after


def test_the_worker_fit_predicts_held_out_reviews_better_than_the_defaults() -> None:
    sim = simulate(seed=11, members=24, cards_per_member=12)
    train, test = sim.train(), sim.test()
    assert 2_000 <= len(sim.reviews) <= 5_000 and counted_reviews(train) >= MIN_REVIEWS

    result = run_fit_process(encode_log(train), timeout_s=300)  # the child process the worker runs

    fitted = result["parameters"]
    assert isinstance(fitted, list) and len(fitted) == len(DEFAULTS) and fitted != list(DEFAULTS)
    defaults_loss, count = log_loss(test, None)
    fitted_loss, same = log_loss(test, fitted)
    truth_loss, _ = log_loss(test, TRUE_PARAMETERS)
    assert count == same > 300
    assert fitted_loss < defaults_loss, (fitted_loss, defaults_loss)
    assert truth_loss <= fitted_loss + 0.01  # the fit cannot beat the parameters the log came from by much


def test_a_small_log_keeps_the_defaults_and_says_how_many_more_reviews_are_needed(
    tmp_path: Path, clock: FakeClock
) -> None:
    url = migrated_sqlite(tmp_path / "cli.db")  # the database run_studybot's CLI opens
    db = Database(url)
    engine = StudyEngine(SqlStore(db), load_bank(TEST_BANK), clock=clock)
    miss_then_review(engine, clock)

    done = run_studybot(tmp_path, ["fsrs", "fit", "--community", "local"], process=True)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == wording.FSRS_TOO_FEW.format(counted=1, minimum=MIN_REVIEWS, more=MIN_REVIEWS - 1)
    assert "511 more needed" in done.stdout and "keeps the default parameters" in done.stdout
    assert dict(engine.admin.config(LOCAL).settings)["fsrs"] == "defaults"
    assert engine.fsrs.fsrs_in_use(LOCAL).parameters is None
    db.dispose()


def test_no_fit_is_sent_below_the_minimum(engine: StudyEngine, clock: FakeClock) -> None:
    miss_then_review(engine, clock)

    def never(_rows: object) -> dict[str, object]:
        raise AssertionError("a log below the minimum must not be sent to the worker")

    sentence = fit_community(engine, LOCAL, never)
    assert sentence.startswith("Not enough reviews to fit FSRS yet: 1 of the 512")


def test_the_review_log_is_each_cards_first_miss_then_its_reviews(engine: StudyEngine, clock: FakeClock) -> None:
    miss_then_review(engine, clock)
    request = engine.fsrs.fsrs_request(LOCAL)
    assert [(r.card, r.rating) for r in request.log] == [(1, 1), (1, 3)]  # Again at the miss, Good a day later
    assert request.counted == 1 and request.needed == MIN_REVIEWS - 1

    at = datetime(2026, 3, 2, 12, tzinfo=UTC)
    answers = [
        AnsweredReview(1, "q1", "daily", True, at),  # right before any miss: no card yet
        AnsweredReview(1, "q1", "practice", False, at + timedelta(days=1)),  # the first miss
        AnsweredReview(1, "q1", "daily", False, at + timedelta(days=2)),  # not a review round
        AnsweredReview(1, "q1", "review", True, at + timedelta(days=3), "unsure"),
        AnsweredReview(1, "q1", "review", True, at + timedelta(days=9), "sure"),
        AnsweredReview(2, "q1", "review", False, at + timedelta(days=4)),
    ]
    assert [(r.card, r.rating, r.at.day) for r in review_log(answers)] == [
        (1, 1, 3),
        (1, 2, 5),
        (1, 3, 11),
        (2, 1, 6),
    ]


def test_fitted_parameters_schedule_the_communitys_reviews_and_config_says_so(
    engine: StudyEngine, clock: FakeClock
) -> None:
    start = clock.now
    engine.admin.config(LOCAL)
    engine.fsrs.fsrs_outcome(LOCAL, TRUE_PARAMETERS, 900)
    assert dict(engine.admin.config(LOCAL).settings)["fsrs"] == f"fitted on {start:%Y-%m-%d} from 900 reviews"

    fitted = miss_then_review(engine, clock)
    clock.set(start)
    defaults = miss_then_review(engine, clock, BOB, ChannelRef("console", "other", "console"))

    assert fitted.next_due is not None and defaults.next_due is not None
    # these parameters remember a missed question longer, so its next review comes later
    assert fitted.next_due > defaults.next_due, (fitted.next_due, defaults.next_due)
    assert dict(engine.admin.config(CommunityRef("console", "other")).settings)["fsrs"] == "defaults"
    with pytest.raises(InvalidInput, match="cannot use"):
        engine.fsrs.fsrs_outcome(LOCAL, [99.0] * len(DEFAULTS), 900)
    assert engine.fsrs.fsrs_in_use(LOCAL).parameters == TRUE_PARAMETERS


def test_the_weekly_job_fits_each_community_once_a_week(engine: StudyEngine, clock: FakeClock) -> None:
    engine.admin.config(LOCAL, "channel", "console")
    handed: list[tuple[CommunityRef, str]] = []
    scheduler = StudyScheduler(engine, clock=clock, weekly_fit=lambda c, w: handed.append((c, w)))
    clock.set(datetime(2026, 11, 23, 9, 30, tzinfo=UTC))  # a Monday, after the daily time
    scheduler.tick()
    clock.advance(hours=2)
    scheduler.tick()
    assert handed == [(LOCAL, "2026-W47")]  # last week's, handed over once

    sent: list[object] = []

    def fitter(rows: object) -> dict[str, object]:
        sent.append(rows)
        return {"parameters": None}

    fits = WeeklyFits(engine, fitter)
    assert (fits.run(LOCAL, "2026-W47") or "").startswith("Not enough reviews to fit FSRS yet: 0 of the 512")
    assert WeeklyFits(engine, fitter).run(LOCAL, "2026-W47") is None  # another process claimed that week
    fits(LOCAL, "2026-W48")  # in its thread
    fits.wait()
    assert sent == [] and engine.fsrs.fsrs_in_use(LOCAL).parameters is None


def test_the_celery_task_runs_the_fit_in_a_child_process() -> None:
    from bot.worker.celery_app import make_app

    app = make_app("redis://127.0.0.1:1/0")
    app.conf.task_always_eager = True
    small = simulate(seed=2, members=2, cards_per_member=3)
    rows = json.loads(json.dumps(encode_log(small.reviews)))  # as JSON carries them
    result = app.tasks["studybot.fit_fsrs"].apply(args=[rows]).get()
    assert result["parameters"] is None  # below the optimizer's minimum it keeps its defaults
    assert result["reviews"] == len(small.reviews) and result["process_s"] > 0
