"""Load and validate the question bank (questions/*.yaml) into Question values.

Every problem is reported as `path:line: message`, all of them at once, so an author
fixes a file in one pass. The loader walks YAML nodes (not plain dicts) to keep line
numbers, and never lets a malformed document escape as a traceback.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bot.core.demo_request import parse_question_demo, question_demo_text
from bot.core.errors import BankError, InvalidInput

TOPICS: tuple[str, ...] = (
    "fundamentals",
    "memory-anatomy",
    "schedules",
    "pytorch-api",
    "selective",
    "correctness",
    "performance",
    "frameworks",
    "combining",
    "measuring",
    "large-scale",
    "compile",
    "offloading",
    "debugging",
)

ID_RE = re.compile(r"^[a-z0-9-]{3,60}$")
CHECK_RE = re.compile(r"^(?P<file>tests/facts/[A-Za-z0-9_/]+\.py)::(?P<test>[A-Za-z_][A-Za-z0-9_]*)$")
MAX_PROMPT = 300
MAX_CHOICE = 80
MIN_WHY = 40
# A hint (optional) narrows the reasoning before an answer; shown in chat, so short.
MIN_HINT, MAX_HINT = 20, 200
MIN_CHOICES, MAX_CHOICES = 2, 5
# Give-aways: the correct choice may be at most this many times the distractors' mean length,
# and the strictly longest choice in at most this share of the bank (chance is 1 in 3 to 5).
MAX_CORRECT_LENGTH_RATIO = 1.3
MAX_LONGEST_CORRECT_SHARE = 0.30
# The length tell, one place on: across the bank no length rank of the correct choice (longest,
# second longest, ...) may hold more than this share (chance is about 1 in 4). Banks smaller
# than MIN_LENGTH_RANK_BANK are not held to it: a handful of questions cannot spread evenly.
MAX_LENGTH_RANK_SHARE = 0.30
MIN_LENGTH_RANK_BANK = 20
# Near-duplicates: TF-IDF cosine of prompt + correct choice + its why (see near_duplicates()).
# Calibrated on the bank before issue 12's rewrite (tests/data/similarity_bank_28ffca3.json):
# the repeats its review found score 0.304 to 0.76; 99% of all pairs score below 0.28.
NEAR_DUPLICATE_THRESHOLD = 0.30
# Pairs a reviewer judged distinct though they score above the threshold (next to the bank files).
REVIEWED_PAIRS = "reviewed-pairs.yaml"
# Prompt echoes (see echo_findings()) a reviewer judged fair, with why, in the same manner.
REVIEWED_ECHOES = "reviewed-echoes.yaml"
# An echoed word counts only if it is rare in the bank: a word in more than this share of the
# questions (checkpoint, memory, backward) is the subject's vocabulary, not a tell. Banks smaller
# than MIN_LENGTH_RANK_BANK have no common words.
MAX_ECHO_WORD_SHARE = 0.10
MIN_DISTINCT = 30

TOP_KEYS = {"topic", "questions"}
QUESTION_KEYS = {"id", "difficulty", "prompt", "choices", "trap", "explain", "hint", "refs", "check", "demo"}
REQUIRED_KEYS = ("id", "difficulty", "prompt", "choices", "refs")
CHOICE_KEYS = {"text", "correct", "why"}


@dataclass(frozen=True)
class Choice:
    text: str
    correct: bool
    why: str


@dataclass(frozen=True)
class Question:
    id: str
    topic: str
    difficulty: int
    prompt: str
    choices: tuple[Choice, ...]
    refs: tuple[str, ...]
    trap: str | None = None
    explain: str | None = None
    check: str | None = None
    demo: str | None = None
    source: str = ""
    hint: str | None = None

    @property
    def answer_index(self) -> int:
        return next(i for i, c in enumerate(self.choices) if c.correct)


@dataclass(frozen=True)
class Bank:
    questions: tuple[Question, ...]
    by_id: dict[str, Question] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def of(cls, questions: Iterable[Question]) -> Bank:
        qs = tuple(questions)
        return cls(qs, {q.id: q for q in qs})

    def get(self, question_id: str) -> Question | None:
        return self.by_id.get(question_id)

    def topics(self) -> list[str]:
        return sorted({q.topic for q in self.questions})

    def __len__(self) -> int:
        return len(self.questions)


def normalise(text: str) -> str:
    """Casefold and drop everything but letters and digits: how text answers are compared."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


