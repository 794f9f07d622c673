"""The item analysis's figures kept with every answer equal the recount of every answer: after a
seeded burst of concurrent clicks (double clicks among them) with a planted wrong key, after a
/forget-me and after an admin removes a member's question; on SQLite and PostgreSQL, through
the engine (the flags admins see in /config) and through `studybot questions analysis`."""

from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.item_analysis import UNANSWERED, WRONG_KEY, ItemStats, analyse, from_kept, tally
from bot.core.values import QuestionCard, SuggestionDecided, UserRef
from bot.store.database import Database
from bot.store.item_stats import member_picks
from bot.store.repository import SqlStore, SqlTx
from tests.conftest import TEST_BANK, FakeClock, run_studybot
from tests.test_suggestions import ANN, CHOICES, CLUB, HERE, good_form

MEMBERS = [f"m{i:02}" for i in range(24)]
STRONG = set(MEMBERS[16:])  # the strongest third: right on every sound question
DAYS = 8  # the pool has four questions: each is asked twice


def user(name: str) -> UserRef:
    return UserRef("console", "club", name, name.upper())


def file_texts(bank: Bank, question_id: str) -> tuple[list[str], str]:
    """A question's choices in the bank file's order, and the right one (the member's question: A)."""
    question = bank.get(question_id)
    if question is None:
        return list(CHOICES), CHOICES[0]
    return [c.text for c in question.choices], question.choices[question.answer_index].text


def burst(engine: StudyEngine, bank: Bank, clock: FakeClock, seed: int) -> str:
    """Daily rounds answered by concurrent clicks, a few members clicking twice; whenever the
    first day's question is asked, the strongest members all pick the same wrong choice.
    Returns that question."""
    rng = random.Random(seed)
    planted = ""
    for _ in range(DAYS):
        card = engine.open_daily(HERE)
        assert isinstance(card, QuestionCard)
        texts, right_one = file_texts(bank, card.question_id)
        right = card.choices.index(right_one)
        wrong = [card.choices.index(t) for t in texts if t != right_one]  # shown indexes, file order
        planted = planted or card.question_id
        clicks = []
        for i, name in enumerate(MEMBERS):
            if rng.random() < 0.15:
                continue  # did not answer today
            if card.question_id == planted:
                choice = wrong[0] if name in STRONG else (right if rng.random() < 0.3 else wrong[1])
            elif name in STRONG or rng.random() < i / len(MEMBERS):
                choice = right
            else:
                choice = rng.choice(wrong)
            clicks.append((name, choice))
            if rng.random() < 0.2:
                clicks.append((name, rng.randrange(len(card.choices))))  # a second click changes nothing
        rng.shuffle(clicks)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda click: engine.answer(user(click[0]), card.round_id, click[1]), clicks))
        engine.close_round(card.round_id)
        clock.advance(days=1)
    return planted


def compare(engine: StudyEngine) -> list[ItemStats]:
    """Assert the kept figures equal the recount's, and the stats and flags from them too;
    returns the recount's stats of the community's pool."""
    assert isinstance(engine.store, SqlStore)
    with engine.store.read() as tx:
        assert isinstance(tx, SqlTx)
        config = tx.find_community(CLUB.platform, CLUB.community_id)
        assert config is not None
        pool = engine._pool(tx, config.id)
        counts = tx.item_counts(config.id)
        picks = member_picks(tx.conn, config.id)
        rows = tx.answer_rows(config.id)
    want_counts, want_picks = tally(rows)
    assert sorted(counts, key=repr) == sorted(want_counts, key=repr)
    assert sorted(picks, key=repr) == sorted(want_picks, key=repr)
    recount = analyse(rows, pool)
    assert from_kept(pool, counts, picks, discriminate=True) == recount
    flagged = {s.question_id for s in recount if set(s.flags) - {UNANSWERED}}
    alerts = engine.config(CLUB).alerts
    assert {q.id for q in pool if any(a.startswith(f"Question {q.id}:") for a in alerts)} == flagged
    return recount


def run_scenario(engine: StudyEngine, bank: Bank, clock: FakeClock) -> None:
    engine.suggest(ANN, HERE, good_form())
    decided = engine.decide_suggestion(CLUB, 1, "approve")
    assert isinstance(decided, SuggestionDecided) and decided.question_id
    engine.config(CLUB, "channel", "console")
    planted = burst(engine, bank, clock, seed=23)

    stats = {s.question_id: s for s in compare(engine)}
    assert WRONG_KEY in stats[planted].flags  # the planted fault reaches the admins
    assert sum(s.answers for s in stats.values()) > DAYS * len(MEMBERS) // 2

    strongest = sorted(STRONG)[-1]
    engine.forget_me(user(strongest), confirm=True)
    after = {s.question_id: s for s in compare(engine)}
    assert after[planted].answers < stats[planted].answers

    assert "removed" in engine.configure(CLUB, "remove", decided.question_id).text  # type: ignore[union-attr]
    removed = compare(engine)
    assert decided.question_id not in {s.question_id for s in removed}
    assert decided.question_id in after


def test_kept_figures_equal_the_recount(engine: StudyEngine, test_bank: Bank, clock: FakeClock) -> None:
    run_scenario(engine, test_bank, clock)


def test_questions_analysis_reads_the_kept_figures_and_recount_agrees(
    tmp_path: Path, test_bank: Bank, clock: FakeClock
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    from bot.store.database import upgrade

    upgrade(url)
    database = Database(url)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock)
    run_scenario(engine, test_bank, clock)
    database.dispose()
    args = ["questions", "analysis", "--community", "club", "--platform", "console", "--json"]
    kept = run_studybot(tmp_path, args, bank=TEST_BANK)
    recount = run_studybot(tmp_path, [*args, "--recount"], bank=TEST_BANK)
    assert kept.returncode == 0 and recount.returncode == 0, kept.stderr + recount.stderr
    assert "recounting" not in kept.stderr  # the kept figures covered every answer
    assert json.loads(kept.stdout) == json.loads(recount.stdout)
    items = json.loads(kept.stdout)  # the shipped bank's questions: the planted one was a member's
    assert items and all(item["answers"] > 0 and item["discrimination"] is not None for item in items)
