"""The bank's schema as pydantic models: what a bank file, a question and a choice hold, and
every rule an author meets, worded as the sentence they read.

Each problem is a pydantic error whose type is a Rule and whose message is the sentence, at the
location of what it is about: the loader turns the location into the YAML file's line
(nodes.py), the members' form into the field they typed (suggestions.py). A model reports all
its problems at once: its own rules (a trap or an explanation, the number of choices, one right
choice) beside its fields' problems.

The models read plain data: text, numbers, booleans, lists and dicts, as the members' form
builds them or nodes.py converts YAML. A YAML scalar that is not a string arrives as a Written,
so a text field takes it as written (`0.50` stays `0.50`) and difficulty or correct its value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar, NoReturn, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from bot.core.bank.values import TOPICS, Choice, Question, normalise
from bot.core.errors import InvalidInput
from bot.core.rules.demo_request import parse_question_demo, question_demo_text

ID_RE = re.compile(r"^[a-z0-9-]{3,60}$")
CHECK_RE = re.compile(r"^(?P<file>tests/facts/[A-Za-z0-9_/]+\.py)::(?P<test>[A-Za-z_][A-Za-z0-9_]*)$")
MAX_PROMPT = 300
MAX_CHOICE = 80
MIN_WHY = 40
# A hint (optional) narrows the reasoning before an answer; shown in chat, so short.
MIN_HINT, MAX_HINT = 20, 200
MIN_CHOICES, MAX_CHOICES = 2, 5

TOP_KEYS = {"topic", "questions"}
QUESTION_KEYS = {"id", "difficulty", "prompt", "choices", "trap", "explain", "hint", "refs", "check", "demo"}
REQUIRED_KEYS = ("id", "difficulty", "prompt", "choices", "refs")
CHOICE_KEYS = {"text", "correct", "why"}

# Where a problem is: pydantic's location, e.g. ("choices", 2, "why") inside a question.
Loc = tuple[str | int, ...]
T = TypeVar("T")


class Rule(StrEnum):
    """What a problem is about, as its pydantic error type. The loader reports UNKNOWN_KEY at
    the key's line and every other at its value's; the members' form rewords a few for chat."""

    MAPPING = "bank_mapping"
    UNKNOWN_KEY = "bank_unknown_key"
    MISSING_KEY = "bank_missing_key"
    TRAP_OR_EXPLAIN = "bank_trap_or_explain"
    TEXT = "bank_text"
    TOPIC = "bank_topic"
    QUESTIONS = "bank_questions"
    ID = "bank_id"
    DIFFICULTY = "bank_difficulty"
    PROMPT = "bank_prompt"
    CHOICES = "bank_choices"
    CHOICE_COUNT = "bank_choice_count"
    ONE_CORRECT = "bank_one_correct"
    SAME_TEXT = "bank_same_text"
    CHOICE_TEXT = "bank_choice_text"
    WHY = "bank_why"
    CORRECT = "bank_correct"
    HINT = "bank_hint"
    DEMO = "bank_demo"
    REFS = "bank_refs"
    CHECK = "bank_check"


@dataclass(frozen=True)
class Written:
    """A YAML scalar that is not a string (a number, a boolean, a date, a tagged value): its
    text as written, its value, or why the value cannot be read (a thirteenth month)."""

    text: str
    value: object = None
    problem: str | None = None


def problem(rule: Rule, sentence: str) -> PydanticCustomError:
    """A problem as pydantic raises it: the rule its type, the sentence its message."""
    return PydanticCustomError(rule.value, "{sentence}", {"sentence": sentence})


def _at(loc: Loc, rule: Rule, sentence: str, value: object) -> InitErrorDetails:
    return {"type": problem(rule, sentence), "loc": loc, "input": value}


def _again(error: ErrorDetails) -> InitErrorDetails:
    """An error pydantic reported inside, ready to be raised again beside new ones."""
    ctx = error.get("ctx")
    if ctx is not None and "sentence" in ctx:
        return {
            "type": PydanticCustomError(error["type"], "{sentence}", ctx),
            "loc": error["loc"],
            "input": error["input"],
        }
    again: InitErrorDetails = {"type": error["type"], "loc": error["loc"], "input": error["input"]}
    if ctx is not None:
        again["ctx"] = ctx
    return again


