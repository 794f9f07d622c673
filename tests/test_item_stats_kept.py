"""The item analysis's figures kept with every answer equal the recount of every answer: after a
seeded burst of concurrent clicks (double clicks among them) with a planted wrong key, after a
/forget-me and after an admin removes a member's question; on SQLite and PostgreSQL, through
the engine (the flags admins see in /config) and through `studybot questions analysis`."""

from __future__ import annotations

import functools
import json
import math
import random
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.rules.item_analysis import (
    UNANSWERED,
    WRONG_KEY,
    AnswerRow,
    ItemStats,
    MemberPick,
    TopThird,
    analyse,
    from_kept,
    judge,
    off_pool,
    still_judged,
    tally,
)
from bot.core.values import QuestionCard, SuggestionDecided, UserRef
from bot.store.database import Database
from bot.store.item_stats import ItemStatsRepo, answer_rows, member_picks
from bot.store.repository import SqlStore, SqlTx
from tests.conftest import TEST_BANK, FakeClock, migrated_sqlite, run_studybot
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


def click_once(engine: StudyEngine, round_id: int, click: tuple[str, int]) -> object:
    return engine.rounds.answer(user(click[0]), round_id, click[1])


def burst(engine: StudyEngine, bank: Bank, clock: FakeClock, seed: int) -> str:
    """Daily rounds answered by concurrent clicks, a few members clicking twice; whenever the
    first day's question is asked, the strongest members all pick the same wrong choice.
    Returns that question."""
    rng = random.Random(seed)
    planted = ""
    for _ in range(DAYS):
        card = engine.rounds.open_daily(HERE)
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
            list(pool.map(functools.partial(click_once, engine, card.round_id), clicks))
        engine.rounds.close_round(card.round_id)
        clock.advance(days=1)
    return planted


def top_third(question_id: str, picks: list[MemberPick], outside: dict[str, tuple[int, int]]) -> TopThird:
    """A question's strongest third counted in Python from every member's picks, as the item
    analysis ranks them (rest-score, then member key, then choice)."""
    mine = [p for p in picks if p.question_id == question_id]
    here: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in mine:
        here[p.member][0] += p.answers
        here[p.member][1] += p.correct
    observed = []
    for p in mine:
        gone = outside.get(p.member, (0, 0))
        n = p.member_answers - gone[0] - here[p.member][0]
        if n > 0:
            observed.append(((p.member_correct - gone[1] - here[p.member][1]) / n, p))
    observed.sort(key=lambda item: (-item[0], item[1].member, item[1].choice))
    top = math.ceil(sum(p.answers for _, p in observed) / 3)
    counted: dict[int, int] = defaultdict(int)
    left = top
    for _, p in observed:
        taken = min(left, p.answers)
        counted[p.choice] += taken
        left -= taken
    width = max((p.choice for _, p in observed), default=-1) + 1
    return TopThird(
        question_id, top, tuple(counted[i] for i in range(width)), max((n for n, _ in here.values()), default=0)
    )


def compare(engine: StudyEngine) -> list[ItemStats]:
    """Assert the kept figures equal the recount's, and the stats and flags from them too;
    returns the recount's stats of the community's pool."""
    assert isinstance(engine.store, SqlStore)
    with engine.store.read() as tx:
        assert isinstance(tx, SqlTx)
        config = tx.communities.find_community(CLUB.platform, CLUB.community_id)
        assert config is not None
        pool = engine.boards._pool(tx, config.id)
        counts = tx.item_stats.item_counts(config.id)
        picks = member_picks(tx.conn, config.id)
        rows = answer_rows(tx.conn, community_id=config.id)  # the recount reads every answer
    want_counts, want_picks = tally(rows)
    assert sorted(counts, key=repr) == sorted(want_counts, key=repr)
    assert sorted(picks, key=repr) == sorted(want_picks, key=repr)
    recount = analyse(rows, pool)
    assert from_kept(pool, counts, picks, discriminate=True) == recount
    # The store's ranking (SQL) counts every question's top third as Python does.
    pool_ids = {q.id for q in pool}
    outside_ids = sorted({c.question_id for c in counts} - pool_ids)
    outside = off_pool(p for p in picks if p.question_id in outside_ids)
    with engine.store.read() as tx:
        ranked = tx.item_stats.item_top_thirds(config.id, sorted(pool_ids), outside_ids)
    assert ranked == [top_third(qid, picks, outside) for qid in sorted(pool_ids)]
    assert any(third.top >= 3 for third in ranked)
    flagged = {s.question_id for s in recount if set(s.flags) - {UNANSWERED}}
    alerts = engine.admin.config(CLUB).alerts
    assert {q.id for q in pool if any(a.startswith(f"Question {q.id}:") for a in alerts)} == flagged
    return recount


