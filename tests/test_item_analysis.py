"""Item analysis finds the faults planted in synthetic answer sets: a wrong key, a question too
easy, a distractor nobody picks and a question nobody answers; through the pure module, then
through a real SQLite file and `studybot questions analysis`."""

from __future__ import annotations

import json
import random
import statistics
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert

from bot.core.bank import Choice, Question
from bot.core.rules.item_analysis import (
    DEAD_DISTRACTOR,
    MIN_ANSWERS,
    TOO_EASY,
    UNANSWERED,
    WRONG_KEY,
    AnswerRow,
    ItemStats,
    analyse,
    point_biserial,
)
from bot.store.item_stats import HAS_CHOICE_ORDER, answer_rows, answers, communities, file_index, rounds
from bot.store.tables import Member
from tests.conftest import TEST_BANK, migrated_sqlite, run_studybot

WHY = "This explanation is long enough to pass the forty character rule."
MEMBERS = [f"m{i:02}" for i in range(30)]


def question(qid: str, key: int = 0, width: int = 4) -> Question:
    choices = tuple(Choice(f"choice {i} of {qid}", i == key, WHY) for i in range(width))
    return Question(qid, "fundamentals", 2, f"What is {qid}?", choices, ("https://example.org",))


NORMAL = [question(f"normal-{i:02}") for i in range(20)]


def ability(member: str) -> float:
    """From 0.25 (m00) to 0.95 (m29): how often a member gets a sound question right."""
    return 0.25 + 0.7 * MEMBERS.index(member) / (len(MEMBERS) - 1)


def sound_answers(rng: random.Random, questions: list[Question]) -> list[AnswerRow]:
    """Answers as a working question draws them: the stronger the member, the likelier right;
    the wrong answers spread over every distractor in turn."""
    rows = []
    for q in questions:
        wrong = [i for i in range(len(q.choices)) if i != q.answer_index]
        misses = 0
        for member in MEMBERS:
            if rng.random() < ability(member):
                choice = q.answer_index
            else:
                choice = wrong[misses % len(wrong)]
                misses += 1
            rows.append(AnswerRow(q.id, member, choice, choice == q.answer_index))
    return rows


def by_id(stats: list[ItemStats]) -> dict[str, ItemStats]:
    return {s.question_id: s for s in stats}


def test_point_biserial_is_pearson_on_zero_one() -> None:
    right = [True, True, False, True, False, False]
    scores = [0.9, 0.7, 0.6, 0.5, 0.3, 0.1]
    expected = statistics.correlation([1.0 if r else 0.0 for r in right], scores)
    assert point_biserial(right, scores) == pytest.approx(expected)
    assert point_biserial([True, True], [0.1, 0.9]) is None  # everyone right: no spread
    assert point_biserial([True, False], [0.5, 0.5]) is None  # equal scores: no spread
    assert point_biserial([True], [0.5]) is None


def test_sound_questions_discriminate_and_raise_no_flag() -> None:
    stats = by_id(analyse(sound_answers(random.Random(1), NORMAL), NORMAL))
    for q in NORMAL:
        s = stats[q.id]
        assert s.answers == 30 and s.flags == ()
        assert s.discrimination is not None and s.discrimination > 0
        assert sum(s.pick_rates) == pytest.approx(1.0)
    mean_disc = statistics.mean(stats[q.id].discrimination or 0.0 for q in NORMAL)
    assert mean_disc > 0.2


def test_a_planted_wrong_key_is_flagged() -> None:
    # The bank says A, but the truth is C: the strong third picks C, the rest guess.
    planted = question("planted-wrong-key", key=0)
    rng = random.Random(2)
    rows = sound_answers(rng, NORMAL)
    for member in MEMBERS:
        choice = 2 if ability(member) > 0.72 else rng.randrange(4)
        rows.append(AnswerRow(planted.id, member, choice, choice == 0))
    stats = by_id(analyse(rows, [*NORMAL, planted]))
    s = stats[planted.id]
    assert WRONG_KEY in s.flags and s.suspect_choice == 2
    assert s.share_correct is not None and s.share_correct <= 0.4
    assert s.discrimination is not None and s.discrimination < 0  # the strong get it "wrong"
    described = " ".join(s.describe())
    assert "likely wrong key" in described and "pick choice 3 instead of choice 1" in described
    assert all(WRONG_KEY not in stats[q.id].flags for q in NORMAL)


