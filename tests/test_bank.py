"""The question bank loader and lint: every structural error with path and line, all at once,
and never a traceback, however mangled the document."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.bank import TOPICS, collect, load_bank, parse_file
from tests.conftest import ROOT, TEST_BANK, examples, invoke_studybot

GOOD = (TEST_BANK / "fundamentals.yaml").read_text()
PROBLEM_RE = re.compile(r"^[^\n]+:\d+: [^\n]+$")
WHY = "This explanation is long enough to pass the forty character rule."


def lint(tmp_path: Path, name: str, text: str) -> list[str]:
    bank = tmp_path / "bank"
    bank.mkdir(exist_ok=True)
    (bank / name).write_text(textwrap.dedent(text))
    return collect([bank], root=ROOT)[1]


def test_the_shipped_bank_is_clean_and_large_enough() -> None:
    bank = load_bank(ROOT / "questions")
    assert len(bank) >= 9
    for question in bank.questions:
        assert sum(c.correct for c in question.choices) == 1
        assert all(len(c.why) >= 40 for c in question.choices)


def test_the_test_bank_loads() -> None:
    assert [q.id for q in load_bank(TEST_BANK).questions] == ["t-trade", "t-why-stored", "t-rerun"]


def test_every_structural_error_is_reported_with_its_line(tmp_path: Path) -> None:
    problems = lint(
        tmp_path,
        "fundamentals.yaml",
        f"""\
        topic: fundamentals
        extra: 1
        questions:
          - id: Bad_Id
            difficulty: 4
            prompt: This is a statement.
            choices:
              - text: Only one
                why: short
            refs: []
            colour: blue
          - id: ok-id
            difficulty: 2
            prompt: {"Is this prompt far too long " * 12}?
            choices:
              - text: A
                correct: true
                why: {WHY}
              - text: a
                correct: true
                why: {WHY}
              - text: {"x" * 81}
              - correct: maybe
            refs: ["https://example.org"]
            explain: Something.
            check: tests/facts/test_nothing.py::test_missing
          - just a string
        """,
    )
    path = str(tmp_path / "bank" / "fundamentals.yaml")
    expected = [
        (2, "unknown top-level key 'extra'"),
        (4, "question needs a 'trap' or an 'explain'"),
        (4, "id 'Bad_Id' must be 3-60 characters"),
        (5, "difficulty must be 1, 2 or 3"),
        (6, "prompt must be a question ending with '?'"),
        (8, "a question has 2 to 5 choices, not 1"),
        (8, "exactly one choice must be correct; 0 are"),
        (9, "why is 5 characters; write at least 40"),
        (10, "refs must be a list with at least one reference"),
        (11, "unknown key 'colour'"),
        (14, "characters; the limit is 300"),
        (16, "exactly one choice must be correct; 2 are"),
        (19, "two choices of this question have the same text"),
        (22, "choice text is 81 characters; the limit is 80"),
        (22, "choice is missing 'why'"),
        (23, "choice is missing 'text'"),
        (23, "correct must be true or false"),
        (26, "check points at tests/facts/test_nothing.py, which does not exist"),
        (27, "a question must be a mapping"),
    ]
    for line, words in expected:
        assert any(p.startswith(f"{path}:{line}: ") and words in p for p in problems), (line, words, problems)
    assert all(PROBLEM_RE.match(p) for p in problems)


def test_bank_wide_rules(tmp_path: Path) -> None:
    question = f"""
          - id: same-id
            difficulty: 1
            prompt: What is the same prompt?
            choices:
              - text: Yes
                correct: true
                why: {WHY}
              - text: No
                why: {WHY}
            trap: None.
            refs: ["https://pytorch.org/docs/stable/checkpoint.html"]
    """
    lint(tmp_path, "schedules.yaml", "topic: schedules\nquestions:" + textwrap.dedent(question))
    problems = lint(tmp_path, "unknown.yaml", "topic: astrology\nquestions:" + textwrap.dedent(question))
    assert any("id 'same-id' is already used at" in p for p in problems)
    assert any("the same prompt stands at" in p for p in problems)
    assert any(":1: topic 'astrology' must equal the file's name 'unknown'" in p for p in problems)
    assert any(":1: topic 'astrology' is not one of" in p for p in problems)


def test_check_must_name_an_existing_test_function(tmp_path: Path) -> None:
    existing = next((ROOT / "tests" / "facts").glob("test_*.py"), None)
    assert existing is not None
    text = GOOD.replace(
        '    refs: ["https://pytorch.org/docs/stable/notes/autograd.html"]',
        '    refs: ["https://pytorch.org/docs/stable/notes/autograd.html"]\n'
        f"    check: tests/facts/{existing.name}::test_no_such_function",
    )
    problems = lint(tmp_path, "fundamentals.yaml", text)
    assert problems and "which" in problems[0] and "does not define" in problems[0]


def test_yaml_syntax_errors_and_bad_encoding_have_a_line(tmp_path: Path) -> None:
    problems = lint(tmp_path, "fundamentals.yaml", "topic: fundamentals\nquestions:\n  - id: [unclosed\n")
    assert len(problems) == 1 and re.search(r"fundamentals\.yaml:\d+: not valid YAML", problems[0])
    (tmp_path / "bank" / "compile.yaml").write_bytes(b"topic: compile\nquestions:\n  - id: caf\xe9\n")
    problems = collect([tmp_path / "bank" / "compile.yaml"], root=ROOT)[1]
    assert problems == [f"{tmp_path / 'bank' / 'compile.yaml'}:3: not UTF-8 text"]


def _studybot(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`python -m bot ARGS` from `cwd`, in this process (tests/test_bank_rules.py runs `questions
    lint` as a real process)."""
    return invoke_studybot(list(args), cwd)


