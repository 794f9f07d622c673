"""Members' questions (/suggest): parse a form, check it with the bank's own rules, and turn
an approved one into a bank Question or back into the bank's YAML.

The check hands the form to the bank's schema (bot/core/bank/schema.py's QuestionEntry), the
pydantic model every question of questions/*.yaml meets, so a suggestion meets exactly its rules
(lengths, one right choice, a why on every choice, a reference, the give-away rules); each
problem's location in the model says which field it is about. A few rules are added for text
typed into a chat: upper lengths, no pings, no near-duplicate of a question the community
already has, and a right choice that is not the longest (the bank keeps that under 30% of its
questions, so an exported set must not lean on it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import yaml
from pydantic import ValidationError

from bot.core import bank as rules
from bot.core.bank import Choice, Question, QuestionEntry, Rule
from bot.core.bank.schema import Loc
from bot.core.values import FieldProblem, SuggestionForm, letter

MAX_WHY = 400
MAX_TRAP = 300
MAX_EXPLAIN = 400
MAX_REF = 200
MAX_REFS = 3
LEVEL_WORDS = {"1": 1, "2": 2, "3": 3, "intro": 1, "practitioner": 2, "expert": 3}
ID_PREFIX = "member-"

# Pings: Discord's @everyone/@here and <@id>, <@!id>, <@&role>; Slack's <!channel>, <!here>,
# <!everyone>, <!subteam^ID>, <@U123>; both platforms' <#channel>.
_MENTION_RE = re.compile(r"<(@[!&]?|!|#)([^<>\s]{0,80})>")
_BROADCAST_RE = re.compile(r"@(everyone|here|channel)\b", re.IGNORECASE)


def defuse(text: str) -> str:
    """The text with every mention made plain, so posting it pings nobody."""

    def plain(match: re.Match[str]) -> str:
        sigil, body = match.group(1), match.group(2)
        if sigil == "#":
            return "a channel"
        if sigil == "!":
            word = body.split("^")[0].split("|")[0]
            return word if word in ("channel", "here", "everyone") else "a group"
        return "a role" if sigil == "@&" else "a member"

    return _BROADCAST_RE.sub(lambda m: m.group(1), _MENTION_RE.sub(plain, text))


def _clean(text: str) -> str:
    return " ".join(defuse(text or "").split())


def labels(field: str) -> str:
    """How a member names a field key."""
    if field.startswith("choice_"):
        return f"choice {letter(int(field[7:]))}"
    if field.startswith("why_"):
        return f"why of choice {letter(int(field[4:]))}"
    return {
        "topic": "topic",
        "level": "level",
        "prompt": "prompt",
        "choices": "choices",
        "correct": "right choice",
        "trap": "trap",
        "explain": "explanation",
        "hint": "hint",
        "refs": "reference",
    }.get(field, field)


def _problem(field: str, reason: str) -> FieldProblem:
    return FieldProblem(field, labels(field), reason)


def _shown(question: Question) -> str:
    """A question of the community as a member can recognise it: its prompt (cut) and topic."""
    prompt = question.prompt if len(question.prompt) <= 120 else question.prompt[:117].rstrip() + "..."
    return f'"{prompt}" (topic {question.topic})'


def _same_prompt(prompt: str, existing: Sequence[Question]) -> FieldProblem | None:
    key = rules.normalise(prompt)
    same = next((q for q in existing if key and rules.normalise(q.prompt) == key), None)
    if same is None:
        return None
    return _problem("prompt", f"the community already has this question: {_shown(same)}; ask a different thing")


def field_problems(form: SuggestionForm, field: str, existing: Sequence[Question] = ()) -> tuple[FieldProblem, ...]:
    """The problems of one field just typed (`field`: a FieldProblem key such as `prompt`,
    `choice_1`, `why_1`, `explain`), judged with what was typed before it; fields not typed
    yet are not held against it. The trap-or-explanation rule is the explanation's (asked
    after the trap)."""
    _, problems = check(form, existing)
    either = "give the trap (the misconception"
    if field == "trap":
        return tuple(p for p in problems if p.field == "trap" and not p.reason.startswith(either))
    if field == "explain":
        return tuple(
            _problem("explain", p.reason) if p.field == "trap" and p.reason.startswith(either) else p
            for p in problems
            if p.field == "explain" or (p.field == "trap" and p.reason.startswith(either))
        )
    if field == "choices":  # "done": how many choices there are
        return tuple(p for p in problems if p.field == "choices")
    return tuple(p for p in problems if p.field == field)


def in_first_form(field: str) -> bool:
    """Whether a field is typed in Discord's first form (topic, level, prompt, choices, the right one)."""
    return field in ("topic", "level", "prompt", "choices", "correct") or field.startswith("choice_")


