"""What one demo run measured: a result per strategy, the theory's prediction, the report
(its JSON is what the bot reads). Plain values, shared by the run and its charts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from demos.memory import Timeline


@dataclass(frozen=True)
class StrategyResult:
    """One strategy's measured step: its peak, the bytes saved, its time, and whether grads match."""

    strategy: str
    peak_bytes: int
    peak_check_bytes: int | None
    saved_bytes: int
    step_ms: float
    grads_identical: bool
    estimate_bytes: int | None = None
    reserved_bytes: int | None = None
    layers: int | None = None
    label: str = ""
    budget: float | None = None
    grad_max_diff: float = 0.0
    estimate_error_pct: float | None = None
    meter: str = ""
    timeline: Timeline | None = None
    #: Step time: ``step_ms`` is the median of the timed repeats, ``step_ms_runs`` every one of
    #: them, ``step_ms_spread`` their [low, high] (the interquartile range from 4 repeats, the
    #: smallest and largest below that, ``step_ms_spread_kind`` "iqr" or "min-max"; null for a
    #: single repeat) and ``step_ms_wide`` whether that spread exceeds WIDE_SPREAD of the median.
    step_ms_runs: tuple[float, ...] = ()
    step_ms_spread: tuple[float, float] | None = None
    step_ms_spread_kind: str = ""
    step_ms_wide: bool = False


@dataclass(frozen=True)
class Theory:
    """What O(N) and O(sqrt N) predict, from a per-layer activation size a and input b."""

    per_layer_bytes: int
    layer_input_bytes: int
    segments: int
    predicted: dict[str, int]
    text: str


@dataclass(frozen=True)
class DemoReport:
    """A demo run's report: the machine, the model and each strategy's results."""

    device: str
    torch: str
    model: str
    layers: int
    tokens: int
    width: int
    dtype: str
    threads: int
    params_bytes: int
    input_bytes: int
    results: list[StrategyResult]
    theory: Theory | None
    wall_s: float
    sweep: list[int] = field(default_factory=list)
    chart: str | None = None
    meters: dict[str, str] = field(default_factory=dict)
    heads: int = 0
    batch: int = 1
    charts: dict[str, str] = field(default_factory=dict)
    estimate_kernels: str = ""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.sweep:
            del out["sweep"]
        if self.chart is None:
            del out["chart"]
        if not self.charts:
            del out["charts"]
        return out

    def result(self, strategy: str, layers: int | None = None, budget: float | None = None) -> StrategyResult:
        for r in self.results:
            if (
                r.strategy == strategy
                and (layers is None or r.layers == layers)
                and (budget is None or r.budget == budget)
            ):
                return r
        raise KeyError(strategy)


def fake_start_event() -> dict[str, Any]:
    """The worker's first progress line for a demo that traces with fake tensors (the estimate,
    the planner): one step, nothing allocated, the torch and threads it runs with."""
    return {
        "event": "start",
        "total": 1,
        "device": "fake tensors (nothing allocated)",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
