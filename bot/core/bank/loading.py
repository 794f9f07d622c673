"""Load the question bank (questions/*.yaml) into Question values, and lint it.

Every problem is reported as `path:line: message`, all of them at once, so an author fixes a
file in one pass. A file is composed into YAML nodes, which keep line numbers, converted to
plain data (nodes.py) and validated by the schema's pydantic models (schema.py); each problem's
location is walked back to its line. A malformed document never escapes as a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml
from pydantic import ValidationError

from bot.core.bank.giveaways import (
    MAX_LONGEST_CORRECT_SHARE,
    length_rank_problems,
    longest_correct_share,
    style_problems,
)
from bot.core.bank.nodes import YAML_LOADER, Document, line_of, read_document
from bot.core.bank.reviewed import REVIEWED_ECHOES, REVIEWED_PAIRS, reviewed_echoes, reviewed_pairs
from bot.core.bank.schema import BankFile, Loc, QuestionEntry, Rule, text_of
from bot.core.bank.similarity import NEAR_DUPLICATE_THRESHOLD, echo_problems, near_duplicates
from bot.core.bank.values import Bank, Question, normalise
from bot.core.errors import BankError

# (line, sentence) of one file, before the path is put in front.
Found = list[tuple[int, str]]


class _File:
    """One document being read: where it is, its nodes, and what was found in it so far."""

    def __init__(self, path: Path, document: Document, root: Path | None) -> None:
        self.path = path
        self.document = document
        self.context = {"stem": path.stem, "root": root}
        self.problems: Found = [(line, sentence) for _, line, sentence in document.key_problems]
        self.style: Found = []

    def refused(self, exc: ValidationError, at: Loc = ()) -> None:
        for error in exc.errors():
            loc = (*at, *error["loc"])
            line = line_of(self.document.root, loc, key=error["type"] == Rule.UNKNOWN_KEY)
            sentence = (
                error["msg"] if error["type"].startswith("bank_") else f"{'.'.join(map(str, loc))}: {error['msg']}"
            )
            self.problems.append((line, sentence))

    def has_key_problems(self, at: Loc) -> bool:
        return any(loc[: len(at)] == at for loc, _, _ in self.document.key_problems)

    def topic(self) -> str:
        """The file's topic, read as it is written: even a wrong one names its questions' topic."""
        data = self.document.data
        written = data.get("topic") if isinstance(data, dict) else None
        try:
            return text_of(written, "topic")
        except ValueError:
            return ""

    def questions(self, style: bool) -> list[Question]:
        data = self.document.data
        try:
            BankFile.model_validate(data, context=self.context)
        except ValidationError as exc:
            self.refused(exc)
        entries = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            return []
        topic = self.topic()
        questions = []
        for i, entry in enumerate(entries):
            at: Loc = ("questions", i)
            try:
                valid = QuestionEntry.model_validate(entry, context=self.context)
            except ValidationError as exc:
                self.refused(exc, at)
                continue
            if self.has_key_problems(at):
                continue
            question = valid.question(topic, source=f"{self.path}:{line_of(self.document.root, at)}")
            if style:
                self.style += [(line_of(self.document.root, (*at, *loc)), why) for loc, why in style_problems(question)]
            questions.append(question)
        return questions

    def report(self) -> list[str]:
        """Every problem, then every style problem, as path:line: sentence, in line order."""
        found = [(line, " ".join(sentence.split())) for line, sentence in self.problems] + self.style
        return [f"{self.path}:{line}: {sentence}" for line, sentence in sorted(found, key=lambda item: item[0])]


def parse_file(path: Path, text: str, root: Path | None = None, style: bool = True) -> tuple[list[Question], list[str]]:
    """Questions and problems of one YAML document; never raises on bad content. `style`
    adds the give-away rules (`questions lint`), which do not make a question unusable."""
    try:
        node = yaml.compose(text, Loader=YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        return [], [_one(path, line, f"not valid YAML: {exc.problem or exc.context or 'parse error'}")]
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        return [], [_one(path, 1, f"not valid YAML: {type(exc).__name__}")]
    if node is None:
        return [], [_one(path, 1, "the file is empty; it needs 'topic' and 'questions'")]
    try:
        file = _File(path, read_document(node), root)
        questions = file.questions(style)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", 0) + 1
        return [], [_one(path, line, f"a value cannot be read: {getattr(exc, 'problem', None) or exc}")]
    return questions, file.report()


def _one(path: Path, line: int, sentence: str) -> str:
    return f"{path}:{line}: {' '.join(sentence.split())}"


def _bank_files(paths: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The files to read (a directory means its *.yaml, less the reviewers' records)."""
    files: list[Path] = []
    problems: list[str] = []
    for path in paths:
        if path.is_dir():
            files.extend(f for f in sorted(path.glob("*.yaml")) if f.name not in (REVIEWED_PAIRS, REVIEWED_ECHOES))
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{path}:1: no such file or directory")
    return files, problems


