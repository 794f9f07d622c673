"""Plain sentences for a member: a hint or confirmation, and a failed request's apology."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Notice:
    """A plain sentence for the user (a hint, a confirmation)."""

    text: str


@dataclass(frozen=True)
class Problem:
    """What a user is told when their request failed: a StudyBotError's own sentence, or an
    apology with the incident id under which the traceback was logged."""

    text: str
    incident: str | None = None