class _Collector:
    def __init__(self, path: str, style: bool = True) -> None:
        self.path = path
        self.style = style  # also the give-away rules (lint), not only what makes a bank unusable
        self.problems: list[str] = []
        self.style_problems: list[str] = []  # reported, but the question still loads

    def add(self, node: yaml.Node | None, message: str, line: int | None = None) -> None:
        if line is None:
            line = node.start_mark.line + 1 if node is not None else 1
        # One line per problem, whatever odd characters a key or value brought along.
        self.problems.append(f"{self.path}:{line}: {' '.join(message.split())}")

    def add_style(self, node: yaml.Node, message: str) -> None:
        self.style_problems.append(f"{self.path}:{node.start_mark.line + 1}: {message}")


# libyaml's parser when PyYAML was built with it (its wheels are): the bank parses in a fifth of
# the pure-Python parser's time, which is most of the bot's start-up.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _construct(node: yaml.Node) -> object:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _mapping(node: yaml.Node, what: str, out: _Collector) -> dict[str, tuple[yaml.Node, yaml.Node]] | None:
    """A mapping node's entries by key; reports non-mappings, odd keys and duplicates."""
    if not isinstance(node, yaml.MappingNode):
        out.add(node, f"{what} must be a mapping of keys to values")
        return None
    entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            out.add(key_node, f"{what} has a key that is not a plain word")
            continue
        key = str(key_node.value)
        if key in entries:
            out.add(key_node, f"duplicate key '{key}' in {what}")
            continue
        entries[key] = (key_node, value_node)
    return entries


def _text(node: yaml.Node, what: str, out: _Collector) -> str | None:
    if not isinstance(node, yaml.ScalarNode):
        out.add(node, f"{what} must be text")
        return None
    # Numbers, booleans and dates count as their written text: only null is empty.
    text = "" if _construct(node) is None else str(node.value).strip()
    if not text:
        out.add(node, f"{what} is empty")
        return None
    return text


def _question(node: yaml.Node, topic: str, root: Path | None, out: _Collector) -> Question | None:
    entries = _mapping(node, "a question", out)
    if entries is None:
        return None
    start = len(out.problems)
    for key, (key_node, _) in entries.items():
        if key not in QUESTION_KEYS:
            out.add(key_node, f"unknown key '{key}' (allowed: {', '.join(sorted(QUESTION_KEYS))})")
    for key in REQUIRED_KEYS:
        if key not in entries:
            out.add(node, f"question is missing required key '{key}'")
    if "trap" not in entries and "explain" not in entries:
        out.add(node, "question needs a 'trap' or an 'explain'")

    qid = ""
    if "id" in entries:
        raw = _text(entries["id"][1], "id", out)
        if raw is not None:
            if not ID_RE.match(raw):
                out.add(entries["id"][1], f"id '{raw[:70]}' must be 3-60 characters of a-z, 0-9 and '-'")
            qid = raw
    difficulty = 0
    if "difficulty" in entries:
        dnode = entries["difficulty"][1]
        value = _construct(dnode) if isinstance(dnode, yaml.ScalarNode) else None
        if isinstance(value, bool) or value not in (1, 2, 3):
            out.add(dnode, "difficulty must be 1, 2 or 3")
        else:
            difficulty = int(value)
    prompt = ""
    if "prompt" in entries:
        raw = _text(entries["prompt"][1], "prompt", out)
        if raw is not None:
            prompt = " ".join(raw.split())
            if not prompt.endswith("?"):
                out.add(entries["prompt"][1], "prompt must be a question ending with '?'")
            if len(prompt) > MAX_PROMPT:
                out.add(entries["prompt"][1], f"prompt is {len(prompt)} characters; the limit is {MAX_PROMPT}")
    choices: list[Choice] = []
    if "choices" in entries:
        choices = _choices(entries["choices"][1], out)
    optional: dict[str, str | None] = {}
    for key in ("trap", "explain", "demo", "hint"):
        optional[key] = None
        if key in entries:
            raw = _text(entries[key][1], key, out)
            optional[key] = " ".join(raw.split()) if raw else None
    hint = optional["hint"]
    if hint is not None and not MIN_HINT <= len(hint) <= MAX_HINT:
        out.add(entries["hint"][1], f"hint is {len(hint)} characters; write {MIN_HINT} to {MAX_HINT}")
    if optional["demo"] is not None:
        problem = demo_problem(optional["demo"])
        if problem:
            out.add(entries["demo"][1], problem)
        optional["demo"] = question_demo_text(optional["demo"])
    refs: list[str] = []
    if "refs" in entries:
        rnode = entries["refs"][1]
        if not isinstance(rnode, yaml.SequenceNode) or not rnode.value:
            out.add(rnode, "refs must be a list with at least one reference a reader can open")
        else:
            for item in rnode.value:
                ref = _text(item, "a ref", out)
                if ref:
                    refs.append(ref)
    check: str | None = None
    if "check" in entries:
        cnode = entries["check"][1]
        raw = _text(cnode, "check", out)
        if raw is not None:
            check = raw
            problem = check_problem(raw, root)
            if problem:
                out.add(cnode, problem)
    if len(out.problems) > start:
        return None
    if out.style and hint is not None:
        giveaway = hint_giveaway(hint, prompt, choices)
        if giveaway:
            out.add_style(entries["hint"][1], giveaway)
    if out.style:
        shown = [("prompt", prompt), *((k, optional[k]) for k in ("trap", "explain", "hint"))]
        shown += [("a why", c.why) for c in choices] + [("a choice", c.text) for c in choices]
        for what, text in shown:
            fold = _FOLD_RE.search(text or "")
            if fold:
                out.add_style(
                    node, f"{what} has '{fold.group(0)}': a folded line broke a piece of code; keep it on one line"
                )
    return Question(
        id=qid,
        topic=topic,
        difficulty=difficulty,
        prompt=prompt,
        choices=tuple(choices),
        refs=tuple(refs),
        trap=optional["trap"],
        explain=optional["explain"],
        check=check,
        demo=optional["demo"],
        source=f"{out.path}:{node.start_mark.line + 1}",
        hint=hint,
    )


