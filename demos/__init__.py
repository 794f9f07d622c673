"""Measured PyTorch demos for the Checkpoint Study Bot.

Run from the repository root with only torch installed (matplotlib is optional and
used only for charts):

    python -m demos.checkpoint --json
    python -m demos.estimate --preset gpt2-small --json

Nothing in this package imports the bot.
"""

from __future__ import annotations

__all__ = ["budget", "chart", "checkpoint", "errors", "estimate", "hf", "memory", "models", "strategies", "traced"]