def _refuse(details: list[InitErrorDetails]) -> NoReturn:
    raise ValidationError.from_exception_data("bank", details)


def _all(value: T, found: list[PydanticCustomError]) -> T:
    """The value when no rule found a problem; else every problem, at the value's location."""
    if len(found) == 1:
        raise found[0]
    if found:
        _refuse([{"type": error, "loc": (), "input": value} for error in found])
    return value


def _quiet(read: Callable[[object], T], value: object) -> T | None:
    """What a field reader makes of a value, or None where it would report a problem."""
    try:
        return read(value)
    except PydanticCustomError:
        return None


# ---------------------------------------------------------------- the fields


def text_of(value: object, what: str, collapse: bool = False) -> str:
    """A text field's words, stripped (`collapse`: every run of spaces and line breaks one
    space). Numbers, booleans and dates count as their written text: only null is empty."""
    if isinstance(value, Written):
        if value.problem is not None:
            raise problem(Rule.TEXT, f"{what} cannot be read: {value.problem}")
        value = value.text
    if value is not None and not isinstance(value, str):
        raise problem(Rule.TEXT, f"{what} must be text")
    text = (value or "").strip()
    if not text:
        raise problem(Rule.TEXT, f"{what} is empty")
    return " ".join(text.split()) if collapse else text


def _reader(what: str, collapse: bool = False) -> BeforeValidator:
    return BeforeValidator(functools.partial(text_of, what=what, collapse=collapse))


def _topic(topic: str, info: ValidationInfo) -> str:
    stem = (info.context or {}).get("stem")
    found = []
    if stem is not None and topic != stem:
        found.append(problem(Rule.TOPIC, f"topic '{topic[:60]}' must equal the file's name '{stem}'"))
    if topic not in TOPICS:
        found.append(problem(Rule.TOPIC, f"topic '{topic[:60]}' is not one of: {', '.join(TOPICS)}"))
    return _all(topic, found)


def _questions(value: object) -> object:
    if not isinstance(value, list):
        raise problem(Rule.QUESTIONS, "questions must be a list")
    return value


def _id(qid: str) -> str:
    if not ID_RE.match(qid):
        raise problem(Rule.ID, f"id '{qid[:70]}' must be 3-60 characters of a-z, 0-9 and '-'")
    return qid


def _difficulty(value: object) -> int:
    if isinstance(value, Written):
        value = value.value
    level = next((n for n in (1, 2, 3) if value == n and not isinstance(value, bool)), None)
    if level is None:
        raise problem(Rule.DIFFICULTY, "difficulty must be 1, 2 or 3")
    return level


def _prompt(prompt: str) -> str:
    found = []
    if not prompt.endswith("?"):
        found.append(problem(Rule.PROMPT, "prompt must be a question ending with '?'"))
    if len(prompt) > MAX_PROMPT:
        found.append(problem(Rule.PROMPT, f"prompt is {len(prompt)} characters; the limit is {MAX_PROMPT}"))
    return _all(prompt, found)


def _choice_text(text: str) -> str:
    if len(text) > MAX_CHOICE:
        raise problem(Rule.CHOICE_TEXT, f"choice text is {len(text)} characters; the limit is {MAX_CHOICE}")
    return text


def _why(why: str) -> str:
    if len(why) < MIN_WHY:
        raise problem(Rule.WHY, f"why is {len(why)} characters; write at least {MIN_WHY}")
    return why


def _yes_no(value: object) -> bool:
    if isinstance(value, Written):
        value = value.value
    if not isinstance(value, bool):
        raise problem(Rule.CORRECT, "correct must be true or false")
    return value


def _hint(hint: str | None) -> str | None:
    if hint is not None and not MIN_HINT <= len(hint) <= MAX_HINT:
        raise problem(Rule.HINT, f"hint is {len(hint)} characters; write {MIN_HINT} to {MAX_HINT}")
    return hint