def _choices(node: yaml.Node, out: _Collector) -> list[Choice]:
    if not isinstance(node, yaml.SequenceNode):
        out.add(node, "choices must be a list")
        return []
    count = len(node.value)
    if not MIN_CHOICES <= count <= MAX_CHOICES:
        out.add(node, f"a question has {MIN_CHOICES} to {MAX_CHOICES} choices, not {count}")
    choices: list[Choice] = []
    seen: dict[str, int] = {}
    correct_count = 0
    lengths: list[tuple[int, bool, yaml.Node]] = []
    for cnode in node.value:
        entries = _mapping(cnode, "a choice", out)
        if entries is None:
            continue
        for key, (key_node, _) in entries.items():
            if key not in CHOICE_KEYS:
                out.add(key_node, f"unknown key '{key}' in a choice (allowed: correct, text, why)")
        text = why = None
        if "text" not in entries:
            out.add(cnode, "choice is missing 'text'")
        else:
            text = _text(entries["text"][1], "choice text", out)
            if text is not None:
                text = " ".join(text.split())
                if len(text) > MAX_CHOICE:
                    out.add(entries["text"][1], f"choice text is {len(text)} characters; the limit is {MAX_CHOICE}")
                key = normalise(text)
                if key in seen:
                    out.add(entries["text"][1], "two choices of this question have the same text")
                seen[key] = 1
        if "why" not in entries:
            out.add(cnode, "choice is missing 'why' (every choice explains itself)")
        else:
            why = _text(entries["why"][1], "why", out)
            if why is not None:
                why = " ".join(why.split())
                if len(why) < MIN_WHY:
                    out.add(entries["why"][1], f"why is {len(why)} characters; write at least {MIN_WHY}")
        correct = False
        if "correct" in entries:
            cvalue = entries["correct"][1]
            value = _construct(cvalue) if isinstance(cvalue, yaml.ScalarNode) else None
            if not isinstance(value, bool):
                out.add(cvalue, "correct must be true or false")
            else:
                correct = value
        correct_count += correct
        if text is not None:
            lengths.append((len(text), correct, entries["text"][1]))
        if text is not None and why is not None:
            choices.append(Choice(text=text, correct=correct, why=why))
    if correct_count != 1:
        out.add(node, f"exactly one choice must be correct; {correct_count} are")
    elif out.style and len(lengths) == count >= MIN_CHOICES:
        _length_giveaway(lengths, out)
    return choices


