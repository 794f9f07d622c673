"""Adaptive practice (issue 14): Elo ratings of members and questions, /quiz at the target
chance, no repeats within 30 days, reviews first, levels per topic, and the item analysis
reading the same question ratings.

The simulation: a population of members of known ability answers a bank of questions of
known difficulty by the model P(right) = 1 / (1 + exp(-(ability - difficulty))), through the
real engine on SQLite with a fake clock. After 30 answers each, the picked questions' observed
success rate lands within 0.1 of the target for most members, where random picking misses it
for the strongest and the weakest, and the members' ratings rank like their true abilities."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import mean

import pytest

from bot.core.bank import Bank, Choice, Question
from bot.core.engine import StudyEngine
from bot.core.errors import NotFound
from bot.core.rules import rating as elo
from bot.core.rules.item_analysis import analyse
from bot.core.services.practice import PracticePolicy
from bot.core.values import ChannelRef, QuestionCard, UserRef
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock

TOPICS = ("fundamentals", "schedules", "pytorch-api", "measuring")
TARGET = 0.7
MEMBERS = 24
ANSWERS = 30


def synthetic_bank(size: int, seed: int = 7) -> tuple[Bank, dict[str, float]]:
    """`size` questions with true difficulties spread over [-3, 3]; their level is a noisy
    bucket of it (authors' levels are rough)."""
    rng = random.Random(seed)
    questions, truth = [], {}
    for i in range(size):
        difficulty = -3.5 + 7.0 * i / (size - 1)
        level = min(3, max(1, round(2 + difficulty / 2.4 + rng.uniform(-0.5, 0.5))))
        qid = f"sim-{i:03d}"
        truth[qid] = difficulty
        choices = tuple(Choice(f"choice {j} of {i}", j == 0, "x" * 40) for j in range(4))
        topic = TOPICS[i % len(TOPICS)]
        questions.append(Question(qid, topic, level, f"Question {i}?", choices, ("ref",), trap="t"))
    return Bank.of(questions), truth


def answer_by_model(engine: StudyEngine, user: UserRef, card: QuestionCard, right: bool) -> None:
    question = engine.bank.get(card.question_id)
    assert question is not None
    good = question.choices[question.answer_index].text
    shown = card.choices.index(good)
    engine.rounds.answer(user, card.round_id, shown if right else (shown + 1) % len(card.choices))


def simulate(engine: StudyEngine, clock: FakeClock, truth: dict[str, float], abilities: list[float], seed: int = 1):
    rng = random.Random(seed)
    here = ChannelRef("console", "sim", "console")
    users = [UserRef("console", "sim", f"m{i}", f"M{i}") for i in range(len(abilities))]
    outcomes: list[list[bool]] = [[] for _ in abilities]
    chances: list[list[float]] = [[] for _ in abilities]
    picked: list[list[float]] = [[] for _ in abilities]
    for _ in range(ANSWERS):
        for i, (user, ability) in enumerate(zip(users, abilities, strict=True)):
            card = engine.practice.quiz(user, here)
            p = elo.chance(ability, truth[card.question_id])
            right = rng.random() < p
            answer_by_model(engine, user, card, right)
            outcomes[i].append(right)
            chances[i].append(p)
            picked[i].append(truth[card.question_id])
            clock.advance(minutes=1)
    return users, outcomes, chances, picked


@pytest.fixture
def sim_engine(sqlite_url: str, clock: FakeClock):
    bank, truth = synthetic_bank(240)
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock, practice=PracticePolicy(target=TARGET))
    yield engine, truth
    database.dispose()


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation of two samples (average ranks for ties); 0 without spread."""

    def ranks(values: Sequence[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2.0
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx and vy else 0.0


def test_simulated_population_lands_near_the_target_and_ratings_rank_abilities(sim_engine, clock: FakeClock) -> None:
    engine, truth = sim_engine
    abilities = [-2.5 + 5.0 * i / (MEMBERS - 1) for i in range(MEMBERS)]
    users, outcomes, chances, picked = simulate(engine, clock, truth, abilities)

    observed = [sum(o) / len(o) for o in outcomes]
    near = sum(abs(rate - TARGET) <= 0.1 for rate in observed)
    assert near >= 0.6 * MEMBERS, observed
    # The true chance of the picked questions, over the population, is near the target too.
    assert abs(mean(mean(c[10:]) for c in chances) - TARGET) <= 0.1

    # Random picking from the same bank misses the target for the strongest and the weakest:
    # its expected success rate is the chance averaged over the whole bank.
    for ability in (abilities[0], abilities[-1]):
        rate = mean(elo.chance(ability, difficulty) for difficulty in truth.values())
        assert abs(rate - TARGET) > 0.1, (ability, rate)

    # A strong learner gets harder questions than a weak one.
    assert mean(picked[-1][10:]) > mean(picked[0][10:]) + 2.0

    # The members' overall ratings rank like their true abilities.
    with engine.store.read() as tx:
        ratings = [tx.ratings.member_ratings(tx.members.find_member(1, u.user_id) or 0)[elo.OVERALL][0] for u in users]
    assert spearman(ratings, abilities) > 0.8


def test_no_question_twice_within_30_days(sqlite_url: str, clock: FakeClock) -> None:
    bank, _ = synthetic_bank(6)
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    user = UserRef("console", "c", "ann", "Ann")
    here = ChannelRef("console", "c", "console")
    seen = []
    for _ in range(6):
        card = engine.practice.quiz(user, here)
        answer_by_model(engine, user, card, True)
        seen.append(card.question_id)
        clock.advance(days=1)
    assert len(set(seen)) == 6
    with pytest.raises(NotFound, match="last 30 days"):
        engine.practice.quiz(user, here)
    clock.advance(days=25)
    assert engine.practice.quiz(user, here).question_id == seen[0]
    database.dispose()


def test_a_due_review_comes_first(sqlite_url: str, clock: FakeClock) -> None:
    bank, _ = synthetic_bank(20)
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    user = UserRef("console", "c", "ann", "Ann")
    here = ChannelRef("console", "c", "console")
    missed = engine.practice.quiz(user, here)
    answer_by_model(engine, user, missed, False)
    assert engine.practice.quiz(user, here).kind == "practice"  # not yet due (tomorrow)
    clock.advance(days=2)
    card = engine.practice.quiz(user, here)
    assert (card.kind, card.question_id) == ("review", missed.question_id)
    database.dispose()


def test_score_shows_a_level_per_topic(sqlite_url: str, clock: FakeClock) -> None:
    bank, _ = synthetic_bank(40)
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    user = UserRef("console", "c", "ann", "Ann")
    here = ChannelRef("console", "c", "console")
    for _ in range(8):
        card = engine.practice.quiz(user, here)
        answer_by_model(engine, user, card, True)
    levels = engine.boards.score(user).levels
    assert levels and all(level.rating > 0 and level.answers > 0 for level in levels)
    assert {level.topic for level in levels} <= set(TOPICS)
    database.dispose()


def test_the_daily_round_is_the_same_for_everyone(sqlite_url: str, clock: FakeClock) -> None:
    bank, _ = synthetic_bank(20)
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    here = ChannelRef("console", "c", "console")
    card = engine.rounds.open_daily(here)
    assert isinstance(card, QuestionCard) and card.kind == "daily"
    strong, weak = UserRef("console", "c", "s", "S"), UserRef("console", "c", "w", "W")
    answer_by_model(engine, strong, card, True)
    answer_by_model(engine, weak, card, False)
    assert engine.rounds.open_daily(here).round_id == card.round_id  # one round, whoever asks
    database.dispose()


def test_item_analysis_reads_the_question_ratings(sqlite_url: str, clock: FakeClock) -> None:
    bank, _ = synthetic_bank(12)
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    here = ChannelRef("console", "c", "console")
    for i in range(5):
        user = UserRef("console", "c", f"u{i}", f"U{i}")
        card = engine.practice.quiz(user, here, "fundamentals")
        answer_by_model(engine, user, card, i % 2 == 0)
    with engine.store.read() as tx:
        stored = tx.ratings.question_ratings()
    ratings = engine.practice.difficulty(list(bank.questions), stored)
    stats = {s.question_id: s for s in analyse([], bank.questions, ratings=ratings)}
    for qid, (value, _) in stored.items():
        assert stats[qid].difficulty == pytest.approx(value)
    unrated = next(q for q in bank.questions if q.id not in stored)
    assert stats[unrated.id].difficulty == elo.start_difficulty(unrated.difficulty)
    database.dispose()


def test_elo_update_and_chance() -> None:
    assert elo.chance(0.0, 0.0) == 0.5
    assert elo.chance(1.0, 0.0) == pytest.approx(1 / (1 + math.exp(-1)))
    change = elo.update(elo.Rating(0, 0), elo.Rating(0, 0), elo.Rating(0, 0), True)
    assert change.predicted == 0.5 and change.skill == pytest.approx(0.5) and change.difficulty == pytest.approx(-0.5)
    assert elo.step(100) < elo.step(10) < elo.step(0) == elo.K_START
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
