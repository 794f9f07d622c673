"""Errors a user may be told about. Anything else is a bug: logged, and answered with an id."""

from __future__ import annotations


class StudyBotError(Exception):
    """An error whose message is written for the user who caused it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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


class SendFailed(Exception):
    """A platform could not deliver a post. `permanent`: trying again cannot help (an unknown
    channel, a missing permission); otherwise it is retried, after `retry_after` seconds when
    the platform said so (a rate limit)."""

    def __init__(self, reason: str, permanent: bool = False, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.retry_after = retry_after