def _length_giveaway(lengths: list[tuple[int, bool, yaml.Node]], out: _Collector) -> None:
    """The correct choice may not stand out by its length (a give-away)."""
    right = next((n, tnode) for n, correct, tnode in lengths if correct)
    wrong = [n for n, correct, _ in lengths if not correct]
    mean = sum(wrong) / len(wrong)
    if right[0] > MAX_CORRECT_LENGTH_RATIO * mean:
        out.add_style(
            right[1],
            f"the correct choice is {right[0]} characters, {right[0] / mean:.2f}x the distractors' mean of "
            f"{mean:.0f}; the limit is {MAX_CORRECT_LENGTH_RATIO}x (its length gives it away)",
        )


# A YAML fold (`>-`) turns a line break into a space: `use_reentrant=` + newline + `False`
# renders as "use_reentrant= False", `partial(` + newline + `f` as "partial( f".
_FOLD_RE = re.compile(r"[A-Za-z0-9_]+= [A-Za-z0-9_]+|[A-Za-z0-9_]+\( [A-Za-z0-9_]+")


def distinctive_terms(prompt: str, choices: Sequence[Choice]) -> set[str]:
    """The correct choice's words (as _terms() counts them) that no distractor and not the prompt
    has: what would point at the key if anything else repeated it."""
    right = next((c for c in choices if c.correct), None)
    if right is None:
        return set()
    others: set[str] = set(_terms(prompt))
    for choice in choices:
        if not choice.correct:
            others |= set(_terms(choice.text))
    return set(_terms(right.text)) - others


def hint_giveaway(hint: str, prompt: str, choices: Sequence[Choice]) -> str | None:
    """Why a hint gives the key away, or None: it uses a word only the correct choice has, or it
    names every word of the correct choice while naming no distractor whole."""
    said = set(_terms(hint))
    leaked = sorted(distinctive_terms(prompt, choices) & said)
    if leaked:
        words = ", ".join(f"'{w}'" for w in leaked)
        return f"the hint uses {words}, which only the correct choice has (it gives the key away)"
    right = next((c for c in choices if c.correct), None)
    key = set(_terms(right.text)) if right is not None else set()
    named = [set(_terms(c.text)) <= said for c in choices if not c.correct]
    if key and key <= said and not any(named):
        return "the hint names the correct choice and no other (it gives the key away)"
    return None


def demo_problem(field: str) -> str | None:
    """Why a question's `demo:` field cannot be offered under its reveal, or None: it is read
    as chat's `/demo` request (`layers=4 ...` means `/demo checkpoint layers=4 ...`) and must
    run in seconds on any worker."""
    try:
        parse_question_demo(field)
    except InvalidInput as exc:
        return f"demo '{field[:80]}': {exc.message}"
    return None


