"""The contract violations seen since the current test began. The fakes record here; a hook
in tests/conftest.py fails the test when any are left at its end."""

from __future__ import annotations

_seen: list[str] = []


def record(violation: str) -> None:
    _seen.append(violation)


def take() -> list[str]:
    """The violations recorded so far, which are then forgotten (a test that plants a bad body
    on purpose takes its own)."""
    found = list(_seen)
    _seen.clear()
    return found


def pending() -> list[str]:
    return list(_seen)
