"""The fake-traced step's figures (kept apart so the demo imports no fake-tensor code to name them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TracedStep:
    """Fake-traced forward+backward of a demo model (bytes above params and input)."""

    strategy: str
    peak_bytes: int
    saved_bytes: int
    flops: int
    params_bytes: int
    input_bytes: int
