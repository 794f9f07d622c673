"""The give-away and repeat rules of `questions lint`: the correct choice may not stand out by
its length, in one question or across the bank, and two questions may not ask the same thing.
The bot's loader leaves these rules to the lint, so a style slip never stops it."""

from __future__ import annotations

import itertools
import json
import re
import textwrap
from pathlib import Path

from bot.core.bank import (
    MAX_LENGTH_RANK_SHARE,
    MAX_LONGEST_CORRECT_SHARE,
    MIN_LENGTH_RANK_BANK,
    NEAR_DUPLICATE_THRESHOLD,
    Choice,
    Question,
    collect,
    correct_is_longest,
    key_length_ranks,
    length_rank_distribution,
    load_bank,
    longest_correct_share,
    near_duplicates,
)
from tests.conftest import ROOT, TEST_BANK, run_studybot

WHY = "This explanation is long enough to pass the forty character rule."
WHY_A = "Hammers drive nails, saws cut planks, and screwdrivers turn screws."
WHY_B = "Everest rises highest above sea level, ahead of K2 and Kangchenjunga."
NOUNS = (
    "apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nutmeg olive pear "
    "quince radish sage thyme ulva vanilla walnut yam zucchini anise basil caper dill endive fennel garlic "
    "hops indigo jicama kelp leek mint neem onion"
).split()
# The bank as it stood before issue 12's rewrite (commit 28ffca3): prompt, correct choice and its why.
SIMILARITY_FIXTURE = ROOT / "tests" / "data" / "similarity_bank_28ffca3.json"
# The repeats the review found in that bank.
KNOWN_REPEATS = [
    ("cor-autocast-replayed", "cmb-autocast-replayed-in-recompute"),
    ("cor-gradients-unchanged", "fund-gradients-unchanged"),
    ("fund-no-grad-does-nothing", "api-no-grad-runs-once"),
    *itertools.combinations(
        [
            "sel-attention-core",
            "perf-selective-attention-core",
            "ls-selective-attention-core",
            "fw-megatron-selective-core-attn",
        ],
        2,
    ),
]


def question_yaml(qid: str, prompt: str, right: str, wrong: list[str], why: str = WHY) -> str:
    choices = f"      - text: {right}\n        correct: true\n        why: {why}\n"
    choices += "".join(f"      - text: {text}\n        why: {WHY}\n" for text in wrong)
    return (
        f"  - id: {qid}\n    difficulty: 1\n    prompt: {prompt}\n    choices:\n{choices}"
        '    explain: Something.\n    refs: ["https://pytorch.org/docs/stable/checkpoint.html"]\n'
    )


def write_bank(tmp_path: Path, name: str, *questions: str) -> Path:
    bank = tmp_path / "bank"
    bank.mkdir(exist_ok=True)
    (bank / name).write_text(f"topic: {Path(name).stem}\nquestions:\n" + "".join(questions))
    return bank


def fixture_questions() -> list[Question]:
    rows = json.loads(SIMILARITY_FIXTURE.read_text(encoding="utf-8"))
    return [
        Question(
            id=row["id"],
            topic="fundamentals",
            difficulty=1,
            prompt=row["prompt"],
            choices=(Choice(row["answer"], True, row["why"]), Choice("a distractor", False, WHY)),
            refs=("https://example.org",),
            source=f"fixture:{i + 1}",
        )
        for i, row in enumerate(rows)
    ]


# ---------------------------------------------------------------- length, one question


def test_a_correct_choice_much_longer_than_the_distractors_is_reported_at_its_line(tmp_path: Path) -> None:
    bank = write_bank(
        tmp_path,
        "fundamentals.yaml",
        # 30 characters against a mean of 20: 1.5x.
        question_yaml("long-key", "Which tool is right?", "a" * 30, ["b" * 20, "c" * 20], why=WHY_A),
        # 26 against 20: exactly 1.3x is allowed.
        question_yaml("fair-key", "Which mountain is tallest?", "d" * 26, ["e" * 20, "f" * 20], why=WHY_B),
    )
    questions, problems = collect([bank], root=ROOT)
    path = bank / "fundamentals.yaml"
    assert problems == [
        f"{path}:7: the correct choice is 30 characters, 1.50x the distractors' mean of 20; "
        "the limit is 1.3x (its length gives it away)",
        # Two of two questions have the strictly longest correct choice: over the bank-wide limit too.
        f"{bank}:1: the correct choice is the strictly longest in 2 of 2 questions (100.0%); the limit is 30%",
    ]
    # A give-away is a style problem: the question is still read, and the bot's loader accepts it.
    assert [q.id for q in questions] == ["long-key", "fair-key"]
    assert [q.id for q in load_bank(bank, root=ROOT).questions] == ["long-key", "fair-key"]


