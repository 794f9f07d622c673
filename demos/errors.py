"""The one error the demos' command lines refuse a request with."""

from __future__ import annotations


class BadInput(ValueError):
    """A request the CLI refuses; the message is one sentence for the user."""