def _read(file: Path, root: Path | None, style: bool) -> tuple[list[Question], list[str]]:
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = file.read_bytes()[: exc.start].count(b"\n") + 1
        return [], [f"{file}:{line}: not UTF-8 text"]
    except OSError as exc:
        return [], [f"{file}:1: cannot be read ({exc.strerror})"]
    return parse_file(file, text, root, style)


def _repeats(questions: Sequence[Question]) -> list[str]:
    """An id used twice, or the same prompt twice, across the files."""
    problems = []
    first_id: dict[str, str] = {}
    first_prompt: dict[str, str] = {}
    for q in questions:
        if q.id in first_id:
            problems.append(f"{q.source}: id '{q.id}' is already used at {first_id[q.id]}")
        else:
            first_id[q.id] = q.source
        key = normalise(q.prompt)
        if key in first_prompt:
            problems.append(f"{q.source}: the same prompt stands at {first_prompt[key]}")
        else:
            first_prompt[key] = q.source
    return problems


def _reviews(files: Sequence[Path], ids: set[str]) -> tuple[set[frozenset[str]], dict[str, frozenset[str]], list[str]]:
    """The reviewers' records next to the files: the pairs, the echoes, and their problems."""
    pairs: set[frozenset[str]] = set()
    echoes: dict[str, frozenset[str]] = {}
    problems: list[str] = []
    for listing in sorted({f.parent / REVIEWED_PAIRS for f in files}):
        if listing.is_file():
            found_pairs, listing_problems = reviewed_pairs(listing, ids)
            pairs |= found_pairs
            problems.extend(listing_problems)
    for listing in sorted({f.parent / REVIEWED_ECHOES for f in files}):
        if listing.is_file():
            found_echoes, listing_problems = reviewed_echoes(listing, ids)
            echoes.update(found_echoes)
            problems.extend(listing_problems)
    return pairs, echoes, problems


def collect(paths: Sequence[Path], root: Path | None = None, style: bool = True) -> tuple[list[Question], list[str]]:
    """Parse every file (a directory means its *.yaml) and check the bank as a whole. `style`
    (what `questions lint` and CI enforce) adds the give-away and near-duplicate rules; the
    bot's loader leaves them out, so a style slip never stops it from starting."""
    files, problems = _bank_files(paths)
    if root is None and files:
        root = files[0].resolve().parent.parent
    questions: list[Question] = []
    for file in files:
        found, file_problems = _read(file, root, style)
        questions.extend(found)
        problems.extend(file_problems)
    problems.extend(_repeats(questions))
    if style:
        pairs, echoes, review_problems = _reviews(files, {q.id for q in questions})
        problems.extend(review_problems)
        where = f"{paths[0]}:1" if paths else "bank:1"
        problems.extend(bank_problems(questions, where=where, reviewed=pairs, reviewed_echoes=echoes))
    return questions, problems


def bank_problems(
    questions: Sequence[Question],
    where: str,
    reviewed: Iterable[frozenset[str]] = (),
    reviewed_echoes: dict[str, frozenset[str]] | None = None,
) -> list[str]:
    """The rules over the whole bank: the share of longest correct choices, the spread of the
    correct choice's length rank, near-duplicates and prompt echoes.
    `where` (path:line) is where the bank-wide share is reported; `reviewed` pairs (by id) were
    judged distinct by a reviewer and are not reported, nor the `reviewed_echoes` words."""
    reviewed = set(reviewed)
    problems = []
    problems.extend(echo_problems(questions, reviewed_echoes))
    longest, total = longest_correct_share(questions)
    if total and longest / total > MAX_LONGEST_CORRECT_SHARE:
        problems.append(
            f"{where}: the correct choice is the strictly longest in {longest} of {total} questions "
            f"({longest / total:.1%}); the limit is {MAX_LONGEST_CORRECT_SHARE:.0%}"
        )
    problems.extend(length_rank_problems(questions, where))
    for score, a, b in near_duplicates(questions):
        if frozenset((a.id, b.id)) in reviewed:
            continue
        problems.append(
            f"{a.source}: question '{a.id}' is a near-duplicate of '{b.id}' at {b.source} "
            f"(similarity {score:.2f}, limit {NEAR_DUPLICATE_THRESHOLD:.2f}): ask a different thing or merge them"
        )
    return problems


def load_bank(path: Path, root: Path | None = None) -> Bank:
    """The whole bank, or BankError listing every problem."""
    questions, problems = collect([path], root, style=False)
    if problems:
        raise BankError(problems)
    if not questions:
        raise BankError([f"{path}:1: the bank holds no questions"])
    return Bank.of(questions)