def _tests_defined(test_file: Path) -> frozenset[str] | None:
    """The test functions a file defines (None when there is no such file): read once per
    file and load, not once per question that names it."""
    try:
        stat = test_file.stat()
    except OSError:
        return None
    return _tests_in(test_file, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _tests_in(test_file: Path, mtime_ns: int, size: int) -> frozenset[str] | None:
    if not test_file.is_file():
        return None
    source = test_file.read_text(encoding="utf-8", errors="replace")
    return frozenset(re.findall(r"^\s*(?:async\s+)?def (\w+)\(", source, re.MULTILINE))


def check_problem(check: str, root: Path | None) -> str | None:
    """Why a `check` reference is broken, or None when it names an existing test."""
    match = CHECK_RE.match(check)
    if not match:
        return f"check '{check[:80]}' must look like tests/facts/test_x.py::test_name"
    if root is None:
        return None
    defined = _tests_defined(root / match["file"])
    if defined is None:
        return f"check points at {match['file']}, which does not exist"
    if match["test"] not in defined:
        return f"check points at {match['test']}, which {match['file']} does not define"
    return None


def parse_file(path: Path, text: str, root: Path | None = None, style: bool = True) -> tuple[list[Question], list[str]]:
    """Questions and problems of one YAML document; never raises on bad content. `style`
    adds the give-away rules (`questions lint`), which do not make a question unusable."""
    out = _Collector(str(path), style)
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        out.add(None, f"not valid YAML: {exc.problem or exc.context or 'parse error'}", line=line)
        return [], out.problems
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        out.add(None, f"not valid YAML: {type(exc).__name__}")
        return [], out.problems
    if node is None:
        out.add(None, "the file is empty; it needs 'topic' and 'questions'")
        return [], out.problems
    try:
        questions = _document(node, path, root, out)
        return questions, sorted(out.problems + out.style_problems, key=_line_of)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        # A scalar the safe constructor refuses (e.g. a malformed timestamp) lands here.
        line = getattr(getattr(exc, "problem_mark", None), "line", 0) + 1
        out.add(None, f"a value cannot be read: {getattr(exc, 'problem', None) or exc}", line=line)
        return [], out.problems


def _line_of(problem: str) -> int:
    match = re.search(r":(\d+): ", problem)
    return int(match.group(1)) if match else 0


def _document(node: yaml.Node, path: Path, root: Path | None, out: _Collector) -> list[Question]:
    entries = _mapping(node, "the file", out)
    if entries is None:
        return []
    for key, (key_node, _) in entries.items():
        if key not in TOP_KEYS:
            out.add(key_node, f"unknown top-level key '{key}' (allowed: topic, questions)")
    topic = ""
    if "topic" not in entries:
        out.add(node, "the file is missing 'topic'")
    else:
        raw = _text(entries["topic"][1], "topic", out)
        if raw is not None:
            topic = raw
            if raw != path.stem:
                out.add(entries["topic"][1], f"topic '{raw[:60]}' must equal the file's name '{path.stem}'")
            if raw not in TOPICS:
                out.add(entries["topic"][1], f"topic '{raw[:60]}' is not one of: {', '.join(TOPICS)}")
    if "questions" not in entries:
        out.add(node, "the file is missing 'questions'")
        return []
    qnode = entries["questions"][1]
    if not isinstance(qnode, yaml.SequenceNode):
        out.add(qnode, "questions must be a list")
        return []
    questions = []
    for item in qnode.value:
        question = _question(item, topic, root, out)
        if question is not None:
            questions.append(question)
    return questions


def collect(paths: Sequence[Path], root: Path | None = None, style: bool = True) -> tuple[list[Question], list[str]]:
    """Parse every file (a directory means its *.yaml) and check the bank as a whole. `style`
    (what `questions lint` and CI enforce) adds the give-away and near-duplicate rules; the
    bot's loader leaves them out, so a style slip never stops it from starting."""
    files: list[Path] = []
    problems: list[str] = []
    for path in paths:
        if path.is_dir():
            files.extend(f for f in sorted(path.glob("*.yaml")) if f.name not in (REVIEWED_PAIRS, REVIEWED_ECHOES))
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{path}:1: no such file or directory")
    if root is None and files:
        root = files[0].resolve().parent.parent
    questions: list[Question] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            line = file.read_bytes()[: exc.start].count(b"\n") + 1
            problems.append(f"{file}:{line}: not UTF-8 text")
            continue
        except OSError as exc:
            problems.append(f"{file}:1: cannot be read ({exc.strerror})")
            continue
        found, file_problems = parse_file(file, text, root, style)
        questions.extend(found)
        problems.extend(file_problems)
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
    if style:
        reviewed: set[frozenset[str]] = set()
        for listing in sorted({f.parent / REVIEWED_PAIRS for f in files}):
            if listing.is_file():
                pairs, listing_problems = reviewed_pairs(listing, set(first_id))
                reviewed |= pairs
                problems.extend(listing_problems)
        echoes: dict[str, frozenset[str]] = {}
        for listing in sorted({f.parent / REVIEWED_ECHOES for f in files}):
            if listing.is_file():
                found_echoes, listing_problems = reviewed_echoes(listing, set(first_id))
                echoes.update(found_echoes)
                problems.extend(listing_problems)
        problems.extend(
            bank_problems(
                questions, where=f"{paths[0]}:1" if paths else "bank:1", reviewed=reviewed, reviewed_echoes=echoes
            )
        )
    return questions, problems


def _review_entries(path: Path, form: str) -> tuple[list[yaml.Node], list[str]]:
    """A reviewers' record file's entries (a YAML list, `form` each), or why it cannot be read
    as path:line; an empty file has no entries."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [f"{path}:{mark.line + 1 if mark else 1}: cannot be read as YAML ({exc})"]
    if root is None:
        return [], []
    if not isinstance(root, yaml.SequenceNode):
        return [], [f"{path}:{root.start_mark.line + 1}: must be a list of {form} entries"]
    return list(root.value), []


def reviewed_pairs(path: Path, ids: set[str]) -> tuple[set[frozenset[str]], list[str]]:
    """The pairs of questions/reviewed-pairs.yaml (`- pair: [id-a, id-b]` with a `distinct:`
    sentence saying what each asks that the other does not), and its problems as path:line."""
    pairs: set[frozenset[str]] = set()
    entries, problems = _review_entries(path, "`- pair: [id-a, id-b]`")
    first: dict[frozenset[str], int] = {}
    for entry in entries:
        line = entry.start_mark.line + 1
        fields = {k.value: v for k, v in entry.value} if isinstance(entry, yaml.MappingNode) else {}
        pair, distinct = fields.get("pair"), fields.get("distinct")
        names = [n.value for n in getattr(pair, "value", []) if isinstance(n, yaml.ScalarNode)]
        names = names if isinstance(pair, yaml.SequenceNode) else []
        if len(names) != 2 or names[0] == names[1]:
            problems.append(f"{path}:{line}: `pair` must name two different question ids")
            continue
        unknown = [n for n in names if n not in ids]
        for name in unknown:
            problems.append(f"{path}:{line}: unknown question id '{name}'")
        if not isinstance(distinct, yaml.ScalarNode) or len(str(distinct.value).strip()) < MIN_DISTINCT:
            problems.append(
                f"{path}:{line}: `distinct` must say in one sentence (at least {MIN_DISTINCT} characters) "
                "what each question asks that the other does not"
            )
            continue
        key = frozenset(names)
        if key in first:
            problems.append(f"{path}:{line}: the pair {names[0]}, {names[1]} is already listed at line {first[key]}")
        elif not unknown:
            first[key] = line
            pairs.add(key)
    return pairs, problems


def reviewed_echoes(path: Path, ids: set[str]) -> tuple[dict[str, frozenset[str]], list[str]]:
    """The entries of questions/reviewed-echoes.yaml (`- question: id`, `words: [...]` as lint
    names them, `why:` a sentence saying why the echo does not give the key away), by id, and
    the file's problems as path:line."""
    found: dict[str, frozenset[str]] = {}
    entries, problems = _review_entries(path, "`- question: id`")
    for entry in entries:
        line = entry.start_mark.line + 1
        fields = {k.value: v for k, v in entry.value} if isinstance(entry, yaml.MappingNode) else {}
        qnode, wnode, why = fields.get("question"), fields.get("words"), fields.get("why")
        qid = str(qnode.value) if isinstance(qnode, yaml.ScalarNode) else ""
        words = [str(n.value) for n in getattr(wnode, "value", []) if isinstance(n, yaml.ScalarNode)]
        if not qid or not isinstance(wnode, yaml.SequenceNode) or not words:
            problems.append(f"{path}:{line}: an entry names its `question` and the `words` lint reported")
            continue
        if qid not in ids:
            problems.append(f"{path}:{line}: unknown question id '{qid}'")
            continue
        if not isinstance(why, yaml.ScalarNode) or len(str(why.value).strip()) < MIN_DISTINCT:
            problems.append(
                f"{path}:{line}: `why` must say in one sentence (at least {MIN_DISTINCT} characters) "
                "why the echo does not give the key away"
            )
            continue
        if qid in found:
            problems.append(f"{path}:{line}: question '{qid}' is already listed")
            continue
        found[qid] = frozenset(words)
    return found, problems


# ---------------------------------------------------------------- bank-wide rules


def correct_is_longest(question: Question) -> bool:
    """Whether the correct choice is strictly longer than every other choice."""
    right = len(question.choices[question.answer_index].text)
    return all(len(c.text) < right for c in question.choices if not c.correct)


def longest_correct_share(questions: Sequence[Question]) -> tuple[int, int]:
    """(questions whose correct choice is the strictly longest, questions)."""
    return sum(correct_is_longest(q) for q in questions), len(questions)


def key_length_ranks(question: Question) -> dict[int, float]:
    """Where the correct choice ranks by length (1 = longest), as weights summing to 1. A tie
    shares the weight equally: a key as long as one other choice, with one longer than both,
    counts half to rank 2 and half to rank 3 (its length tells nothing between them)."""
    right = len(question.choices[question.answer_index].text)
    others = [len(c.text) for c in question.choices if not c.correct]
    longer = sum(n > right for n in others)
    tied = sum(n == right for n in others)
    return {longer + 1 + i: 1 / (tied + 1) for i in range(tied + 1)}


def length_rank_distribution(questions: Sequence[Question]) -> dict[int, float]:
    """How many questions have their correct choice at each length rank (1 = the longest),
    ties shared as in key_length_ranks(); the values sum to the number of questions."""
    counts: dict[int, float] = {}
    for question in questions:
        for rank, weight in key_length_ranks(question).items():
            counts[rank] = counts.get(rank, 0.0) + weight
    return dict(sorted(counts.items()))


def length_rank_summary(questions: Sequence[Question]) -> str:
    """One line for `questions lint`: each rank's count and share of the bank."""
    total = len(questions)
    parts = [
        f"{_rank_name(rank)} {_count(count)} ({count / total:.1%})"
        for rank, count in length_rank_distribution(questions).items()
    ]
    return (
        f"correct choice by length rank (ties shared): {', '.join(parts)}; "
        f"the limit is {MAX_LENGTH_RANK_SHARE:.0%} per rank"
    )


def _rank_name(rank: int) -> str:
    suffix = {2: "nd", 3: "rd"}.get(rank, "th")
    return "longest" if rank == 1 else f"{rank}{suffix} longest"


def _count(count: float) -> str:
    return f"{round(count, 1):g}"


def length_rank_problems(questions: Sequence[Question], where: str) -> list[str]:
    """A problem per length rank holding more than MAX_LENGTH_RANK_SHARE of the questions."""
    total = len(questions)
    if total < MIN_LENGTH_RANK_BANK:
        return []
    return [
        f"{where}: the correct choice is the {_rank_name(rank)} in {_count(count)} of "
        f"{total} questions ({count / total:.1%}, ties shared); the limit is {MAX_LENGTH_RANK_SHARE:.0%} "
        "per rank (its length rank gives it away)"
        for rank, count in length_rank_distribution(questions).items()
        if count / total > MAX_LENGTH_RANK_SHARE
    ]


_WORD_RE = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a after also an and any are as at be been before but by can did do does each for from how if in "
    "into is it its more most no not of on one only or same should so than that the their them then "
    "there these they this those to was were what when where which who why will with would you your".split()
)
_SYNONYMS = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "attn": "attention",
    "recomputation": "recompute",
    "rematerialization": "recompute",
    "rebuild": "recompute",
    "rebuilt": "recompute",
    "rerun": "recompute",
    "reruns": "recompute",
}
_SUFFIXES = ("ations", "ation", "ing", "ed", "es", "s")


