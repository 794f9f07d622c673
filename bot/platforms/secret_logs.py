"""Secrets kept out of the log: a platform library at DEBUG logs what it sends and receives
(tokens in headers, URLs and bodies; message bodies with signed links). Each adapter names its
libraries' loggers and what its secrets look like; `hold_libraries` clamps those loggers to
INFO whatever the process's level and puts a filter on them that redacts what they still log."""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"


class RedactSecrets(logging.Filter):
    """Rewrites a record whose message matches `pattern` (each match becomes [redacted])."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        super().__init__()
        self.pattern = pattern

    def redact(self, text: str) -> str:
        return self.pattern.sub(REDACTED, text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        # Broad by design: a filter must neither raise nor log; a record whose arguments do not
        # format is left to the handler, which reports it with its traceback.
        except Exception:  # noqa: BLE001
            return True
        clean = self.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def hold_libraries(libraries: tuple[str, ...], secrets: RedactSecrets) -> None:
    """Hold the named libraries' loggers at the process's level but never below INFO (their
    DEBUG lines carry tokens; a quieter process stays as quiet), their children that set a
    level of their own to at least INFO, and put `secrets` on each (idempotent: call again once
    a library has made its loggers)."""
    floor = max(logging.INFO, logging.getLogger().getEffectiveLevel())
    names = set(libraries) | {name for name in logging.root.manager.loggerDict if name.partition(".")[0] in libraries}
    for name in sorted(names):
        logger = logging.getLogger(name)
        if name in libraries:
            logger.setLevel(floor)
        elif logger.level != logging.NOTSET and logger.level < logging.INFO:
            logger.setLevel(logging.INFO)
        if secrets not in logger.filters:
            logger.addFilter(secrets)


def redact_loggers(names: tuple[str, ...], secrets: RedactSecrets) -> None:
    """Put `secrets` on these loggers without changing their level (idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if secrets not in logger.filters:
            logger.addFilter(secrets)