def test_lint_cli_exit_codes(tmp_path: Path) -> None:
    clean = _studybot("questions", "lint", str(TEST_BANK))
    assert clean.returncode == 0 and clean.stdout.startswith("OK: 3 questions in 1 files")
    lint(tmp_path, "fundamentals.yaml", "topic: fundamentals\nquestions:\n  - id: X\n")
    broken = _studybot("questions", "lint", str(tmp_path / "bank"))
    assert broken.returncode == 1
    lines = broken.stdout.strip().splitlines()
    assert len(lines) >= 3 and all(PROBLEM_RE.match(line) for line in lines)
    assert "problems found" in broken.stderr and "Traceback" not in broken.stderr


def test_questions_list_and_stats() -> None:
    listed = _studybot("questions", "list", "--topic", "fundamentals", "--json")
    assert listed.returncode == 0
    import json

    rows = json.loads(listed.stdout)
    assert rows and all(r["topic"] == "fundamentals" for r in rows)
    stats = _studybot("questions", "stats")
    assert stats.returncode == 0
    for topic in TOPICS:
        assert re.search(rf"^{topic}\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+$", stats.stdout, re.MULTILINE)
    bad = _studybot("questions", "list", "--topic", "astrology")
    assert bad.returncode == 2 and "Unknown topic" in bad.stderr


# ---------------------------------------------------------------- fuzzing


def _mutate(text: str, data: st.DataObject) -> str:
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        action = data.draw(st.sampled_from(["drop", "dup", "indent", "dedent", "garble", "value", "swap"]))
        if action == "drop":
            del lines[i]
        elif action == "dup":
            lines.insert(i, lines[i])
        elif action == "indent":
            lines[i] = "  " + lines[i]
        elif action == "dedent":
            lines[i] = lines[i][2:]
        elif action == "garble":
            pos = data.draw(st.integers(0, len(lines[i])))
            junk = data.draw(st.text(alphabet=":-[]{}&*!|>'\"%@`#, \t?\u202e\x85", max_size=4))
            lines[i] = lines[i][:pos] + junk + lines[i][pos:]
        elif action == "value":
            key = lines[i].split(":", 1)[0]
            value = data.draw(
                st.sampled_from(
                    [
                        "",
                        "~",
                        "null",
                        "[]",
                        "{}",
                        "3.5",
                        "yes",
                        "2026-13-45",
                        "!!binary AAAA",
                        "*alias",
                        "&a [*a]",
                        "- x",
                        "{a: [b, {c: d}]}",
                    ]
                )
            )
            lines[i] = f"{key}: {value}"
        else:
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


def _assert_clean(text: str) -> None:
    questions, problems = parse_file(Path("questions/fundamentals.yaml"), text, root=ROOT)
    for problem in problems:
        assert PROBLEM_RE.match(problem), problem
        assert problem.startswith("questions/fundamentals.yaml:")
    for question in questions:
        assert sum(c.correct for c in question.choices) == 1


@settings(max_examples=examples(700), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mangled_documents_never_raise(data: st.DataObject) -> None:
    _assert_clean(_mutate(GOOD, data))


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from(["topic", "questions", "id", "choices", "x"]), yaml_values, max_size=4)
    | st.text(max_size=200)
)
def test_random_documents_never_raise(document: object) -> None:
    text = document if isinstance(document, str) else yaml.safe_dump(document, allow_unicode=True)
    _assert_clean(text)
