"""The bank's optional `hint:`: a short nudge before an answer. The loader bounds its length and
reports a bad one at its line; the lint reports a hint that gives the key away (a word only the
correct choice has, or the correct choice named whole), and the question still loads."""

from __future__ import annotations

from pathlib import Path

from bot.core.bank import MAX_HINT, MIN_HINT, collect, load_bank
from tests.conftest import ROOT

WHY = "This explanation is long enough to pass the forty character rule."


def hinted(
    qid: str, hint: str, right: str = "it replays the saved RNG state", prompt: str = "Why does dropout match?"
) -> str:
    wrong = ["it turns dropout off in the rerun", "it saves the dropout mask anyway"]
    choices = f"      - text: {right}\n        correct: true\n        why: {WHY}\n"
    choices += "".join(f"      - text: {text}\n        why: {WHY}\n" for text in wrong)
    return (
        f"  - id: {qid}\n    difficulty: 2\n    prompt: {prompt}\n    choices:\n{choices}"
        f"    hint: {hint}\n"
        '    explain: Something.\n    refs: ["https://pytorch.org/docs/stable/checkpoint.html"]\n'
    )


def write_bank(tmp_path: Path, *questions: str) -> tuple[Path, Path]:
    bank = tmp_path / "bank"
    bank.mkdir(exist_ok=True)
    path = bank / "correctness.yaml"
    path.write_text("topic: correctness\nquestions:\n" + "".join(questions))
    return bank, path


def test_a_fair_hint_is_carried_by_the_question_and_passes_the_lint(tmp_path: Path) -> None:
    hint = "Think about what the second   forward run must reproduce."
    bank, _ = write_bank(tmp_path, hinted("fair-hint", hint))
    questions, problems = collect([bank], root=ROOT)
    assert problems == []
    assert questions[0].hint == "Think about what the second forward run must reproduce."
    assert load_bank(bank, root=ROOT).questions[0].hint == questions[0].hint


def test_a_question_without_a_hint_has_none(tmp_path: Path) -> None:
    bank, path = write_bank(tmp_path, hinted("no-hint", "x" * 30))
    path.write_text(path.read_text().replace("    hint: " + "x" * 30 + "\n", ""))
    assert load_bank(bank, root=ROOT).questions[0].hint is None


def test_a_hint_out_of_bounds_or_not_text_is_reported_at_its_line(tmp_path: Path) -> None:
    bank, path = write_bank(
        tmp_path,
        hinted("short-hint", "Too short."),
        hinted("long-hint", "y" * (MAX_HINT + 1), prompt="Why does dropout match twice?"),
        hinted("list-hint", "[a, b]", prompt="Why does dropout match thrice?"),
    )
    problems = collect([bank], root=ROOT)[1]
    assert f"{path}:14: hint is 10 characters; write {MIN_HINT} to {MAX_HINT}" in problems
    assert f"{path}:28: hint is {MAX_HINT + 1} characters; write {MIN_HINT} to {MAX_HINT}" in problems
    assert f"{path}:42: hint must be text" in problems
    # A malformed hint makes the question unusable, so the bot's loader refuses the bank.
    assert collect([bank], root=ROOT, style=False)[0] == []


def test_a_hint_with_a_word_only_the_key_has_is_a_giveaway_at_its_line(tmp_path: Path) -> None:
    # "RNG" and "state" are in the correct choice and in no distractor nor the prompt.
    bank, path = write_bank(tmp_path, hinted("leaky-hint", "Think about how the RNG state is kept."))
    questions, problems = collect([bank], root=ROOT)
    assert problems == [
        f"{path}:14: the hint uses 'rng', 'state', which only the correct choice has (it gives the key away)"
    ]
    # A give-away is a style problem: the question still loads.
    assert [q.id for q in load_bank(bank, root=ROOT).questions] == ["leaky-hint"]
    assert [q.id for q in questions] == ["leaky-hint"]


def test_a_hint_that_names_the_key_whole_is_a_giveaway(tmp_path: Path) -> None:
    # Every word of the key is shared (with the prompt or a distractor), so no single word leaks,
    # but the hint spells the key out and no distractor.
    bank, path = write_bank(
        tmp_path,
        hinted(
            "named-key",
            "Remember that it saves the mask.",
            right="it saves the mask",
        ),
    )
    problems = collect([bank], root=ROOT)[1]
    assert problems == [f"{path}:14: the hint names the correct choice and no other (it gives the key away)"]


def test_a_hint_reusing_the_prompts_words_or_a_distractors_is_fine(tmp_path: Path) -> None:
    # "dropout" is the prompt's word; "mask" and "turns" are the distractors'.
    bank, _ = write_bank(tmp_path, hinted("fine-hint", "Does the dropout mask exist again after it turns?"))
    assert collect([bank], root=ROOT)[1] == []
