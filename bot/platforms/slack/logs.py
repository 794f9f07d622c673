"""Tokens kept out of the log on the Slack side: slack_sdk at DEBUG logs every request's
headers and body (the bot token, message bodies with signed links), Socket Mode every envelope.

`keep_secrets_out()` (called when the Slack adapter is built) holds the Slack libraries'
loggers at INFO whatever the process's level, and redacts what looks like a Slack token or a
signed web link from anything they still log."""

from __future__ import annotations

import logging
import re

# slack_sdk, slack_bolt and the logger our AsyncApp is given ("bolt")
LIBRARIES = ("slack_sdk", "slack_bolt", "slack", "bolt")
_SECRET = re.compile(
    r"\b(?:xox[a-z]|xapp|xoxe(?:\.xox[a-z])?)-[A-Za-z0-9-]+|(?<=/s/)[^\s/|>\"'<]+"
    r"|(?<=[?&]code=)[^\s&\"']+|(?<=[?&]state=)[^\s&\"']+"  # OAuth's redirect: the code and state
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """`text` with Slack tokens (xoxb-, xoxp-, xapp-, ...) and signed links' tokens (/s/TOKEN) hidden."""
    return _SECRET.sub(REDACTED, text)


class Redact(logging.Filter):
    """Rewrites a record whose message holds a token or a signed link."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: leave it to the handler
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = Redact()


def keep_secrets_out() -> None:
    """Clamp the Slack libraries' loggers to INFO and redact what they log (idempotent)."""
    names = set(LIBRARIES) | {
        name for name in logging.root.manager.loggerDict if name.partition(".")[0] in LIBRARIES
    }
    for name in sorted(names):
        logger = logging.getLogger(name)
        if logger.level < logging.INFO and (logger.level != logging.NOTSET or name in LIBRARIES):
            logger.setLevel(logging.INFO)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


HTTP_LOGGERS = ("aiohttp.server", "aiohttp.access", "aiohttp.web")


def keep_secrets_out_of_http_logs() -> None:
    """Redact what aiohttp logs of a request on Slack's own HTTP port (a malformed request line
    is logged whole: an OAuth redirect's code and state, a signed link) (idempotent)."""
    for name in HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