def test_a_short_correct_choice_is_fine(tmp_path: Path) -> None:
    bank = write_bank(
        tmp_path,
        "fundamentals.yaml",
        question_yaml("short-key", "Which one is right?", "yes", ["no, because of a long reason", "maybe"]),
    )
    assert collect([bank], root=ROOT)[1] == []


# ---------------------------------------------------------------- length, the whole bank


def _bank_of(tmp_path: Path, longest: int, total: int) -> Path:
    questions = []
    for i in range(total):
        w = NOUNS[4 * i : 4 * i + 4]
        right, wrong = (
            ("the right pick", ["a wrong pick", "another one"]) if i < longest else ("right", ["wrong", "other"])
        )
        why = f"The {w[2]} and the {w[3]} show why the {w[0]} pairs with the {w[1]}."
        questions.append(question_yaml(f"q-{i:02}", f"Which {w[0]} goes with the {w[1]}?", right, wrong, why=why))
    return write_bank(tmp_path, "fundamentals.yaml", *questions)


def test_the_longest_correct_share_may_reach_the_limit(tmp_path: Path) -> None:
    assert MAX_LONGEST_CORRECT_SHARE == 0.30
    bank = _bank_of(tmp_path, longest=3, total=10)
    questions, problems = collect([bank], root=ROOT)
    assert problems == [] and longest_correct_share(questions) == (3, 10)


def test_the_longest_correct_share_over_the_limit_is_one_problem(tmp_path: Path) -> None:
    bank = _bank_of(tmp_path, longest=4, total=10)
    problems = collect([bank], root=ROOT)[1]
    assert problems == [
        f"{bank}:1: the correct choice is the strictly longest in 4 of 10 questions (40.0%); the limit is 30%"
    ]


def test_a_tie_for_longest_is_not_strictly_longest() -> None:
    def question(right: str, *wrong: str) -> Question:
        choices = (Choice(right, True, WHY), *(Choice(w, False, WHY) for w in wrong))
        return Question("q-tie", "fundamentals", 1, "Which?", choices, ("r",))

    assert correct_is_longest(question("abcd", "abc", "ab"))
    assert not correct_is_longest(question("abcd", "wxyz", "ab"))
    assert not correct_is_longest(question("ab", "abcd"))


def test_questions_stats_prints_the_share_and_the_limit(tmp_path: Path) -> None:
    result = run_studybot(tmp_path, ["questions", "stats"], bank=_bank_of(tmp_path, longest=4, total=10))
    assert result.returncode == 0, result.stderr
    assert "correct choice strictly the longest: 4 of 10 (40.0%); the limit is 30%" in result.stdout


# ---------------------------------------------------------------- length rank, the whole bank

# Distractors of 10, 12 and 14 characters; a key of 15, 13, 11 or 9 is the longest, 2nd, 3rd or 4th.
KEY_LENGTH_AT_RANK = {1: 15, 2: 13, 3: 11, 4: 9}


def _ranked_bank(tmp_path: Path, ranks: list[int]) -> Path:
    """A bank with one question per entry of `ranks`, its correct choice at that length rank."""
    questions = []
    for i, rank in enumerate(ranks):
        word = f"zq{i}x"  # a word of this question only, so no two questions look alike
        right = "k" * KEY_LENGTH_AT_RANK[rank]
        wrong = ["a" * 10, "b" * 12, "c" * 14]
        why = f"The {word}a and the {word}b show why the {word}c pairs with the {word}d."
        questions.append(question_yaml(f"q-{i:02}", f"Which {word}e goes with the {word}f?", right, wrong, why=why))
    return write_bank(tmp_path, "fundamentals.yaml", *questions)


def test_a_length_rank_may_hold_up_to_the_limit(tmp_path: Path) -> None:
    assert (MAX_LENGTH_RANK_SHARE, MIN_LENGTH_RANK_BANK) == (0.30, 20)
    bank = _ranked_bank(tmp_path, [1] * 6 + [2] * 6 + [3] * 4 + [4] * 4)  # 30%, 30%, 20%, 20%
    questions, problems = collect([bank], root=ROOT)
    assert problems == []
    assert length_rank_distribution(questions) == {1: 6, 2: 6, 3: 4, 4: 4}


