"""The prompt-echo rules of `questions lint`: a key that alone repeats a rare word of its prompt,
or alone names an API from the prompt's family, is reported at its question's line unless
questions/reviewed-echoes.yaml records why it is fair."""

from __future__ import annotations

from pathlib import Path

from bot.core.bank import collect, load_bank
from tests.conftest import ROOT

WHY = "This explanation is long enough to pass the forty character rule."


def question(qid: str, prompt: str, right: str, wrong: list[str]) -> str:
    choices = f"      - text: {right}\n        correct: true\n        why: {WHY}\n"
    choices += "".join(f"      - text: {text}\n        why: {WHY}\n" for text in wrong)
    return (
        f"  - id: {qid}\n    difficulty: 2\n    prompt: {prompt}\n    choices:\n{choices}"
        '    explain: Something.\n    refs: ["https://pytorch.org/docs/stable/checkpoint.html"]\n'
    )


def write_bank(tmp_path: Path, *questions: str, echoes: str | None = None) -> Path:
    bank = tmp_path / "bank"
    bank.mkdir(exist_ok=True)
    (bank / "schedules.yaml").write_text("topic: schedules\nquestions:\n" + "".join(questions))
    if echoes is not None:
        (bank / "reviewed-echoes.yaml").write_text(echoes)
    return bank


LOG_N = question(
    "log-n",
    "Memory can fall to O(log N) for N layers. What does it cost in extra forward work?",
    "O(N log N) extra forward work",
    ["About one extra forward pass", "No extra work beyond plain training"],
)
LOG_N_FAIR = question(
    "log-n-fair",
    "Memory can fall to O(log N) for N layers. What does it cost in extra forward work?",
    "O(N log N) extra forward work",
    ["O(log N) extra forward passes in all", "No extra work beyond plain training"],
)
PEAK = question(
    "peak",
    "You read torch.cuda.max_memory_allocated() for several setups. What must you call before each?",
    "torch.cuda.reset_peak_memory_stats()",
    ["torch.cuda.empty_cache()", "torch.cuda.synchronize()"],
)
PEAK_FAIR = question(
    "peak-fair",
    "You read torch.cuda.max_memory_allocated() for several setups. Which call must come before each?",
    "torch.cuda.reset_peak_memory_stats()",
    ["torch.cuda.empty_cache()", "torch.cuda.reset_accumulated_memory_stats()"],
)


def test_a_key_alone_sharing_a_rare_prompt_word_is_reported_at_its_question(tmp_path: Path) -> None:
    bank = write_bank(tmp_path, LOG_N)
    path = bank / "schedules.yaml"
    assert collect([bank], root=ROOT)[1] == [
        f"{path}:3: the correct choice of 'log-n' alone echoes the prompt ('log'); "
        "reword a distractor or the key, or record why it is fair in reviewed-echoes.yaml"
    ]
    # A lint problem, not a load error: the bot still starts with it.
    assert [q.id for q in load_bank(bank, root=ROOT).questions] == ["log-n"]


def test_a_distractor_sharing_the_word_clears_it(tmp_path: Path) -> None:
    assert collect([write_bank(tmp_path, LOG_N_FAIR)], root=ROOT)[1] == []


def test_a_key_alone_naming_an_api_of_the_prompts_family_is_reported(tmp_path: Path) -> None:
    bank = write_bank(tmp_path, PEAK)
    problems = [p for p in collect([bank], root=ROOT)[1] if "echoes" in p]
    assert problems == [
        f"{bank / 'schedules.yaml'}:3: the correct choice of 'peak' alone echoes the prompt "
        "('memory', 'torch.cuda.reset_peak_memory_stats'); reword a distractor or the key, or record why it is "
        "fair in reviewed-echoes.yaml"
    ]


def test_a_distractor_from_the_same_family_clears_it(tmp_path: Path) -> None:
    # reset_accumulated_memory_stats shares "memory" with max_memory_allocated, as the key does;
    # torch.cuda alone is no family (every CUDA call has it).
    assert [p for p in collect([write_bank(tmp_path, PEAK_FAIR)], root=ROOT)[1] if "echoes" in p] == []


def test_a_recorded_echo_is_not_reported_but_a_new_word_is(tmp_path: Path) -> None:
    echoes = (
        "- question: log-n\n  words: [log]\n"
        "  why: The prompt states log N memory; the cost asked about is a different quantity.\n"
        "- question: peak\n  words: [something-else]\n"
        "  why: This entry records a word that lint no longer reports for this question.\n"
    )
    bank = write_bank(tmp_path, LOG_N, PEAK, echoes=echoes)
    problems = collect([bank], root=ROOT)[1]
    assert [p for p in problems if "'log-n'" in p] == []
    assert [p for p in problems if "'peak'" in p and "reset_peak_memory_stats" in p]


def test_reviewed_echoes_problems_are_reported_at_their_line(tmp_path: Path) -> None:
    echoes = (
        "- question: log-n\n  words: [log]\n  why: too short\n"
        "- question: no-such-id\n  words: [log]\n  why: A sentence long enough to pass the rule here.\n"
        "- question: log-n\n"
    )
    bank = write_bank(tmp_path, LOG_N, echoes=echoes)
    listing = bank / "reviewed-echoes.yaml"
    problems = collect([bank], root=ROOT)[1]
    assert (
        f"{listing}:1: `why` must say in one sentence (at least 30 characters) why the echo does not give the key away"
        in problems
    )
    assert f"{listing}:4: unknown question id 'no-such-id'" in problems
    assert f"{listing}:7: an entry names its `question` and the `words` lint reported" in problems


def test_the_shipped_bank_has_no_unrecorded_echo() -> None:
    problems = collect([ROOT / "questions"], root=ROOT)[1]
    assert [p for p in problems if "echoes the prompt" in p] == []


def test_a_folded_line_that_splits_code_is_reported(tmp_path: Path) -> None:
    folded = question(
        "folded",
        "Which variant do the docs recommend for new code?",
        "The non-reentrant one",
        ["The reentrant one", "Either, they are the same"],
    ).replace("    explain: Something.\n", "    explain: >-\n      Pass (use_reentrant=\n      False) explicitly.\n")
    bank = write_bank(tmp_path, folded)
    problems = collect([bank], root=ROOT)[1]
    assert any(
        ":3: explain has 'use_reentrant= False': a folded line broke a piece of code" in p for p in problems
    ), problems
    fixed = folded.replace("(use_reentrant=\n      False)", "(use_reentrant=False)")
    (bank / "schedules.yaml").write_text("topic: schedules\nquestions:\n" + fixed)
    assert not any("folded line" in p for p in collect([bank], root=ROOT)[1])
