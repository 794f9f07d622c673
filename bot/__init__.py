"""Checkpoint Study Bot: a study bot for gradient (activation) checkpointing."""

from __future__ import annotations

__version__ = "0.2.0"