def run_scenario(engine: StudyEngine, bank: Bank, clock: FakeClock) -> None:
    engine.practice.suggest(ANN, HERE, good_form())
    decided = engine.practice.decide_suggestion(CLUB, 1, "approve")
    assert isinstance(decided, SuggestionDecided) and decided.question_id
    engine.admin.config(CLUB, "channel", "console")
    planted = burst(engine, bank, clock, seed=23)

    stats = {s.question_id: s for s in compare(engine)}
    assert WRONG_KEY in stats[planted].flags  # the planted fault reaches the admins
    assert sum(s.answers for s in stats.values()) > DAYS * len(MEMBERS) // 2

    strongest = sorted(STRONG)[-1]
    engine.admin.forget_me(user(strongest), confirm=True)
    after = {s.question_id: s for s in compare(engine)}
    assert after[planted].answers < stats[planted].answers

    assert "removed" in engine.admin.configure(CLUB, "remove", decided.question_id).text  # type: ignore[union-attr]
    removed = compare(engine)
    assert decided.question_id not in {s.question_id for s in removed}
    assert decided.question_id in after


def test_kept_figures_equal_the_recount(engine: StudyEngine, test_bank: Bank, clock: FakeClock) -> None:
    run_scenario(engine, test_bank, clock)


def test_questions_analysis_reads_the_kept_figures_and_recount_agrees(
    tmp_path: Path, test_bank: Bank, clock: FakeClock
) -> None:
    url = migrated_sqlite(tmp_path / "cli.db")
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


def drawn(rng: random.Random, strength: dict[str, float], planted: bool, member: str, qid: str) -> AnswerRow:
    """One answer: on q0 the strong pick choice 2 if `planted` (the key is 0), else anyone guesses;
    elsewhere right as often as the member is strong."""
    if qid == "q0":
        choice = 2 if planted and strength[member] > 0.6 else rng.choice([0, 1, 2, 3])
        return AnswerRow(qid, member, choice, choice == 0)
    right = rng.random() < strength[member]
    return AnswerRow(qid, member, 0 if right else rng.randrange(1, 4), right)


def test_a_verdict_kept_is_only_reused_while_no_answer_since_could_change_it() -> None:
    """`still_judged` against the truth: random answer sets with a wrong key planted or not,
    then answers one at a time; whenever it says the verdict read earlier still holds, ranking
    every member again gives that verdict. It says so for some, and not for all."""
    rng = random.Random(7)
    reused = refused = 0
    for trial in range(60):
        members = [f"m{i:03}" for i in range(rng.randrange(30, 120))]
        strength = {m: rng.random() for m in members}
        questions = [f"q{i}" for i in range(6)]
        planted = trial % 2 == 0  # on q0, the strong pick choice 2 though the key is 0

        rows = [drawn(rng, strength, planted, m, q) for m in members for q in questions if rng.random() < 0.9]
        before = top_third("q0", tally(rows)[1], {})
        verdict = judge(before.picks, before.top, 0, 4)
        for changes in range(1, 40):
            rows.append(drawn(rng, strength, planted, rng.choice(members), rng.choice(questions)))
            here = sum(1 for r in rows[-changes:] if r.question_id == "q0")
            now = top_third("q0", tally(rows)[1], {})
            if still_judged(before, 0, 4, changes, here):
                reused += 1
                assert judge(now.picks, now.top, 0, 4) == verdict, (trial, changes)
            else:
                refused += 1
    assert reused and refused


def test_the_engine_reads_the_top_thirds_again_only_when_an_answer_could_change_them(
    engine: StudyEngine, test_bank: Bank, clock: FakeClock
) -> None:
    """The engine remembers the top thirds it read: asked again with nothing answered since, it
    reads none; after a /forget-me it reads them again; its flags equal the recount's."""
    engine.admin.config(CLUB, "channel", "console")
    reads: list[list[str]] = []
    real = ItemStatsRepo.item_top_thirds

    def counted(
        repo: ItemStatsRepo, community_id: int, question_ids: Iterable[str], outside: Iterable[str]
    ) -> list[TopThird]:
        wanted = sorted(question_ids)
        reads.append(wanted)
        return real(repo, community_id, wanted, outside)

    ItemStatsRepo.item_top_thirds = counted  # type: ignore[method-assign]
    try:
        planted = burst(engine, test_bank, clock, seed=5)
        alerts = engine.admin.config(CLUB).alerts
        assert reads and planted in reads[-1]
        first = len(reads)
        assert engine.admin.config(CLUB).alerts == alerts  # nothing answered since: nothing read again
        assert len(reads) == first
        engine.admin.forget_me(user(sorted(STRONG)[0]), confirm=True)
        engine.admin.config(CLUB)
        assert len(reads) == first + 1
    finally:
        ItemStatsRepo.item_top_thirds = real  # type: ignore[method-assign]
    compare(engine)