def demo_problem(field: str) -> str | None:
    """Why a question's `demo:` field cannot be offered under its reveal, or None: it is read
    as chat's `/demo` request (`layers=4 ...` means `/demo checkpoint layers=4 ...`) and must
    run in seconds on any worker."""
    try:
        parse_question_demo(field)
    except InvalidInput as exc:
        return f"demo '{field[:80]}': {exc.message}"
    return None


def _demo(demo: str | None) -> str | None:
    if demo is None:
        return None
    reason = demo_problem(demo)
    if reason:
        raise problem(Rule.DEMO, reason)
    return question_demo_text(demo)


def _refs(value: object) -> object:
    if not isinstance(value, list) or not value:
        raise problem(Rule.REFS, "refs must be a list with at least one reference a reader can open")
    return value


def _tests_defined(test_file: Path) -> frozenset[str] | None:
    """The test functions a file defines (None when there is no such file): read once per
    file and load, not once per question that names it."""
    try:
        stat = test_file.stat()
    except OSError:
        return None
    return _tests_in(test_file, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _tests_in(test_file: Path, mtime_ns: int, size: int) -> frozenset[str] | None:  # noqa: ARG001 - cache key
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


def _check(check: str | None, info: ValidationInfo) -> str | None:
    reason = None if check is None else check_problem(check, (info.context or {}).get("root"))
    if reason:
        raise problem(Rule.CHECK, reason)
    return check


Topic = Annotated[str, _reader("topic"), AfterValidator(_topic)]
QuestionId = Annotated[str, _reader("id"), AfterValidator(_id)]
Difficulty = Annotated[int, BeforeValidator(_difficulty)]
Prompt = Annotated[str, _reader("prompt", collapse=True), AfterValidator(_prompt)]
ChoiceText = Annotated[str, _reader("choice text", collapse=True), AfterValidator(_choice_text)]
Why = Annotated[str, _reader("why", collapse=True), AfterValidator(_why)]
YesNo = Annotated[bool, BeforeValidator(_yes_no)]
Ref = Annotated[str, _reader("a ref")]


# ---------------------------------------------------------------- the models


class _Entry(BaseModel):
    """A mapping of the schema: its unknown and missing keys worded for an author, reported
    with its own rules and its fields' problems, all at once."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    what: ClassVar[str]

    @classmethod
    def unknown_key(cls, key: str) -> str:
        raise NotImplementedError

    @classmethod
    def missing_key(cls, key: str) -> str:
        raise NotImplementedError

    @classmethod
    def own_rules(cls, value: dict[Any, Any]) -> list[InitErrorDetails]:  # noqa: ARG003 - subclasses read it
        """The rules across this mapping's fields, reported whatever its fields' problems."""
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _all_at_once(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(value, dict):
            raise problem(Rule.MAPPING, f"{cls.what} must be a mapping of keys to values")
        own = cls.own_rules(value)
        try:
            entry = handler(value)
        except ValidationError as exc:
            unknown: list[InitErrorDetails] = []
            missing: list[InitErrorDetails] = []
            inside: list[InitErrorDetails] = []
            for error in exc.errors():
                loc = error["loc"]
                if error["type"] == "extra_forbidden" and len(loc) == 1:
                    unknown.append(_at(loc, Rule.UNKNOWN_KEY, cls.unknown_key(str(loc[0])), error["input"]))
                elif error["type"] == "missing" and len(loc) == 1:
                    missing.append(_at((), Rule.MISSING_KEY, cls.missing_key(str(loc[0])), value))
                else:
                    inside.append(_again(error))
            _refuse([*unknown, *missing, *own, *inside])
        if own:
            _refuse(own)
        return entry


class ChoiceEntry(_Entry):
    """One choice: its text, whether it is the right one, and why it is right or wrong."""

    what = "a choice"
    text: ChoiceText
    why: Why
    correct: YesNo = False

    @classmethod
    def unknown_key(cls, key: str) -> str:
        return f"unknown key '{key}' in a choice (allowed: {', '.join(sorted(CHOICE_KEYS))})"

    @classmethod
    def missing_key(cls, key: str) -> str:
        return (
            "choice is missing 'why' (every choice explains itself)" if key == "why" else f"choice is missing '{key}'"
        )


class QuestionEntry(_Entry):
    """One question of a bank file (or a member's form), as the schema accepts it."""

    what = "a question"
    id: QuestionId
    difficulty: Difficulty
    prompt: Prompt
    choices: tuple[ChoiceEntry, ...]
    trap: Annotated[str | None, _reader("trap", collapse=True)] = None
    explain: Annotated[str | None, _reader("explain", collapse=True)] = None
    demo: Annotated[str | None, _reader("demo", collapse=True), AfterValidator(_demo)] = None
    hint: Annotated[str | None, _reader("hint", collapse=True), AfterValidator(_hint)] = None
    refs: Annotated[tuple[Ref, ...], BeforeValidator(_refs)]
    check: Annotated[str | None, _reader("check"), AfterValidator(_check)] = None

    @classmethod
    def unknown_key(cls, key: str) -> str:
        return f"unknown key '{key}' (allowed: {', '.join(sorted(QUESTION_KEYS))})"

    @classmethod
    def missing_key(cls, key: str) -> str:
        return f"question is missing required key '{key}'"

    @classmethod
    def own_rules(cls, value: dict[Any, Any]) -> list[InitErrorDetails]:
        if "trap" in value or "explain" in value:
            return []
        return [_at((), Rule.TRAP_OR_EXPLAIN, "question needs a 'trap' or an 'explain'", value)]

    @field_validator("choices", mode="wrap")
    @classmethod
    def _choices(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(value, list):
            raise problem(Rule.CHOICES, "choices must be a list")
        count: list[InitErrorDetails] = []
        if not MIN_CHOICES <= len(value) <= MAX_CHOICES:
            sentence = f"a question has {MIN_CHOICES} to {MAX_CHOICES} choices, not {len(value)}"
            count.append(_at((), Rule.CHOICE_COUNT, sentence, value))
        mappings = [(i, c) for i, c in enumerate(value) if isinstance(c, dict)]
        right = sum(_quiet(_yes_no, c.get("correct", False)) is True for _, c in mappings)
        one: list[InitErrorDetails] = []
        if right != 1:
            one.append(_at((), Rule.ONE_CORRECT, f"exactly one choice must be correct; {right} are", value))
        same = list(_same_texts(mappings))
        try:
            entries = handler(value)
        except ValidationError as exc:
            _refuse([*count, *(_again(error) for error in exc.errors()), *same, *one])
        if count or same or one:
            _refuse([*count, *same, *one])
        return entries

    def question(self, topic: str, source: str = "") -> Question:
        """The bank's value of this entry, in `topic`; `source` says where it was read."""
        return Question(
            id=self.id,
            topic=topic,
            difficulty=self.difficulty,
            prompt=self.prompt,
            choices=tuple(Choice(text=c.text, correct=c.correct, why=c.why) for c in self.choices),
            refs=self.refs,
            trap=self.trap,
            explain=self.explain,
            check=self.check,
            demo=self.demo,
            source=source,
            hint=self.hint,
        )


def _same_texts(mappings: Iterable[tuple[int, dict[Any, Any]]]) -> Iterable[InitErrorDetails]:
    """A problem at each choice whose text another choice before it already has."""
    seen: set[str] = set()
    for i, choice in mappings:
        text = _quiet(functools.partial(text_of, what="choice text", collapse=True), choice.get("text"))
        if text is None:
            continue
        if normalise(text) in seen:
            yield _at((i, "text"), Rule.SAME_TEXT, "two choices of this question have the same text", text)
        seen.add(normalise(text))


class BankFile(_Entry):
    """A bank file's top: its topic and the list of its questions. Each question is validated
    on its own (QuestionEntry), so one broken question leaves the others readable."""

    what = "the file"
    topic: Topic
    questions: Annotated[list[Any], BeforeValidator(_questions)]

    @classmethod
    def unknown_key(cls, key: str) -> str:
        return f"unknown top-level key '{key}' (allowed: {', '.join(sorted(TOP_KEYS, reverse=True))})"

    @classmethod
    def missing_key(cls, key: str) -> str:
        return f"the file is missing '{key}'"