def check(form: SuggestionForm, existing: Sequence[Question] = ()) -> tuple[Question | None, tuple[FieldProblem, ...]]:
    """The question a form describes, or the problems that refuse it (each with its field).
    `existing`: the community's questions, for the duplicate rules."""
    typed = _Typed.of(form)
    question, bank_problems = typed.bank_check()
    problems = [*typed.chat_problems(), *bank_problems]
    same = _same_prompt(typed.prompt, existing)
    if same is not None:
        problems.append(same)
    if problems or question is None:
        return None, _unique(problems)
    if rules.correct_is_longest(question):
        problems.append(
            _problem(
                typed.field(("choices", question.answer_index)),
                "the right choice is the longest one, which gives it away; make a wrong choice at least as long",
            )
        )
    for _, a, b in rules.near_duplicates([*existing, question]):
        other = a if b is question else b if a is question else None
        if other is not None:
            problems.append(
                _problem(
                    "prompt",
                    f"it asks nearly what the community's question {_shown(other)} asks; ask a different thing",
                )
            )
            break
    if problems:
        return None, _unique(problems)
    return question, ()


@dataclass(frozen=True)
class _Typed:
    """A form as the bank's schema reads it: cleaned of pings and extra spaces, its choices
    paired with their whys (`pairs`: the form's position, the text, the why)."""

    topic: str
    level: int | None
    prompt: str
    pairs: tuple[tuple[int, str, str], ...]
    answer: int | None
    trap: str
    explain: str
    hint: str
    refs: tuple[str, ...]

    @classmethod
    def of(cls, form: SuggestionForm) -> _Typed:
        pairs: list[tuple[int, str, str]] = []
        for i in range(max(len(form.choices), len(form.whys))):
            text = _clean(form.choices[i]) if i < len(form.choices) else ""
            why = _clean(form.whys[i]) if i < len(form.whys) else ""
            if text or why:
                pairs.append((i, text, why))
        correct = _clean(form.correct)
        if len(correct) == 1 and correct.lower() in "abcde":
            answer: int | None = "abcde".index(correct.lower())
        else:
            key = rules.normalise(correct)
            answer = next((i for i, text, _ in pairs if text and rules.normalise(text) == key), None)
        return cls(
            topic=_clean(form.topic).lower(),
            level=LEVEL_WORDS.get(_clean(form.level).lower()),
            prompt=_clean(form.prompt),
            pairs=tuple(pairs),
            answer=answer if answer in [i for i, _, _ in pairs] else None,
            trap=_clean(form.trap),
            explain=_clean(form.explain),
            hint=_clean(form.hint),
            refs=tuple(r for r in (_clean(ref) for ref in form.refs) if r),
        )

    def chat_problems(self) -> list[FieldProblem]:
        """The rules for text typed into a chat, beyond the bank's own."""
        problems: list[FieldProblem] = []
        if self.topic not in rules.TOPICS:
            reason = f"'{self.topic[:40]}' is not a topic; choose one of: {', '.join(rules.TOPICS)}"
            problems.append(_problem("topic", reason))
        if self.level is None:
            problems.append(_problem("level", "the level must be 1 (intro), 2 (practitioner) or 3 (expert)"))
        problems += [
            _problem(f"choice_{i}", "a why is given but the choice's text is empty")
            for i, text, _ in self.pairs
            if not text
        ]
        if self.answer is None:
            problems.append(_problem("correct", "say which choice is right by its letter (A-E) or its text"))
        return problems + self._length_problems()

    def _length_problems(self) -> list[FieldProblem]:
        """The upper lengths of text typed into a chat (the bank's own are the schema's)."""
        problems: list[FieldProblem] = []
        for field, text, limit in (("trap", self.trap, MAX_TRAP), ("explain", self.explain, MAX_EXPLAIN)):
            if len(text) > limit:
                problems.append(_problem(field, f"is {len(text)} characters; the limit is {limit}"))
        for i, _, why in self.pairs:
            if len(why) > MAX_WHY:
                problems.append(_problem(f"why_{i}", f"is {len(why)} characters; the limit is {MAX_WHY}"))
        if len(self.refs) > MAX_REFS:
            problems.append(_problem("refs", f"give at most {MAX_REFS} references, not {len(self.refs)}"))
        for ref in self.refs:
            if len(ref) > MAX_REF:
                problems.append(_problem("refs", f"a reference is {len(ref)} characters; the limit is {MAX_REF}"))
        return problems

    def entry(self) -> dict[str, object]:
        """The form as a question of a bank file (a valid placeholder where the chat's own rules
        already refused a field), for the schema to validate."""
        entry: dict[str, object] = {
            "id": "suggested-question",
            "difficulty": self.level or 2,
            "prompt": self.prompt,
            "choices": [
                {"text": text, "correct": i == self.answer, "why": why or "x" * rules.MIN_WHY}
                for i, text, why in self.pairs
            ],
            "refs": list(self.refs),
        }
        for key, text in (("trap", self.trap), ("explain", self.explain), ("hint", self.hint)):
            if text:
                entry[key] = text
        return entry

    def bank_check(self) -> tuple[Question | None, list[FieldProblem]]:
        """The question, or the problems the bank's own rules (the schema's and the give-aways)
        find, each at the field it is about."""
        problems = [
            _problem(f"why_{i}", "every choice needs a why: say why it is right or wrong")
            for i, _, why in self.pairs
            if not why
        ]
        topic = self.topic if self.topic in rules.TOPICS else "fundamentals"
        try:
            question = QuestionEntry.model_validate(self.entry()).question(topic)
        except ValidationError as exc:
            for error in sorted(exc.errors(), key=lambda error: _order(tuple(error["loc"]))):
                reworded = self._reworded(error["type"], error["msg"], tuple(error["loc"]))
                if reworded is not None:
                    problems.append(reworded)
            return None, problems
        problems += [_problem(self.field(loc), reason) for loc, reason in rules.style_problems(question)]
        return (None if problems else question), problems

    def _reworded(self, rule: str, reason: str, loc: Loc) -> FieldProblem | None:
        """A problem of the schema as a member reads it, at the field they typed; None where the
        chat's own rules already said it."""
        if rule == Rule.ONE_CORRECT:
            return None if self.answer is None else _problem("correct", "exactly one choice must be right")
        if rule == Rule.TRAP_OR_EXPLAIN:
            reason = "give the trap (the misconception that makes people pick wrong) or an explanation"
        elif rule == Rule.REFS:
            reason = "give at least one reference a reader can open (a document's name or a link)"
        return _problem(self.field(loc), reason)

    def field(self, loc: Loc) -> str:
        """The form's field a schema location is in: ("choices", 1, "why") is the why of the
        second choice typed (its position in the form: blank choices are left out)."""
        if not loc:
            return "trap"  # the question itself: its trap-or-explanation rule, a folded line
        index = loc[1] if loc[0] == "choices" and len(loc) > 1 else None
        if isinstance(index, int):
            at = self.pairs[index][0]
            part = loc[2] if len(loc) > 2 else "text"
            return "correct" if part == "correct" else f"why_{at}" if part == "why" else f"choice_{at}"
        return _FIELDS.get(str(loc[0]), "prompt")


