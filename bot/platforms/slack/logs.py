"""Tokens kept out of the log on the Slack side: slack_sdk at DEBUG logs every request's
headers and body (the bot token, message bodies with signed links), Socket Mode every envelope.

`keep_secrets_out()` (called when the Slack adapter is built) holds the Slack libraries'
loggers at INFO whatever the process's level, and redacts what looks like a Slack token or a
signed web link from anything they still log."""

from __future__ import annotations

import re

from bot.platforms.secret_logs import REDACTED, RedactSecrets, hold_libraries, redact_loggers

__all__ = ["REDACTED", "keep_secrets_out", "keep_secrets_out_of_http_logs", "redact"]

# slack_sdk, slack_bolt and the logger our AsyncApp is given ("bolt")
LIBRARIES = ("slack_sdk", "slack_bolt", "slack", "bolt")
_SECRET = re.compile(
    r"\b(?:xox[a-z]|xapp|xoxe(?:\.xox[a-z])?)-[A-Za-z0-9-]+|(?<=/s/)[^\s/|>\"'<]+"
    r"|(?<=[?&]code=)[^\s&\"']+|(?<=[?&]state=)[^\s&\"']+"  # OAuth's redirect: the code and state
)
_FILTER = RedactSecrets(_SECRET)
HTTP_LOGGERS = ("aiohttp.server", "aiohttp.access", "aiohttp.web")


def redact(text: str) -> str:
    """`text` with Slack tokens (xoxb-, xoxp-, xapp-, ...) and signed links' tokens (/s/TOKEN) hidden."""
    return _FILTER.redact(text)


def keep_secrets_out() -> None:
    """Clamp the Slack libraries' loggers to INFO and redact what they log (idempotent)."""
    hold_libraries(LIBRARIES, _FILTER)


def keep_secrets_out_of_http_logs() -> None:
    """Redact what aiohttp logs of a request on Slack's own HTTP port (a malformed request line
    is logged whole: an OAuth redirect's code and state, a signed link) (idempotent)."""
    redact_loggers(HTTP_LOGGERS, _FILTER)