def test_a_length_rank_over_the_limit_is_one_problem(tmp_path: Path) -> None:
    # the tell moved one place: the key is rarely the longest, but 7 in 20 are the second longest
    bank = _ranked_bank(tmp_path, [1] * 4 + [2] * 7 + [3] * 5 + [4] * 4)
    assert collect([bank], root=ROOT)[1] == [
        f"{bank}:1: the correct choice is the 2nd longest in 7 of 20 questions (35.0%, ties shared); "
        "the limit is 30% per rank (its length rank gives it away)"
    ]


def test_a_bank_too_small_to_spread_is_not_held_to_the_length_rank_rule(tmp_path: Path) -> None:
    bank = _ranked_bank(tmp_path, [2] * (MIN_LENGTH_RANK_BANK - 1))
    assert collect([bank], root=ROOT)[1] == []


def test_a_tie_shares_the_key_between_the_tied_ranks() -> None:
    def question(right: str, *wrong: str) -> Question:
        choices = (Choice(right, True, WHY), *(Choice(w, False, WHY) for w in wrong))
        return Question("q-tie", "fundamentals", 1, "Which?", choices, ("r",))

    assert key_length_ranks(question("abcd", "abcdef", "wxyz", "ab")) == {2: 0.5, 3: 0.5}
    assert key_length_ranks(question("ab", "cd", "ef", "gh")) == {1: 0.25, 2: 0.25, 3: 0.25, 4: 0.25}
    assert key_length_ranks(question("abc", "abcd", "ab")) == {2: 1.0}


