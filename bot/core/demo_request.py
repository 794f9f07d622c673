"""Validate `/demo` requests from chat before anything runs: names, numbers and bounds."""

from __future__ import annotations

from bot.core.errors import InvalidInput
from bot.core.values import DemoRequest

STRATEGIES = ("none", "block", "sqrt", "selective", "offload")
PRESETS = ("gpt2-small", "gpt2-medium", "gpt2-large", "llama-1b")
# Bounds a chat user may ask for; the worker's own estimate refuses what does not fit.
INT_BOUNDS: dict[str, dict[str, tuple[int, int]]] = {
    "checkpoint": {"layers": (1, 512), "tokens": (1, 65536), "width": (8, 4096), "repeat": (1, 20)},
    "estimate": {"batch": (1, 512), "seq": (1, 131072)},
}
FLOAT_BOUNDS: dict[str, dict[str, tuple[float, float]]] = {"estimate": {"gpu-gib": (1.0, 4096.0)}}
CHOICES: dict[str, dict[str, tuple[str, ...]]] = {
    "checkpoint": {"model": ("blocks", "chain"), "device": ("auto", "cpu", "cuda")},
    "estimate": {"preset": PRESETS},
}


def parse_demo(text: str) -> DemoRequest:
    """`checkpoint layers=16 strategies=none,block` -> the demo module and its CLI arguments."""
    words = text.split()
    if not words or words[0] not in ("checkpoint", "estimate"):
        raise InvalidInput("Say /demo checkpoint [key=value ...] or /demo estimate preset=gpt2-small.")
    name, args = words[0], []
    for word in words[1:]:
        key, sep, value = word.partition("=")
        key = key.lower().replace("_", "-")
        if not sep or not value:
            raise InvalidInput(f"'{word[:40]}' is not key=value (for example layers=16).")
        if key in INT_BOUNDS[name]:
            low, high = INT_BOUNDS[name][key]
            if not value.isdigit() or not low <= int(value) <= high:
                raise InvalidInput(f"{key} must be a whole number from {low} to {high}, not '{value[:20]}'.")
        elif key in FLOAT_BOUNDS.get(name, {}):
            low_f, high_f = FLOAT_BOUNDS[name][key]
            try:
                number = float(value)
            except ValueError:
                number = float("nan")
            if not low_f <= number <= high_f:
                raise InvalidInput(f"{key} must be a number from {low_f:g} to {high_f:g}, not '{value[:20]}'.")
        elif key in CHOICES[name]:
            if value not in CHOICES[name][key]:
                raise InvalidInput(f"{key} must be one of {', '.join(CHOICES[name][key])}, not '{value[:20]}'.")
        elif name == "checkpoint" and key == "strategies":
            unknown = [s for s in value.split(",") if s not in STRATEGIES]
            if unknown:
                raise InvalidInput(f"Unknown strategy '{unknown[0][:20]}'; choose from {', '.join(STRATEGIES)}.")
        else:
            known = sorted(
                [*INT_BOUNDS[name], *FLOAT_BOUNDS.get(name, {}), *CHOICES[name]]
                + (["strategies"] if name == "checkpoint" else [])
            )
            raise InvalidInput(f"Unknown demo setting '{key[:30]}'; use {', '.join(known)}.")
        args += [f"--{key}", value]
    return DemoRequest(module=f"demos.{name}", args=tuple(args))
