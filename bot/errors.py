"""The bot's exceptions in one hierarchy, as discord.py keeps its own in one errors module. Every
error the bot raises on purpose is a `BotError` carrying one sentence (`message`); its branch
says who reads it and so where it goes:

- `StudyBotError` (bot/core/errors.py: InvalidInput, NotFound, StoreUnavailable, BankError): for
  the member whose input caused it; the platform shows it to them privately.
- `OperatorError`: for whoever runs the bot: a setting (SettingsError), a launch problem
  (LaunchError), a platform refusing a token (PlatformRefused); the CLI prints it and exits.
- `WorkerFailure`: a demo or an FSRS fit that did not finish on the worker (DemoFailure,
  FitFailure); its sentence goes to whoever asked.
- `DeliveryError`: a post a platform did not take (SendFailed); the outbox retries it or gives
  up and tells the admins.

This module imports nothing, so the worker host (which never loads bot.core) can use it.
Anything that is not a BotError is a bug: logged with its traceback, answered with an id."""

from __future__ import annotations


class BotError(Exception):
    """An error the bot raises on purpose, with one sentence for whoever reads it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def sentence(self) -> str:
        return self.message


class OperatorError(BotError):
    """For the person running the bot: what to set or start, in one sentence."""


class WorkerFailure(BotError):
    """Work that did not finish on the demo worker (a demo, a fit), said for whoever asked."""


class DeliveryError(BotError):
    """A platform did not take a post."""


class SendFailed(DeliveryError):
    """A platform could not deliver a post. `permanent`: trying again cannot help (an unknown
    channel, a missing permission); otherwise it is retried, after `retry_after` seconds when
    the platform said so (a rate limit)."""

    def __init__(self, reason: str, permanent: bool = False, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent
        self.retry_after = retry_after