def test_a_hard_question_with_a_right_key_is_not_a_wrong_key() -> None:
    # Few are right, but it is the strongest who are: hard, not miskeyed.
    hard = question("hard-but-right", key=1)
    rng = random.Random(3)
    rows = sound_answers(rng, NORMAL)
    for member in MEMBERS:
        choice = 1 if ability(member) > 0.8 else rng.choice([0, 2, 3])
        rows.append(AnswerRow(hard.id, member, choice, choice == 1))
    s = by_id(analyse(rows, [*NORMAL, hard]))[hard.id]
    assert s.share_correct is not None and s.share_correct <= 0.4
    assert WRONG_KEY not in s.flags and s.discrimination is not None and s.discrimination > 0.3


def test_too_easy_dead_distractor_and_unanswered() -> None:
    easy = question("too-easy", key=3)
    dead = question("dead-distractor", key=0)
    never = question("never-asked", key=1)
    rng = random.Random(4)
    rows = sound_answers(rng, NORMAL)
    for i, member in enumerate(MEMBERS):
        rows.append(AnswerRow(easy.id, member, 3 if i else 0, i != 0))  # 29 of 30 right
        choice = 0 if rng.random() < ability(member) else [1, 2][i % 2]  # nobody picks D
        rows.append(AnswerRow(dead.id, member, choice, choice == 0))
    stats = by_id(analyse(rows, [*NORMAL, easy, dead, never]))
    assert TOO_EASY in stats[easy.id].flags and stats[easy.id].share_correct == pytest.approx(29 / 30)
    assert stats[dead.id].flags == (DEAD_DISTRACTOR,) and stats[dead.id].dead_choices == (3,)
    assert stats[dead.id].pick_rates[3] == 0.0
    assert "nobody picks choice 4 in 30 answers" in stats[dead.id].describe()[0]
    assert stats[never.id].flags == (UNANSWERED,) and stats[never.id].answers == 0
    assert stats[never.id].share_correct is None and stats[never.id].pick_rates == (0.0,) * 4


def test_no_flag_but_unanswered_before_the_minimum_answers() -> None:
    easy = question("few-answers", key=0)
    rows = sound_answers(random.Random(5), NORMAL)
    rows += [AnswerRow(easy.id, m, 0, True) for m in MEMBERS[: MIN_ANSWERS - 1]]
    assert by_id(analyse(rows, [*NORMAL, easy]))[easy.id].flags == ()
    rows.append(AnswerRow(easy.id, MEMBERS[-1], 0, True))
    assert TOO_EASY in by_id(analyse(rows, [*NORMAL, easy]))[easy.id].flags


def test_the_rest_score_leaves_the_item_out() -> None:
    # m-one answered only this question: no rest-score, so no part in the discrimination.
    only = question("only", key=0)
    other = question("other", key=0)
    rows = [
        AnswerRow("only", "m-one", 0, True),
        AnswerRow("only", "a", 0, True),
        AnswerRow("other", "a", 0, True),
        AnswerRow("only", "b", 1, False),
        AnswerRow("other", "b", 1, False),
        AnswerRow("removed-from-bank", "b", 0, True),  # ignored everywhere
    ]
    s = by_id(analyse(rows, [only, other]))["only"]
    assert s.answers == 3 and s.discrimination == pytest.approx(1.0)


def test_file_index_maps_a_shown_choice_back() -> None:
    assert file_index(0, "2,0,3,1") == 2 and file_index(3, "2,0,3,1") == 1
    assert file_index(1, None) == 1 and file_index(1, "") == 1


# ---------------------------------------------------------------- through SQLite and the CLI