# A form's field by the schema's name of it (the question's own key).
_FIELDS = {
    "difficulty": "level",
    "prompt": "prompt",
    "choices": "choices",
    "trap": "trap",
    "explain": "explain",
    "hint": "hint",
    "refs": "refs",
}
# The order a form's problems are told in: the question's own rules, then its fields as a bank
# file writes them (a choice's text, whether it is right, its why).
_ORDER = ("", "difficulty", "prompt", "choices", "trap", "explain", "hint", "refs")
_CHOICE_ORDER = ("text", "correct", "why")


def _order(loc: Loc) -> tuple[int, int, int]:
    head = str(loc[0]) if loc else ""
    rank = _ORDER.index(head) if head in _ORDER else len(_ORDER)
    index = loc[1] if head == "choices" and len(loc) > 1 else None
    if not isinstance(index, int):
        return rank, -1, 0
    part = str(loc[2]) if len(loc) > 2 else "text"
    return rank, index, _CHOICE_ORDER.index(part) if part in _CHOICE_ORDER else 0


def _unique(problems: list[FieldProblem]) -> tuple[FieldProblem, ...]:
    return tuple(dict.fromkeys(problems))


def question_id(suggestion_id: int, prompt: str) -> str:
    """A bank id for an approved suggestion: unique by its number, readable by its words."""
    words = re.findall(r"[a-z0-9]+", prompt.lower())
    slug = "-".join(words)[:40].strip("-")
    return f"{ID_PREFIX}{suggestion_id}-{slug}".strip("-")[:60].rstrip("-")


