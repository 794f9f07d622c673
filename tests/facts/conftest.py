"""Fixtures for every fact test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _restore_logging_tensor_logger() -> Iterator[None]:
    """Checkpoint's debug mode logs operators through the "LoggingTensor" logger and leaves
    it non-propagating at level INFO with extra filters and handlers. pytest then attaches
    its capture handler to it in later tests, which cannot format those records. Any fact
    test may turn debug mode on (test_api does, test_debugging does), so every one puts the
    logger back as it found it."""
    log = logging.getLogger("LoggingTensor")
    state = (log.propagate, log.level, list(log.filters), list(log.handlers))
    yield
    log.propagate, log.level = state[0], state[1]
    log.filters[:] = state[2]
    log.handlers[:] = state[3]
