"""Tokens kept out of the log on the Discord side: discord.py at DEBUG logs every HTTP
request's URL and JSON body (an interaction's callback and follow-up URLs carry its token; a
/score reply carries a signed web link) and every gateway event (an INTERACTION_CREATE holds
the interaction's token).

`keep_secrets_out()` (called when the Discord adapter is built) holds discord.py's loggers at
INFO whatever the process's level, and redacts a bot token, an interaction or webhook token and
a signed link's token from anything they still log."""

from __future__ import annotations

import re

from bot.platforms.secret_logs import RedactSecrets, hold_libraries

LIBRARIES = ("discord",)
_SECRET = re.compile(
    r"[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}"  # a bot token
    r"|(?<=/interactions/)[0-9]+/[^/\s\"']+|(?<=/webhooks/)[0-9]+/[^/\s\"'?]+"  # callback, follow-ups
    r"|(?<=\"token\": \")[^\"]+|(?<='token': ')[^']+"  # a gateway event's token field
    r"|(?<=/s/)[^\s/|>\"'<]+"  # a signed web link
)
_FILTER = RedactSecrets(_SECRET)


def redact(text: str) -> str:
    """`text` with Discord tokens and signed links' tokens hidden."""
    return _FILTER.redact(text)


def keep_secrets_out() -> None:
    """Clamp discord.py's loggers to INFO and redact what they log (idempotent)."""
    hold_libraries(LIBRARIES, _FILTER)