def to_body(question: Question) -> str:
    return json.dumps(
        {
            "difficulty": question.difficulty,
            "prompt": question.prompt,
            "choices": [{"text": c.text, "correct": c.correct, "why": c.why} for c in question.choices],
            "trap": question.trap,
            "explain": question.explain,
            "hint": question.hint,
            "refs": list(question.refs),
        }
    )


def from_body(qid: str, topic: str, body: str, source: str = "") -> Question:
    data = json.loads(body)
    return Question(
        id=qid,
        topic=topic,
        difficulty=int(data["difficulty"]),
        prompt=data["prompt"],
        choices=tuple(Choice(c["text"], bool(c["correct"]), c["why"]) for c in data["choices"]),
        refs=tuple(data["refs"]),
        trap=data.get("trap"),
        explain=data.get("explain"),
        hint=data.get("hint"),
        source=source,
    )


def dump_yaml(topic: str, questions: Sequence[tuple[Question, str]]) -> str:
    """A bank file (questions/TOPIC.yaml format) of (question, author) pairs."""
    entries = []
    for question, _ in questions:
        entry: dict[str, object] = {
            "id": question.id,
            "difficulty": question.difficulty,
            "prompt": question.prompt,
            "choices": [
                {"text": c.text, "correct": True, "why": c.why} if c.correct else {"text": c.text, "why": c.why}
                for c in question.choices
            ],
        }
        if question.trap:
            entry["trap"] = question.trap
        if question.explain:
            entry["explain"] = question.explain
        if question.hint:
            entry["hint"] = question.hint
        entry["refs"] = list(question.refs)
        entries.append(entry)
    authors = ", ".join(dict.fromkeys(author for _, author in questions))
    authors = " ".join(authors.split())
    head = f"# Members' questions, approved by the community's admins (authors: {authors}).\n"
    body = yaml.safe_dump({"topic": topic, "questions": entries}, sort_keys=False, allow_unicode=True, width=100)
    return head + body


def form_body(form: SuggestionForm) -> str:
    """Discord's first form, kept as a draft until the second completes it (with what a
    refused second form had, so that it opens again filled in)."""
    return json.dumps(
        {
            "topic": form.topic[:100],
            "level": form.level[:20],
            "prompt": form.prompt[:1000],
            "choices": [c[:200] for c in form.choices[:5]],
            "correct": form.correct[:200],
            "whys": [w[:1000] for w in form.whys[:5]],
            "trap": form.trap[:1000],
            "explain": form.explain[:1000],
            "hint": form.hint[:1000],
            "refs": [r[:300] for r in form.refs[:5]],
        }
    )


def draft_form(body: str) -> SuggestionForm:
    """A draft as the form that was typed (drafts from before the second form's fields were
    kept have none of them)."""
    data = json.loads(body)
    return SuggestionForm(
        topic=data["topic"],
        level=data["level"],
        prompt=data["prompt"],
        choices=tuple(data["choices"]),
        whys=tuple(data.get("whys") or ()),
        correct=data["correct"],
        trap=data.get("trap") or "",
        explain=data.get("explain") or "",
        hint=data.get("hint") or "",
        refs=tuple(data.get("refs") or ()),
    )


def merge_draft(body: str, rest: SuggestionForm) -> SuggestionForm:
    """A draft's first form with the second's whys, trap, explanation and references."""
    data = json.loads(body)
    return SuggestionForm(
        topic=data["topic"],
        level=data["level"],
        prompt=data["prompt"],
        choices=tuple(data["choices"]),
        whys=rest.whys,
        correct=data["correct"],
        trap=rest.trap,
        explain=rest.explain,
        refs=rest.refs,
        hint=rest.hint,
    )