def _terms(text: str) -> Counter[str]:
    """Word counts after casefolding, dropping stop words and a light stemming (no_grad -> nograd)."""
    counts: Counter[str] = Counter()
    for word in _WORD_RE.findall(text.casefold().replace("_", "")):
        if word in _STOPWORDS:
            continue
        word = _SYNONYMS.get(word, word)
        for suffix in _SUFFIXES:
            if len(word) - len(suffix) >= 4 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        counts[word] += 1
    return counts


def similarity_text(question: Question) -> str:
    """What near-duplicates are compared on: the prompt, the correct choice and its why."""
    right = question.choices[question.answer_index]
    return f"{question.prompt} {right.text} {right.why}"


def near_duplicates(
    questions: Sequence[Question], threshold: float = NEAR_DUPLICATE_THRESHOLD
) -> list[tuple[float, Question, Question]]:
    """Pairs whose TF-IDF cosine similarity reaches the threshold, most similar first.

    Term weights are counts times log(1 + N / document frequency) over these questions, so
    words that every question uses (checkpoint, memory, backward) weigh little and the rare
    words two questions share (autocast, no_grad, attention core) weigh much."""
    terms = [_terms(similarity_text(q)) for q in questions]
    frequency: Counter[str] = Counter(word for counts in terms for word in counts)
    idf = {word: math.log(1 + len(questions) / n) for word, n in frequency.items()}
    vectors = []
    for counts in terms:
        vector = {word: n * idf[word] for word, n in counts.items()}
        norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        vectors.append({word: w / norm for word, w in vector.items()})
    found = []
    for i, a in enumerate(vectors):
        for j in range(i + 1, len(vectors)):
            b = vectors[j]
            small, large = (a, b) if len(a) <= len(b) else (b, a)
            score = sum(w * large.get(word, 0.0) for word, w in small.items())
            if score >= threshold and normalise(questions[i].prompt) != normalise(questions[j].prompt):
                found.append((score, questions[i], questions[j]))
    return sorted(found, key=lambda item: -item[0])