def test_questions_lint_prints_the_length_rank_distribution(tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    (tmp_path / "bad").mkdir()
    passing = _ranked_bank(tmp_path / "ok", [1] * 5 + [2] * 5 + [3] * 5 + [4] * 5)
    result = run_studybot(tmp_path, ["questions", "lint", str(passing)], process=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[1] == (
        "correct choice by length rank (ties shared): longest 5 (25.0%), 2nd longest 5 (25.0%), "
        "3rd longest 5 (25.0%), 4th longest 5 (25.0%); the limit is 30% per rank"
    )
    failing = _ranked_bank(tmp_path / "bad", [1] * 2 + [2] * 8 + [3] * 5 + [4] * 5)
    result = run_studybot(tmp_path, ["questions", "lint", str(failing)])
    assert result.returncode == 1
    assert "the correct choice is the 2nd longest in 8 of 20 questions (40.0%" in result.stdout
    assert "2nd longest 8 (40.0%)" in result.stderr


# ---------------------------------------------------------------- near-duplicates


def test_the_known_repeats_score_above_the_threshold() -> None:
    found = {frozenset((a.id, b.id)): score for score, a, b in near_duplicates(fixture_questions())}
    for a, b in KNOWN_REPEATS:
        assert frozenset((a, b)) in found, (a, b)


def test_distinct_questions_score_below_the_threshold() -> None:
    questions = fixture_questions()
    scores = {frozenset((a.id, b.id)): score for score, a, b in near_duplicates(questions, threshold=0.0)}
    # Questions on different ideas, some sharing the topic's words (checkpoint, recompute, memory).
    for a, b in [
        ("cor-autocast-replayed", "sched-log-n-extreme"),
        ("fund-no-grad-does-nothing", "cor-gradients-unchanged"),
        ("sel-attention-core", "fund-gradients-unchanged"),
        ("api-no-grad-runs-once", "fw-megatron-selective-core-attn"),
        ("cmb-autocast-replayed-in-recompute", "perf-selective-attention-core"),
    ]:
        assert scores[frozenset((a, b))] < NEAR_DUPLICATE_THRESHOLD / 2, (a, b)
    # Across the whole pre-rewrite bank, fewer than 1 pair in 100 reaches the threshold.
    pairs = len(questions) * (len(questions) - 1) // 2
    flagged = sum(1 for score in scores.values() if score >= NEAR_DUPLICATE_THRESHOLD)
    assert flagged < pairs / 100


def test_near_duplicates_are_reported_with_both_ids_and_places(tmp_path: Path) -> None:
    bank = write_bank(
        tmp_path,
        "correctness.yaml",
        question_yaml(
            "autocast-a",
            "A checkpointed block runs under torch.autocast with bfloat16; in what dtype does its recompute run?",
            "bfloat16, autocast is replayed",
            ["float32, the default dtype", "float16, autocast's default"],
            why="The autocast state of the forward pass is captured and replayed during the recompute.",
        ),
        question_yaml(
            "dropout-masks",
            "Which dropout masks does the recompute of a checkpointed block draw by default?",
            "The same masks as the forward",
            ["New random masks each time", "No masks, dropout is skipped"],
        ),
    )
    write_bank(
        tmp_path,
        "combining.yaml",
        question_yaml(
            "autocast-b",
            "Under torch.autocast(dtype=bfloat16) a block is checkpointed. Which dtype do the recomputed matmuls use?",
            "bf16, the autocast state is replayed",
            ["fp32, outside the context", "fp16, the autocast default"],
            why="Checkpoint captures the autocast state of the forward pass and replays it in the recompute.",
        ),
    )
    problems = collect([bank], root=ROOT)[1]
    duplicates = [p for p in problems if "near-duplicate" in p]
    assert len(duplicates) == 1, problems
    assert re.fullmatch(
        rf"{re.escape(str(bank / 'combining.yaml'))}:3: question 'autocast-b' is a near-duplicate of 'autocast-a' "
        rf"at {re.escape(str(bank / 'correctness.yaml'))}:3 \(similarity 0\.\d\d, limit 0\.30\): .+",
        duplicates[0],
    )


def test_the_test_bank_passes_every_rule() -> None:
    assert collect([TEST_BANK], root=ROOT)[1] == []


def test_identical_prompts_are_reported_once_not_twice_as_near_duplicates(tmp_path: Path) -> None:
    text = textwrap.dedent(
        question_yaml("twin-a", "What does checkpointing trade?", "Compute for memory", ["Speed", "Disk"])
    )
    bank = write_bank(tmp_path, "fundamentals.yaml", text, text.replace("twin-a", "twin-b"))
    problems = collect([bank], root=ROOT)[1]
    assert sum("the same prompt stands at" in p for p in problems) == 1
    assert not any("near-duplicate" in p for p in problems)


# ---------------------------------------------------------------- reviewed pairs


def near_duplicate_bank(tmp_path: Path) -> Path:
    return write_bank(
        tmp_path,
        "correctness.yaml",
        question_yaml(
            "autocast-a",
            "A checkpointed block runs under torch.autocast with bfloat16; in what dtype does its recompute run?",
            "bfloat16, autocast is replayed",
            ["float32, the default dtype", "float16, autocast's default"],
            why="The autocast state of the forward pass is captured and replayed during the recompute.",
        ),
        question_yaml(
            "autocast-b",
            "Under torch.autocast(dtype=bfloat16) a block is checkpointed. Which dtype do the recomputed matmuls use?",
            "bf16, the autocast state is replayed",
            ["fp32, outside the context", "fp16, the autocast default"],
            why="Checkpoint captures the autocast state of the forward pass and replays it in the recompute.",
        ),
    )


def test_a_reviewed_pair_is_not_reported(tmp_path: Path) -> None:
    bank = near_duplicate_bank(tmp_path)
    assert any("near-duplicate" in p for p in collect([bank], root=ROOT)[1])
    (bank / "reviewed-pairs.yaml").write_text(
        '- pair: [autocast-b, autocast-a]\n  distinct: "a asks the recompute dtype, b asks the matmul dtype."\n'
    )
    questions, problems = collect([bank], root=ROOT)
    assert not any("near-duplicate" in p or "reviewed-pairs" in p for p in problems), problems
    assert len(questions) == 2  # the listing is not read as a bank file
    assert len(load_bank(bank, root=ROOT)) == 2


def test_reviewed_pairs_problems_are_reported_at_their_line(tmp_path: Path) -> None:
    bank = near_duplicate_bank(tmp_path)
    listing = bank / "reviewed-pairs.yaml"
    listing.write_text(
        '- pair: [autocast-a, autocast-c]\n  distinct: "a asks the recompute dtype, c asks nothing at all."\n'
        "- pair: [autocast-a, autocast-b]\n  distinct: too short\n"
        "- pair: [autocast-a, autocast-b]\n"
        '- pair: [autocast-b, autocast-a]\n  distinct: "a asks the recompute dtype, b asks the matmul dtype."\n'
        '- pair: [autocast-a, autocast-b]\n  distinct: "a asks the recompute dtype, b asks the matmul dtype."\n'
    )
    problems = collect([bank], root=ROOT)[1]
    assert f"{listing}:1: unknown question id 'autocast-c'" in problems
    assert any(p.startswith(f"{listing}:3: `distinct` must say") for p in problems), problems
    assert any(p.startswith(f"{listing}:5: `distinct` must say") for p in problems), problems
    assert f"{listing}:8: the pair autocast-a, autocast-b is already listed at line 6" in problems
    assert not any("near-duplicate" in p for p in problems)
    assert len([p for p in problems if p.startswith(str(listing))]) == 4, problems
