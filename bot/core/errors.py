"""Errors a member may be told about: the user-facing branch of the bot's one hierarchy
(bot/errors.py). Anything that is not a BotError is a bug: logged, and answered with an id."""

from __future__ import annotations

from bot.errors import BotError, SendFailed

__all__ = ["BankError", "InvalidInput", "NotFound", "SendFailed", "StoreUnavailable", "StudyBotError"]


class StudyBotError(BotError):
    """An error whose message is written for the user who caused it."""


class InvalidInput(StudyBotError):
    """The user's input cannot be used (unknown option, bad value, too long)."""


class NotFound(StudyBotError):
    """The thing asked for does not exist in this community."""


class StoreUnavailable(StudyBotError):
    """The database is locked, read-only or unreachable; nothing was changed."""


class BankError(StudyBotError):
    """The question bank is broken; `problems` holds every `path:line: message`."""

    def __init__(self, problems: list[str]) -> None:
        count = len(problems)
        head = f"The question bank has {count} problem{'s' if count != 1 else ''}"
        super().__init__(head + ":\n" + "\n".join(problems))
        self.problems = problems
