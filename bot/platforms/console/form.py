"""/suggest's guided prompts in the console: topic, level, prompt, choices with their whys
(2 to 5), the right one, the trap, an explanation, a hint, a reference. The form's state lives
in the console (as a modal's lives in the chat client). Each field is checked by the engine as
it is typed (a bad one is asked again, the others kept); the last sends the whole form, and a
refused form keeps what was typed and asks again only for the fields refused."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.bank import TOPICS
from bot.core.values import FieldProblem, SuggestionForm, letter
from bot.platforms.console.text import SUGGEST_DONE_HINT, SUGGEST_STEPS

MAX_CHOICES = 5
SKIPPABLE = ("trap", "explain", "hint")  # "-" leaves them empty


class SuggestForm:
    """One /suggest in progress: the field asked now (a FieldProblem key: `prompt`,
    `choice_1`, `why_1`...), the answers so far, and the fields a refusal asks again."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.choices: list[str] = []
        self.whys: list[str] = []
        self.field = "topic"
        self.fixing: list[str] = []  # after a refusal: the fields still to ask again

    def ask(self) -> str:
        steps = SUGGEST_STEPS
        if self.field == "topic":
            return steps["topic"].format(topics=", ".join(TOPICS))
        if self.field.startswith("choice_"):
            i = int(self.field[7:])
            done = SUGGEST_DONE_HINT if i >= 2 and not self.fixing else ""
            return steps["choice"].format(letter=letter(i), done=done)
        if self.field.startswith("why_"):
            return steps["why"].format(letter=letter(int(self.field[4:])))
        return steps[self.field]

    def take(self, text: str) -> str | None:
        """Keep one answer in its place; the field to check now, or None (`done`: the choices end)."""
        field = self.field
        for prefix, items in (("choice_", self.choices), ("why_", self.whys)):
            if field.startswith(prefix):
                i = int(field[len(prefix) :])
                if prefix == "choice_" and text.strip().lower() == "done" and i >= 2 and not self.fixing:
                    del self.choices[i:], self.whys[i:]  # a refused one asked again goes too
                    return None
                if i < len(items):
                    items[i] = text
                else:
                    items.append(text)
                return field
        self.values[field] = "" if field in SKIPPABLE and text.strip() == "-" else text
        return field

    def advance(self, checked: str | None) -> bool:
        """Go on to the next field; True when the form is complete (to be sent)."""
        if self.fixing:
            self.fixing.pop(0)
            if not self.fixing:
                return True
            self.field = self.fixing[0]
            return False
        if checked is None:  # done with the choices
            self.field = "correct"
            return False
        if checked.startswith("choice_"):
            self.field = f"why_{checked[7:]}"
        elif checked.startswith("why_"):
            i = int(checked[4:]) + 1
            self.field = f"choice_{i}" if i < MAX_CHOICES else "correct"
        else:
            order = ["topic", "level", "prompt", "choice_0", "correct", "trap", "explain", "hint", "refs"]
            if checked == "refs":
                return True
            self.field = order[order.index(checked) + 1]
        return False

    def refused(self, problems: Iterable[FieldProblem]) -> list[str]:
        """A refused form: ask again for its fields only (in the form's order); their labels."""
        order = ["topic", "level", "prompt"]
        for i in range(len(self.choices)):
            order += [f"choice_{i}", f"why_{i}"]
        order += ["correct", "trap", "explain", "hint", "refs"]
        wanted = {self._asked(p.field) for p in problems}
        self.fixing = [field for field in order if field in wanted]
        if not self.fixing:
            self.fixing = ["prompt"]
        self.field = self.fixing[0]
        labels = {p.field: p.label for p in problems}
        return [labels.get(field, field) for field in self.fixing]

    def _asked(self, field: str) -> str:
        """Which prompt answers a problem's field (the choices' count: the last choice)."""
        if field == "choices":
            return f"choice_{max(len(self.choices) - 1, 0)}"
        return field

    def value(self) -> SuggestionForm:
        return SuggestionForm(
            topic=self.values.get("topic", ""),
            level=self.values.get("level", ""),
            prompt=self.values.get("prompt", ""),
            choices=tuple(self.choices),
            whys=tuple(self.whys),
            correct=self.values.get("correct", ""),
            trap=self.values.get("trap", ""),
            explain=self.values.get("explain", ""),
            hint=self.values.get("hint", ""),
            refs=(self.values["refs"],) if self.values.get("refs") else (),
        )
