"""A community's settings as /config shows them, and /forget-me's confirmation and result."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfirmForget:
    """Ask the user to confirm before anything is deleted."""

    user: str
    answers: int


@dataclass(frozen=True)
class Forgotten:
    """What `forget me` deleted."""

    user: str
    answers_deleted: int


@dataclass(frozen=True)
class ConfigCard:
    """A community's settings as /config shows them, with what changed and what needs an admin."""

    community: str
    settings: tuple[tuple[str, str], ...]
    changed: str | None = None
    alerts: tuple[str, ...] = ()  # what an admin should know: posts that could not be delivered
    link: str | None = None  # a signed, expiring link to the community's admin page