_ECHO_STOPWORDS = frozenset(
    "about above again against all almost already always another anything anyway around away back both "
    "case come does done down during either else enough even ever every far few get gets give given goes "
    "going got here just least less like made make makes many may might much must need needs never new "
    "now off often once other others over own part per quite rather really roughly said say says see "
    "seen several since some still such take takes through thus too twice under unless until upon used "
    "uses using very way ways well whatever whether while whole within without yes yet".split()
)
# API-like names: dotted (torch.cuda.empty_cache), snake_case (use_reentrant) or CamelCase
# (MemTracker); what an API's "family" is made of are its name's parts less these generic ones.
_API_RE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
)
_API_GENERIC = frozenset(
    "torch cuda nn utils functional distributed tools autograd graph config functorch inductor py org "
    "pytorch aten ops default".split()
)


def _echo_terms(text: str) -> set[str]:
    """Content words as the echo rule reads them: identifiers split into their parts
    (reset_peak_memory_stats -> reset, peak, memory, stat), no numbers, no function words."""
    return {
        w for w in _terms(re.sub(r"[._]", " ", text)) if len(w) > 2 and not w.isdigit() and w not in _ECHO_STOPWORDS
    }


def _api_names(text: str) -> list[str]:
    return [m for m in _API_RE.findall(text) if not re.fullmatch(r"[\d.]+", m)]


