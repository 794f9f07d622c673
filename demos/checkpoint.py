"""Measured peak memory and step time with and without activation checkpointing.

    python -m demos.checkpoint [--model blocks|chain] [--layers N] [--tokens T]
        [--width D] [--strategies none,block,sqrt,selective,offload]
        [--device auto|cpu|cuda] [--repeat K] [--json] [--chart PATH]
        [--sweep 4,16,64,256]

For every strategy one instrumented step (forward + backward, seeded, gradients set to
``None`` first) gives the memory figures and the gradients, then ``K`` plain steps give
the median step time. Memory figures are bytes above what existed before the step
(parameters and input), and include the parameter gradients the step creates:

- ``peak_bytes``: on CUDA ``max_memory_allocated()`` minus the pre-step baseline; on CPU
  the live-tensor meter (:class:`demos.memory.LiveTensorMeter`).
- ``peak_check_bytes``: an independent second method. On CPU the allocator's own
  allocation events recorded by ``torch.profiler`` (profile_memory=True), replayed; on
  CUDA the live-tensor meter.
- ``saved_bytes``: bytes still live at the end of the forward pass, i.e. what the graph
  keeps for backward (plus the scalar loss).
- ``reserved_bytes`` (CUDA only): ``max_memory_reserved()``.
- ``grads_identical``: every parameter gradient ``torch.equal`` to the ``none`` run's.

Bad input gets one sentence on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
from torch import nn

from demos.estimate import BadInput, TracedStep, trace_demo_step
from demos.memory import BACKWARD, LiveTensorMeter, cuda_step_memory, profiler_allocations
from demos.models import MODEL_KINDS, build_model, parameter_bytes, segments_for
from demos.strategies import CUDA_ONLY, STRATEGIES, MatmulSavePolicy, loss_of, make_forward

log = logging.getLogger(__name__)

DEFAULT_STRATEGIES = ("none", "block", "sqrt", "selective")
DEFAULT_SWEEP = (4, 16, 64, 256)
MAX_LAYERS = 4096
MAX_TOKENS = 1 << 20
MAX_WIDTH = 16384
MAX_REPEAT = 100
#: Refuse a request whose estimated run time exceeds this many seconds.
DEFAULT_TIME_BUDGET_S = 120.0
#: Assumed sustained float32 throughput for the time budget (FLOP/s).
ASSUMED_FLOPS = {"cpu": 2.0e10, "cuda": 5.0e12}
MIB = 1024**2


@dataclass(frozen=True)
class DemoConfig:
    model: str = "blocks"
    layers: int = 16
    tokens: int = 2048
    width: int = 128
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    device: str = "cpu"
    repeat: int = 3
    seed: int = 0
    sweep: tuple[int, ...] = ()
    chart: str | None = None
    json: bool = False
    time_budget_s: float = DEFAULT_TIME_BUDGET_S
    progress: bool = False


@dataclass(frozen=True)
class StrategyResult:
    strategy: str
    peak_bytes: int
    peak_check_bytes: int
    saved_bytes: int
    step_ms: float
    grads_identical: bool
    estimate_bytes: int | None = None
    reserved_bytes: int | None = None
    layers: int | None = None


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

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.sweep:
            del out["sweep"]
        if self.chart is None:
            del out["chart"]
        return out

    def result(self, strategy: str, layers: int | None = None) -> StrategyResult:
        for r in self.results:
            if r.strategy == strategy and (layers is None or r.layers == layers):
                return r
        raise KeyError(strategy)


# -- parsing -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(message[0].upper() + message[1:].rstrip(".") + ".")


def _int(name: str, text: str, low: int, high: int) -> int:
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise BadInput(f"{name} must be a whole number, not {text!r}.") from None
    if not low <= value <= high:
        raise BadInput(f"{name} must be between {low:,} and {high:,}, not {value:,}.")
    return value


def parse_args(argv: Sequence[str] | None) -> DemoConfig:
    """Validate the command line; raises :class:`BadInput` with one sentence."""
    p = _Parser(
        prog="python -m demos.checkpoint",
        add_help=True,
        description="Peak memory and step time with and without checkpointing.",
    )
    p.add_argument("--model", default="blocks")
    p.add_argument("--layers", default=None)
    p.add_argument("--tokens", default="2048")
    p.add_argument("--width", default="128")
    p.add_argument("--strategies", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--repeat", default="3")
    p.add_argument("--seed", default="0")
    p.add_argument("--sweep", default=None)
    p.add_argument("--chart", default=None)
    p.add_argument("--time-budget", default=str(DEFAULT_TIME_BUDGET_S))
    p.add_argument("--json", action="store_true")
    p.add_argument("--progress", action="store_true", help="JSON lines: start, one per strategy, then the result")
    a = p.parse_args(list(argv) if argv is not None else None)

    if a.model not in MODEL_KINDS:
        raise BadInput(f"Unknown model {a.model!r}; choose blocks or chain.")
    sweep: tuple[int, ...] = ()
    if a.sweep is not None:
        parts = [s for s in a.sweep.split(",") if s.strip()] or [""]
        sweep = tuple(_int("every --sweep depth", s.strip(), 1, MAX_LAYERS) for s in parts)
    layers = _int("--layers", a.layers, 1, MAX_LAYERS) if a.layers is not None else 16
    tokens = _int("--tokens", a.tokens, 1, MAX_TOKENS)
    width = _int("--width", a.width, 1, MAX_WIDTH)
    repeat = _int("--repeat", a.repeat, 1, MAX_REPEAT)
    seed = _int("--seed", a.seed, 0, 2**31 - 1)
    try:
        budget = float(a.time_budget)
    except ValueError:
        raise BadInput(f"--time-budget must be a number of seconds, not {a.time_budget!r}.") from None
    if not 0 < budget < 1e6:
        raise BadInput(f"--time-budget must be a positive number of seconds, not {a.time_budget}.")

    if a.strategies is None:
        strategies = ("none", "sqrt") if sweep else DEFAULT_STRATEGIES
    else:
        names = [s.strip() for s in a.strategies.split(",") if s.strip()]
        unknown = [s for s in names if s not in STRATEGIES]
        if unknown or not names:
            raise BadInput(f"Unknown strategy {(unknown or [a.strategies])[0]!r}; choose from {', '.join(STRATEGIES)}.")
        strategies = tuple(dict.fromkeys(["none", *names]))  # "none" is the baseline

    if a.device not in ("auto", "cpu", "cuda"):
        raise BadInput(f"Unknown device {a.device!r}; choose auto, cpu or cuda.")
    has_cuda = torch.cuda.is_available()
    if a.device == "cuda" and not has_cuda:
        raise BadInput("--device cuda needs an NVIDIA GPU, and none is available here.")
    device = ("cuda" if has_cuda else "cpu") if a.device == "auto" else a.device
    needs_cuda = [s for s in strategies if s in CUDA_ONLY]
    if needs_cuda and device != "cuda":
        raise BadInput(f"The {needs_cuda[0]} strategy needs a CUDA GPU, and this run is on the CPU.")
    return DemoConfig(
        model="chain" if sweep else a.model,
        layers=layers,
        tokens=tokens,
        width=width,
        strategies=strategies,
        device=device,
        repeat=repeat,
        seed=seed,
        sweep=sweep,
        chart=a.chart,
        json=a.json,
        progress=a.progress,
        time_budget_s=budget,
    )


# -- bounds: the estimate decides ----------------------------------------------------


def free_bytes(device: str) -> int:
    """Memory this worker may still use on ``device``."""
    if device == "cuda":
        free, _total = torch.cuda.mem_get_info()
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def estimate_none_step(kind: str, layers: int, tokens: int, width: int) -> TracedStep:
    """The fake-traced ``none`` step; deep stacks are extrapolated from 2 and 4 layers.

    Every layer of a stack is the same, so bytes and FLOPs grow linearly with depth;
    extrapolating keeps the check fast (a 4,096-layer trace would take seconds).
    """
    if layers <= 8:
        return trace_demo_step(kind, layers, tokens, width, "none")
    two = trace_demo_step(kind, 2, tokens, width, "none")
    four = trace_demo_step(kind, 4, tokens, width, "none")

    def grow(a: int, b: int) -> int:
        return a + (b - a) * (layers - 2) // 2

    return TracedStep(
        strategy="none",
        peak_bytes=grow(two.peak_bytes, four.peak_bytes),
        saved_bytes=grow(two.saved_bytes, four.saved_bytes),
        flops=grow(two.flops, four.flops),
        params_bytes=grow(two.params_bytes, four.params_bytes),
        input_bytes=two.input_bytes,
    )


def check_bounds(cfg: DemoConfig) -> TracedStep:
    """Refuse, before anything real is allocated, a run that would not fit or not finish."""
    depths = cfg.sweep or (cfg.layers,)
    deepest = max(depths)
    traced = estimate_none_step(cfg.model, deepest, cfg.tokens, cfg.width)
    need = traced.params_bytes + traced.input_bytes + traced.peak_bytes
    free = free_bytes(cfg.device)
    if need > 0.8 * free:
        raise BadInput(
            f"Refused: the estimated peak of {need / MIB:,.0f} MiB (parameters, input and "
            f"the step) exceeds 80% of the {free / MIB:,.0f} MiB free on the {cfg.device}."
        )
    steps = len(cfg.strategies) * (cfg.repeat + 2) * len(depths)
    seconds = steps * traced.flops / ASSUMED_FLOPS[cfg.device]
    if seconds > cfg.time_budget_s:
        raise BadInput(
            f"Refused: about {traced.flops * steps / 1e12:,.1f} TFLOP in {steps} steps would "
            f"take about {seconds:,.0f} s at {ASSUMED_FLOPS[cfg.device] / 1e9:,.0f} GFLOP/s, "
            f"over the {cfg.time_budget_s:g} s budget."
        )
    return traced


# -- the measured run ----------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _clear_grads(model: nn.Module) -> None:
    for p in model.parameters():
        p.grad = None


def measure_strategy(
    model: nn.Sequential,
    x: torch.Tensor,
    strategy: str,
    repeat: int,
    seed: int,
    baseline_grads: list[torch.Tensor] | None,
) -> tuple[StrategyResult, list[torch.Tensor]]:
    """Measure one strategy; returns its result and its gradients."""
    device = x.device
    policy = MatmulSavePolicy()
    forward = make_forward(model, strategy, policy)

    def run_forward() -> torch.Tensor:
        torch.manual_seed(seed)  # the same dropout masks for every strategy
        return loss_of(forward(x))

    meter = LiveTensorMeter(device_type=device.type)
    _clear_grads(model)
    reserved: int | None = None
    if device.type == "cuda":
        cuda = cuda_step_memory(device, run_forward)
        peak, saved, reserved = cuda.peak_bytes, cuda.after_forward_bytes, cuda.reserved_bytes
        _clear_grads(model)
        with meter:
            loss = run_forward()
            meter.set_phase(BACKWARD)
            loss.backward()
            del loss
        _sync(device)
        check = meter.peak_bytes
    else:
        with profiler_allocations() as trace, meter:
            loss = run_forward()
            saved = meter.live_bytes
            meter.set_phase(BACKWARD)
            loss.backward()
            del loss
        peak, check = meter.peak_bytes, trace.peak_bytes
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if strategy == "selective" and policy.saved == 0:
        log.warning("the selective policy saved nothing: no operator matched %s", policy.ops)

    times: list[float] = []
    for _ in range(repeat):
        _clear_grads(model)
        _sync(device)
        start = time.perf_counter()
        loss = run_forward()
        loss.backward()
        del loss
        _sync(device)
        times.append(time.perf_counter() - start)
    _clear_grads(model)

    if baseline_grads is None:
        identical = True
    else:
        identical = len(grads) == len(baseline_grads) and all(
            torch.equal(a, b) for a, b in zip(grads, baseline_grads, strict=True)
        )
    result = StrategyResult(
        strategy=strategy,
        peak_bytes=int(peak),
        peak_check_bytes=int(check),
        saved_bytes=int(saved),
        step_ms=round(statistics.median(times) * 1000, 2),
        grads_identical=identical,
        reserved_bytes=reserved,
    )
    log.info("%s: peak %.1f MiB (check %.1f MiB), %.1f ms", strategy, peak / MIB, check / MIB, result.step_ms)
    return result, grads


def theory_for(layers: int, none_saved: int, input_bytes: int) -> Theory:
    """O(N) against O(sqrt N), from the per-layer activation a = saved(none) / N."""
    a = none_saved // max(layers, 1)
    b = input_bytes
    k = segments_for(layers)
    chunk = layers // k
    last = layers - (k - 1) * chunk
    predicted = {
        "none": layers * a,
        "block": layers * b + a,
        "sqrt": (k - 1) * b + max(chunk, last) * a,
    }
    text = (
        f"Theory (activations only, a = {a / MIB:.2f} MiB per layer, b = {b / MIB:.2f} "
        f"MiB per layer input): none keeps N*a = {predicted['none'] / MIB:.1f} MiB, O(N); "
        f"sqrt with {k} segments keeps {k - 1} inputs plus one {max(chunk, last)}-layer "
        f"segment = {predicted['sqrt'] / MIB:.1f} MiB, O(sqrt N); block keeps N inputs "
        f"plus one layer = {predicted['block'] / MIB:.1f} MiB."
    )
    return Theory(a, b, k, predicted, text)


def run_demo(
    cfg: DemoConfig, estimate: bool = True, on_result: Callable[[StrategyResult], None] | None = None
) -> DemoReport:
    """Run every strategy (or the sweep) and return the report; `on_result` hears of each
    strategy as soon as it is measured (the chat shows the first figure before the end)."""
    started = time.perf_counter()
    device = torch.device(cfg.device)
    depths = cfg.sweep or (cfg.layers,)
    results: list[StrategyResult] = []
    theory: Theory | None = None
    params_bytes = input_bytes = 0
    for depth in depths:
        torch.manual_seed(cfg.seed)
        model = build_model(cfg.model, depth, cfg.width).to(device)
        model.train()
        x = torch.randn(cfg.tokens, cfg.width, generator=torch.Generator().manual_seed(cfg.seed + 1))
        x = x.to(device)
        params_bytes, input_bytes = parameter_bytes(model), x.numel() * x.element_size()
        baseline: list[torch.Tensor] | None = None
        for strategy in cfg.strategies:
            result, grads = measure_strategy(model, x, strategy, cfg.repeat, cfg.seed, baseline)
            if estimate:
                traced = trace_demo_step(cfg.model, depth, cfg.tokens, cfg.width, strategy)
                result = replace(result, estimate_bytes=traced.peak_bytes)
            if cfg.sweep:
                result = replace(result, layers=depth)
            if strategy == "none":
                baseline = grads
                theory = theory_for(depth, result.saved_bytes, input_bytes)
            results.append(result)
            if on_result is not None:
                on_result(result)
        del model, x, baseline
    meters = (
        {
            "peak_bytes": "CUDA max_memory_allocated minus the pre-step baseline",
            "peak_check_bytes": "live-tensor meter (TorchDispatchMode, storages counted once)",
        }
        if device.type == "cuda"
        else {
            "peak_bytes": "live-tensor meter (TorchDispatchMode, storages counted once)",
            "peak_check_bytes": "CPU allocator events recorded by torch.profiler",
        }
    )
    meters["scope"] = "bytes above parameters and input for one forward+backward, parameter gradients included"
    return DemoReport(
        device=cfg.device if device.type == "cpu" else torch.cuda.get_device_name(device),
        torch=torch.__version__,
        model=cfg.model,
        layers=cfg.layers if not cfg.sweep else max(depths),
        tokens=cfg.tokens,
        width=cfg.width,
        dtype="float32",
        threads=torch.get_num_threads(),
        params_bytes=params_bytes,
        input_bytes=input_bytes,
        results=results,
        theory=theory,
        wall_s=round(time.perf_counter() - started, 3),
        sweep=list(cfg.sweep),
        meters=meters,
    )


# -- output --------------------------------------------------------------------------


def format_table(report: DemoReport) -> str:
    none = {r.layers: r for r in report.results if r.strategy == "none"}
    head = (
        f"{report.model}, {report.layers} layers, {report.tokens} tokens x width "
        f"{report.width}, {report.dtype}, {report.device}, torch {report.torch}"
    )
    rows = [
        head,
        f"{'strategy':<10}{'layers':>7}{'peak MiB':>10}{'check MiB':>10}"
        f"{'saved MiB':>10}{'vs none':>9}{'step ms':>9}{'vs none':>9}  grads",
    ]
    for r in report.results:
        base = none.get(r.layers)
        mem = f"{r.peak_bytes / base.peak_bytes:.2f}x" if base and base.peak_bytes else "-"
        t = f"{r.step_ms / base.step_ms:.2f}x" if base and base.step_ms else "-"
        rows.append(
            f"{r.strategy:<10}{r.layers or report.layers:>7}{r.peak_bytes / MIB:>10.1f}"
            f"{r.peak_check_bytes / MIB:>10.1f}{r.saved_bytes / MIB:>10.1f}{mem:>9}"
            f"{r.step_ms:>9.1f}{t:>9}  {'identical' if r.grads_identical else 'DIFFER'}"
        )
    if report.theory is not None and not report.sweep:
        rows.append(report.theory.text)
    rows.append(f"wall {report.wall_s:.2f} s")
    return "\n".join(rows)


def where_it_runs(device_name: str) -> dict[str, Any]:
    """The device, its memory, torch's version and its CPU threads, for the result's footer."""
    device = torch.device(device_name)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        name, memory = props.name, int(props.total_memory)
    else:
        name = "cpu"
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            memory = 0
    return {"device": name, "memory_bytes": memory, "torch": torch.__version__, "threads": torch.get_num_threads()}


def emit_event(event: dict[str, Any]) -> None:
    """One progress event as a JSON line on stdout, flushed at once for the waiting bot."""
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """The CLI. Returns 0, or 2 with one sentence on stderr for bad input."""
    process_start = time.perf_counter()
    try:
        cfg = parse_args(argv)
        threads = os.environ.get("STUDYBOT_DEMO_THREADS")
        if threads:
            torch.set_num_threads(max(1, int(threads)))
        check_bounds(cfg)
    except BadInput as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    on_result = None
    if cfg.progress:
        total = len(cfg.strategies) * len(cfg.sweep or (cfg.layers,))
        emit_event({"event": "start", "total": total, **where_it_runs(cfg.device)})

        def on_result(result: StrategyResult) -> None:
            emit_event({"event": "row", "row": asdict(result)})

    report = run_demo(cfg, on_result=on_result)
    if cfg.chart:
        from demos.chart import write_chart

        write_chart(report, cfg.chart)
        report = replace(report, chart=cfg.chart)
    report = replace(report, wall_s=round(time.perf_counter() - process_start, 3))
    if cfg.progress:
        emit_event({"event": "result", "result": report.to_json()})
    elif cfg.json:
        print(json.dumps(report.to_json()))
    else:
        print(format_table(report))
        if cfg.chart:
            print(f"chart: {cfg.chart}")
    return 0


def _entry(func: Callable[[list[str] | None], int]) -> None:
    logging.basicConfig(level=os.environ.get("STUDYBOT_DEMO_LOG", "WARNING"), stream=sys.stderr)
    raise SystemExit(func(None))


if __name__ == "__main__":
    _entry(main)