def plant_wrong_key(url: str) -> None:
    """24 members of one console community answer the test bank: the strong third is always right
    on t-trade and t-why-stored, yet all pick A on t-rerun, whose key is B."""
    engine = create_engine(url)
    now = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)
    members = Member.__table__  # type: ignore[attr-defined]
    with engine.begin() as conn:
        cid = conn.execute(
            insert(communities).values(platform="console", external_id="lab", name="lab", created_at=now)
        ).inserted_primary_key[0]
        other = conn.execute(
            insert(communities).values(platform="console", external_id="elsewhere", name="x", created_at=now)
        ).inserted_primary_key[0]
        plan = {"t-trade": (0, 3), "t-why-stored": (1, 2), "t-rerun": (1, 4)}  # key, choices
        for i in range(24):
            tier = i // 8  # 0 strong, 1 middle, 2 weak
            mid = conn.execute(
                insert(members).values(community_id=cid, user_id=f"u{i}", display_name=f"U{i}", created_at=now)
            ).inserted_primary_key[0]
            for qid, (key, width) in plan.items():
                for attempt in range(4 if qid != "t-rerun" else 1):
                    if qid == "t-rerun":
                        choice = [0, 1, 2][tier]  # strong: A (wrong), middle: B (the key), weak: C
                    else:
                        right = tier == 0 or (tier == 1 and attempt % 2 == 0)
                        choice = key if right else (key + 1) % width
                    values = dict(community_id=cid, channel_id="c", question_id=qid, kind="practice", opened_at=now)
                    shown = choice
                    if HAS_CHOICE_ORDER and qid == "t-rerun":  # shown reversed: file choice k is shown at 3-k
                        values["choice_order"] = "3,2,1,0"
                        shown = 3 - choice
                    rid = conn.execute(insert(rounds).values(**values, member_id=mid)).inserted_primary_key[0]
                    conn.execute(
                        insert(answers).values(
                            round_id=rid,
                            member_id=mid,
                            community_id=cid,
                            kind="practice",
                            choice=shown,
                            correct=choice == key,
                            points=10 if choice == key else 0,
                            answered_at=now,
                            week="2026-W48",
                        )
                    )
        # Another community's answer stays out of a filtered analysis.
        mid = conn.execute(
            insert(members).values(community_id=other, user_id="z", display_name="Z", created_at=now)
        ).inserted_primary_key[0]
        rid = conn.execute(
            insert(rounds).values(
                community_id=other, channel_id="c", question_id="t-trade", kind="practice", opened_at=now
            )
        ).inserted_primary_key[0]
        conn.execute(
            insert(answers).values(
                round_id=rid,
                member_id=mid,
                community_id=other,
                kind="practice",
                choice=0,
                correct=True,
                points=10,
                answered_at=now,
                week="2026-W48",
            )
        )
    engine.dispose()


def test_the_store_reads_rows_in_file_order_and_filters_by_community(sqlite_url: str) -> None:
    plant_wrong_key(sqlite_url)
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        lab = answer_rows(conn, platform="console", external_id="lab")
        everything = answer_rows(conn)
        assert answer_rows(conn, platform="slack") == []
    engine.dispose()
    assert len(lab) == 24 * 9 and len(everything) == len(lab) + 1
    rerun = [r for r in lab if r.question_id == "t-rerun"]
    assert sorted(r.choice for r in rerun) == [0] * 8 + [1] * 8 + [2] * 8
    assert all(r.correct == (r.choice == 1) for r in rerun)


def test_questions_analysis_flags_the_planted_wrong_key(tmp_path: Path) -> None:
    url = migrated_sqlite(tmp_path / "cli.db")
    plant_wrong_key(url)
    done = run_studybot(tmp_path, ["questions", "analysis", "--community", "lab", "--platform", "console", "--json"])
    assert done.returncode == 0, done.stderr
    items = {item["question_id"]: item for item in json.loads(done.stdout)}
    rerun = items["t-rerun"]
    assert rerun["answers"] == 24 and rerun["flags"] == [WRONG_KEY, DEAD_DISTRACTOR] and rerun["suspect_choice"] == 0
    assert rerun["pick_rates"] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 0.0])
    assert rerun["discrimination"] < 0
    assert items["t-trade"]["discrimination"] > 0 and WRONG_KEY not in items["t-trade"]["flags"]

    table = run_studybot(tmp_path, ["questions", "analysis", "--flagged"], bank=TEST_BANK)
    assert table.returncode == 0, table.stderr
    assert "t-rerun" in table.stdout and "wrong-key" in table.stdout
    # Choices by their text, never a file-order letter a member never saw (said once, above).
    assert (
        'likely wrong key: 33% right, and the strongest members mostly pick "Their gradients are skipped" '
        'instead of "Their forward is run again"'
    ) in table.stdout
    assert table.stdout.count("not the letters members saw") == 1
    assert "1:33% 2:*33% 3:33% 4:0%" in table.stdout