def _api_parts(name: str) -> set[str]:
    parts = re.split(r"[._]|(?<=[a-z])(?=[A-Z])", name)
    return {p.lower() for p in parts if p and p.lower() not in _API_GENERIC and not p.isdigit()}


def echo_findings(question: Question, common: frozenset[str] = frozenset()) -> list[str]:
    """How the correct choice echoes the prompt where no distractor does, as the words lint
    names: a rare content word the prompt and the key share and no distractor has, and an API
    name the key alone carries from the prompt's family (a name sharing a part with one the
    prompt names, e.g. reset_peak_memory_stats for max_memory_allocated)."""
    right = question.choices[question.answer_index]
    wrong = [c for c in question.choices if not c.correct]
    prompt = _echo_terms(question.prompt)
    others: set[str] = set()
    for choice in wrong:
        others |= _echo_terms(choice.text)
    found = sorted((prompt & _echo_terms(right.text)) - others - common)
    family: set[str] = set()
    for name in _api_names(question.prompt):
        family |= _api_parts(name)
    if family:
        kin = [name for name in _api_names(right.text) if _api_parts(name) & family]
        if kin and not any(_api_parts(n) & family for c in wrong for n in _api_names(c.text)):
            found.extend(name for name in kin if name not in found)
    return found


def common_echo_words(questions: Sequence[Question]) -> frozenset[str]:
    """Words in more than MAX_ECHO_WORD_SHARE of the questions (prompt and choices): the
    subject's own vocabulary, which no reader takes as a tell."""
    if len(questions) < MIN_LENGTH_RANK_BANK:
        return frozenset()
    counts: Counter[str] = Counter()
    for q in questions:
        counts.update(_echo_terms(" ".join([q.prompt, *(c.text for c in q.choices)])))
    return frozenset(w for w, n in counts.items() if n > MAX_ECHO_WORD_SHARE * len(questions))


def echo_problems(questions: Sequence[Question], reviewed: dict[str, frozenset[str]] | None = None) -> list[str]:
    """A problem per question whose key echoes its prompt (echo_findings()), less the words a
    reviewer recorded for it in reviewed-echoes.yaml."""
    reviewed = reviewed or {}
    common = common_echo_words(questions)
    problems = []
    for q in questions:
        words = [w for w in echo_findings(q, common) if w not in reviewed.get(q.id, frozenset())]
        if words:
            named = ", ".join(f"'{w}'" for w in words)
            problems.append(
                f"{q.source}: the correct choice of '{q.id}' alone echoes the prompt ({named}); "
                f"reword a distractor or the key, or record why it is fair in {REVIEWED_ECHOES}"
            )
    return problems


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
