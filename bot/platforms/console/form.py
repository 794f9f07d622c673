"""/suggest's guided prompts in the console: topic, level, prompt, choices with their whys
(2 to 5), the right one, the trap, an explanation, a reference. The form's state lives in
the console (as a modal's lives in the chat client); the engine sees one complete form."""

from __future__ import annotations

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.values import SuggestionForm


class SuggestForm:
    """One /suggest in progress: which field is asked next, and the answers so far."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.choices: list[str] = []
        self.whys: list[str] = []
        self.field = "topic"

    def ask(self) -> str:
        steps = wording.SUGGEST_STEPS
        if self.field == "topic":
            return steps["topic"].format(topics=", ".join(TOPICS))
        if self.field == "choice":
            done = wording.SUGGEST_DONE_HINT if len(self.choices) >= 2 else ""
            return steps["choice"].format(letter=chr(ord("A") + len(self.choices)), done=done)
        if self.field == "why":
            return steps["why"].format(letter=chr(ord("A") + len(self.choices) - 1))
        return steps[self.field]

    def take(self, text: str) -> bool:
        """Keep one answer; True when the form is complete."""
        order = ["topic", "level", "prompt"]
        if self.field in order:
            self.values[self.field] = text
            self.field = order[order.index(self.field) + 1] if self.field != "prompt" else "choice"
        elif self.field == "choice":
            if text.lower() == "done" and len(self.choices) >= 2:
                self.field = "correct"
            else:
                self.choices.append(text)
                self.field = "why"
        elif self.field == "why":
            self.whys.append(text)
            self.field = "choice" if len(self.choices) < 5 else "correct"
        elif self.field in ("correct", "trap", "explain"):
            self.values[self.field] = "" if text == "-" else text
            self.field = {"correct": "trap", "trap": "explain", "explain": "refs"}[self.field]
        else:
            self.values["refs"] = text
            return True
        return False

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
            refs=(self.values["refs"],) if self.values.get("refs") else (),
        )
