"""Measured peak memory and step time with and without activation checkpointing.

    python -m demos.checkpoint [--model blocks|chain|transformer|hf-gpt2] [--layers N]
        [--tokens T] [--width D] [--heads H] [--batch B]
        [--strategies none,block,sqrt,selective,selective-attn,offload,budget]
        [--budgets 1.0,0.5,0.2,0.0] [--device auto|cpu|cuda] [--repeat K] [--check]
        [--json] [--chart PATH] [--sweep 4,16,64,256]

For every strategy one instrumented step (forward + backward, seeded, gradients set to
``None`` first) gives the memory figures, the memory timeline and the gradients, then
``K`` plain steps give the median step time. Memory figures are bytes above what existed
before the step (parameters and input), and include the parameter gradients it creates:

- ``peak_bytes``: on CUDA ``max_memory_allocated()`` minus the pre-step baseline; on CPU
  the live-tensor meter (:class:`demos.memory.LiveTensorMeter`), or for ``budget`` (compiled
  code, which a dispatch mode cannot watch) the allocator events ``torch.profiler`` records.
- ``timeline``: live bytes through the step from the same meter (CUDA: the allocator's
  memory history), forward then backward, recomputations marked; its maximum is the peak.
- ``estimate_bytes`` and ``estimate_error_pct``: the fake-tensor trace of the same step
  (nothing allocated) and how far it is from ``peak_bytes``.
- ``peak_check_bytes``: with ``--check`` (or on CUDA) an independent second meter: on the
  CPU the profiler's allocator events, on CUDA the live-tensor meter; else null.
- ``saved_bytes``: bytes still live at the end of the forward pass, i.e. what the graph
  keeps for backward (plus the scalar loss).
- ``reserved_bytes`` (CUDA only): ``max_memory_reserved()``.
- ``grads_identical``: every parameter gradient ``torch.equal`` to the ``none`` run's;
  ``grad_max_diff`` the largest absolute difference (compiled code may reorder sums).

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
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch
from torch import nn

from demos.errors import BadInput
from demos.memory import (
    BACKWARD,
    BACKWARD_RANGE,
    AllocationTrace,
    LiveTensorMeter,
    backward,
    cuda_step_memory,
    profiler_allocations,
)
from demos.models import MODEL_KINDS, TOKEN_MODELS, DemoNet, build_net, demo_input, parameter_bytes, segments_for
from demos.report import DemoReport, StrategyResult, Theory
from demos.strategies import CUDA_ONLY, STRATEGIES, MatmulSavePolicy, make_forward, policy_for
from demos.traced import TracedStep

log = logging.getLogger(__name__)

DEFAULT_STRATEGIES = ("none", "block", "sqrt", "selective")
DEFAULT_SWEEP = (4, 16, 64, 256)
DEFAULT_BUDGETS = (1.0, 0.5, 0.2, 0.0)
#: Per-model defaults: layers, tokens, width, heads, batch. The blocks' default (the demo
#: without options) is 9 layers of 512 tokens: sqrt's 3 segments of 3 layers, block
#: keeping 0.3x of none's peak, in about 2.5 s of work on 2 CPU cores (16 x 2,048 taught
#: the same drop in 8 s). The transformer's runs in about as long; hf-gpt2 is GPT-2
#: small's shape at 2 layers.
MODEL_DEFAULTS: dict[str, tuple[int, int, int, int, int]] = {
    "blocks": (9, 512, 128, 4, 1),
    "chain": (16, 2048, 128, 4, 1),
    "transformer": (4, 256, 128, 4, 4),
    "hf-gpt2": (2, 128, 768, 12, 2),
}
MAX_LAYERS = 4096
MAX_TOKENS = 1 << 20
MAX_WIDTH = 16384
MAX_HEADS = 256
MAX_BATCH = 4096
MAX_REPEAT = 100
#: Refuse a request whose estimated run time exceeds this many seconds.
DEFAULT_TIME_BUDGET_S = 120.0
#: Assumed sustained float32 throughput for the time budget (FLOP/s).
ASSUMED_FLOPS = {"cpu": 2.0e10, "cuda": 5.0e12}
#: Seconds one compile of the budget strategy is assumed to take, for the time budget.
COMPILE_S = {"cpu": 4.0, "cuda": 30.0}
#: A step time whose spread (IQR, or min-max under 4 repeats) exceeds this share of its median
#: is marked "!" in the table: its ratio to none is not settled by that many repeats.
WIDE_SPREAD = 0.25
MIB = 1024**2


@dataclass(frozen=True)
class DemoConfig:
    """One demo run's settings: the model, its size, the strategies and where it runs."""

    model: str = "blocks"
    layers: int = 9
    tokens: int = 512
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
    heads: int = 4
    batch: int = 1
    budgets: tuple[float, ...] = DEFAULT_BUDGETS
    check: bool = False


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


def _budgets(text: str) -> tuple[float, ...]:
    parts = [t.strip() for t in text.split(",") if t.strip()] or [text]
    values: list[float] = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise BadInput(f"Every --budgets value must be a number from 0 to 1, not {part!r}.") from None
        if not 0.0 <= value <= 1.0:
            raise BadInput(f"Every --budgets value must be a number from 0 to 1, not {part}.")
        values.append(value)
    return tuple(dict.fromkeys(values))


MODEL_ABOUT = {
    "blocks": "residual feed-forward blocks (LayerNorm, d -> 4d -> d, GELU, dropout)",
    "chain": "N Linear+tanh layers, Chen et al.'s setting (what --sweep runs)",
    "transformer": "a GPT-style decoder (causal attention, GELU MLP, norms)",
    "hf-gpt2": "Hugging Face's GPT2LMHeadModel, random weights (needs transformers)",
}
STRATEGY_ABOUT = {
    "none": "no checkpointing, every activation kept (always run: the baseline)",
    "block": "torch.utils.checkpoint around every layer",
    "sqrt": "checkpoint_sequential with round(sqrt N) segments",
    "selective": "SAC: matmul and attention outputs saved, the rest recomputed",
    "selective-attn": "SAC: matmul outputs saved, attention recomputed too",
    "offload": "saved activations in CPU memory (CUDA only)",
    "budget": "torch.compile with activation_memory_budget, one compiled run per --budgets value",
}


def _budgets_text(budgets: Sequence[float]) -> str:
    return ",".join(f"{b:g}" for b in budgets)


def _help_epilog() -> str:
    models = "\n".join(
        f"  {name:<15}{MODEL_ABOUT[name]}; default {layers} layers, "
        + (
            f"batch {batch} x {tokens} tokens, width {width}, {heads} heads"
            if name in TOKEN_MODELS
            else f"{tokens} tokens, width {width}"
        )
        for name, (layers, tokens, width, heads, batch) in MODEL_DEFAULTS.items()
    )
    strategies = "\n".join(f"  {name:<15}{STRATEGY_ABOUT[name]}" for name in STRATEGIES)
    return (
        f"models (--model; default blocks):\n{models}\n\n"
        f"strategies (--strategies; default {','.join(DEFAULT_STRATEGIES)}, hf-gpt2 none,block, "
        f"--sweep none,sqrt):\n{strategies}\n\n"
        "Step times are the median of --repeat timed steps with their spread (the interquartile "
        "range from 4 repeats, min-max below); CPU step times do not carry over to GPUs."
    )


def parse_args(argv: Sequence[str] | None) -> DemoConfig:  # noqa: C901 - one check per option
    """Validate the command line; raises :class:`BadInput` with one sentence."""
    p = _Parser(
        prog="python -m demos.checkpoint",
        add_help=True,
        description="Peak memory and step time with and without checkpointing.",
        epilog=_help_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", default="blocks", help=f"{', '.join(MODEL_KINDS)} (default blocks; listed below)")
    p.add_argument("--layers", default=None, help="layers in the stack (default: the model's, below)")
    p.add_argument("--tokens", default=None, help="tokens a sequence (default: the model's)")
    p.add_argument("--width", default=None, help="hidden width (default: the model's)")
    p.add_argument("--heads", default=None, help="attention heads, token models only (default: the model's)")
    p.add_argument("--batch", default=None, help="sequences a step, token models only (default: the model's)")
    p.add_argument(
        "--strategies",
        default=None,
        help=f"comma-separated, none always added (default {','.join(DEFAULT_STRATEGIES)}; listed below)",
    )
    p.add_argument(
        "--budgets",
        default=None,
        help=f"memory budgets, 0 to 1, for the budget strategy (default {_budgets_text(DEFAULT_BUDGETS)})",
    )
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto: cuda when there is a GPU)")
    p.add_argument("--repeat", default="3", help=f"timed steps per strategy, 1 to {MAX_REPEAT} (default 3)")
    p.add_argument("--seed", default="0", help="seed for weights, input and dropout (default 0)")
    p.add_argument(
        "--sweep",
        default=None,
        help=f"depths for the chain model, e.g. {','.join(map(str, DEFAULT_SWEEP))} (default: no sweep)",
    )
    p.add_argument("--chart", default=None, help="write the timeline to this PNG and the other charts beside it")
    p.add_argument(
        "--time-budget",
        default=str(DEFAULT_TIME_BUDGET_S),
        help=f"refuse a run estimated to take longer, in seconds (default {DEFAULT_TIME_BUDGET_S:g})",
    )
    p.add_argument("--check", action="store_true", help="also measure with a second, independent meter")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.add_argument("--progress", action="store_true", help="JSON lines: start, one per strategy, then the result")
    a = p.parse_args(list(argv) if argv is not None else None)

    if a.model not in MODEL_KINDS:
        raise BadInput(f"Unknown model {a.model!r}; choose {', '.join(MODEL_KINDS[:-1])} or {MODEL_KINDS[-1]}.")
    sweep: tuple[int, ...] = ()
    if a.sweep is not None:
        parts = [s for s in a.sweep.split(",") if s.strip()] or [""]
        sweep = tuple(_int("every --sweep depth", s.strip(), 1, MAX_LAYERS) for s in parts)
    model = "chain" if sweep else a.model
    d_layers, d_tokens, d_width, d_heads, d_batch = MODEL_DEFAULTS[model]
    layers = _int("--layers", a.layers, 1, MAX_LAYERS) if a.layers is not None else d_layers
    tokens = _int("--tokens", a.tokens, 1, MAX_TOKENS) if a.tokens is not None else d_tokens
    width = _int("--width", a.width, 1, MAX_WIDTH) if a.width is not None else d_width
    heads = _int("--heads", a.heads, 1, MAX_HEADS) if a.heads is not None else d_heads
    batch = _int("--batch", a.batch, 1, MAX_BATCH) if a.batch is not None else d_batch
    repeat = _int("--repeat", a.repeat, 1, MAX_REPEAT)
    seed = _int("--seed", a.seed, 0, 2**31 - 1)
    budgets = _budgets(a.budgets) if a.budgets is not None else DEFAULT_BUDGETS
    try:
        budget = float(a.time_budget)
    except ValueError:
        raise BadInput(f"--time-budget must be a number of seconds, not {a.time_budget!r}.") from None
    if not 0 < budget < 1e6:
        raise BadInput(f"--time-budget must be a positive number of seconds, not {a.time_budget}.")
    if model in TOKEN_MODELS and width % heads:
        raise BadInput(f"--width ({width}) must be a multiple of --heads ({heads}) for the {model} model.")
    if model == "transformer" and tokens > 65536:
        raise BadInput(f"--tokens must be at most 65,536 for the transformer, not {tokens:,}.")

    if a.strategies is None:
        strategies = ("none", "sqrt") if sweep else DEFAULT_STRATEGIES
        if model == "hf-gpt2":
            strategies = ("none", "block")
    else:
        names = [s.strip() for s in a.strategies.split(",") if s.strip()]
        unknown = [s for s in names if s not in STRATEGIES]
        if unknown or not names:
            raise BadInput(f"Unknown strategy {(unknown or [a.strategies])[0]!r}; choose from {', '.join(STRATEGIES)}.")
        strategies = tuple(dict.fromkeys(["none", *names]))  # "none" is the baseline
    if model == "hf-gpt2":
        import importlib.util

        from demos.hf import HF_STRATEGIES

        if importlib.util.find_spec("transformers") is None:
            raise BadInput("The hf-gpt2 model needs the transformers package (pip install '.[demo]').")

        other = [s for s in strategies if s not in HF_STRATEGIES]
        if other:
            raise BadInput(f"The hf-gpt2 model runs {', '.join(HF_STRATEGIES)}; {other[0]} needs a plain layer stack.")
    if sweep and "budget" in strategies:
        raise BadInput("The budget strategy compiles one model; run it without --sweep.")

    if a.device not in ("auto", "cpu", "cuda"):
        raise BadInput(f"Unknown device {a.device!r}; choose auto, cpu or cuda.")
    has_cuda = torch.cuda.is_available()
    if a.device == "cuda" and not has_cuda:
        raise BadInput("--device cuda needs an NVIDIA GPU, and none is available here.")
    device = ("cuda" if has_cuda else "cpu") if a.device == "auto" else a.device
    needs_cuda = [s for s in strategies if s in CUDA_ONLY]
    if needs_cuda and device != "cuda":
        raise BadInput(
            f"The {needs_cuda[0]} strategy needs a CUDA GPU (it moves saved activations to the CPU's "
            "memory, which on a CPU run is where they already are), and this run is on the CPU."
        )
    return DemoConfig(
        model=model,
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
        heads=heads,
        batch=batch,
        budgets=budgets,
        check=a.check,
    )


# -- bounds: the estimate decides ----------------------------------------------------


def free_bytes(device: str) -> int:
    """Memory this worker may still use on ``device``; on the CPU, at most the share the bot
    gave this run (STUDYBOT_DEMO_MEMORY_BYTES: what other running demos were not promised)."""
    if device == "cuda":
        free, _total = torch.cuda.mem_get_info()
        return int(free)
    share = os.environ.get("STUDYBOT_DEMO_MEMORY_BYTES", "")
    cap = int(share) if share.isascii() and share.isdigit() else None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    return available if cap is None else min(available, cap)
    except OSError:
        pass
    available = int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    return available if cap is None else min(available, cap)


def estimate_none_step(cfg: DemoConfig, layers: int) -> TracedStep:
    """The fake-traced ``none`` step; deep stacks are extrapolated from 2 and 4 layers.

    Every layer of a stack is the same, so bytes and FLOPs grow linearly with depth;
    extrapolating keeps the check fast (a 4,096-layer trace would take seconds).
    """
    from demos.estimate import trace_demo_step

    def trace(depth: int) -> TracedStep:
        kernels = "cuda" if cfg.device == "cuda" else "cpu"
        return trace_demo_step(cfg.model, depth, cfg.tokens, cfg.width, "none", cfg.heads, cfg.batch, kernels)

    if layers <= 32:
        return trace(layers)
    two, four = trace(2), trace(4)

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
    traced = estimate_none_step(cfg, deepest)
    need = traced.params_bytes + traced.input_bytes + traced.peak_bytes
    free = free_bytes(cfg.device)
    if need > 0.8 * free:
        raise BadInput(
            f"Refused: the estimated peak of {need / MIB:,.0f} MiB (parameters, input and "
            f"the step) exceeds 80% of the {free / MIB:,.0f} MiB free on the {cfg.device}."
        )
    runs = sum(len(cfg.budgets) if s == "budget" else 1 for s in cfg.strategies)
    steps = runs * (cfg.repeat + 2) * len(depths)
    compiles = len(cfg.budgets) if "budget" in cfg.strategies else 0
    seconds = steps * traced.flops / ASSUMED_FLOPS[cfg.device] + compiles * COMPILE_S[cfg.device]
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


@dataclass
class Subject:
    """What a strategy runs on: the model, its input, and how to get a loss under a strategy."""

    kind: str
    model: nn.Module
    x: torch.Tensor

    def step(
        self, strategy: str, policy: MatmulSavePolicy | None, sink: LiveTensorMeter | None
    ) -> Callable[[], torch.Tensor]:
        x = self.x
        if self.kind == "hf-gpt2":
            from demos.hf import gpt2_loss, set_checkpointing

            set_checkpointing(self.model, strategy == "block", sink)
            if strategy == "offload":
                return lambda: _offloaded(lambda: gpt2_loss(self.model, x))
            return lambda: gpt2_loss(self.model, x)
        net = self.model
        assert isinstance(net, DemoNet)
        if strategy == "offload":
            return lambda: _offloaded(lambda: net.loss(net.body(net.embed(x)), x))
        body = make_forward(net.body, strategy, policy, sink)
        return lambda: net.loss(body(net.embed(x)), x)

    def net(self) -> DemoNet:
        assert isinstance(self.model, DemoNet)
        return self.model


def _offloaded(run: Callable[[], torch.Tensor]) -> torch.Tensor:
    with torch.autograd.graph.save_on_cpu(pin_memory=True):
        return run()


def _grad_diff(grads: list[torch.Tensor], baseline: list[torch.Tensor] | None) -> tuple[bool, float]:
    if baseline is None:
        return True, 0.0
    if len(grads) != len(baseline):
        return False, float("inf")
    identical = all(torch.equal(a, b) for a, b in zip(grads, baseline, strict=True))
    diff = 0.0 if identical else max(float((a - b).abs().max()) for a, b in zip(grads, baseline, strict=True))
    return identical, diff


@dataclass(frozen=True)
class StepTimes:
    """The timed repeats of one strategy: their median, every one, and how far they spread."""

    median_ms: float
    runs_ms: tuple[float, ...]
    spread_ms: tuple[float, float] | None  # None for a single repeat
    kind: str  # "iqr" (4 repeats or more), "min-max" (2 or 3), "" (1)
    wide: bool


def step_times(seconds: Sequence[float]) -> StepTimes:
    """Median and spread of the timed steps: the interquartile range from 4 repeats on, the
    smallest and largest below that; wide when the spread exceeds WIDE_SPREAD of the median."""
    ms = sorted(t * 1000 for t in seconds)
    median = statistics.median(ms)
    spread: tuple[float, float] | None = None
    kind = ""
    if len(ms) >= 4:
        q1, _q2, q3 = statistics.quantiles(ms, n=4, method="inclusive")
        spread, kind = (q1, q3), "iqr"
    elif len(ms) >= 2:
        spread, kind = (ms[0], ms[-1]), "min-max"
    wide = spread is not None and median > 0 and spread[1] - spread[0] > WIDE_SPREAD * median
    return StepTimes(
        median_ms=round(median, 2),
        runs_ms=tuple(round(t * 1000, 2) for t in seconds),
        spread_ms=None if spread is None else (round(spread[0], 2), round(spread[1], 2)),
        kind=kind,
        wide=wide,
    )


def _timed(step: Callable[[], torch.Tensor], model: nn.Module, device: torch.device, repeat: int) -> StepTimes:
    times: list[float] = []
    for _ in range(repeat):
        _clear_grads(model)
        _sync(device)
        start = time.perf_counter()
        loss = step()
        backward(loss)
        del loss
        _sync(device)
        times.append(time.perf_counter() - start)
    _clear_grads(model)
    return step_times(times)


def measure_strategy(
    subject: Subject,
    strategy: str,
    repeat: int,
    seed: int,
    baseline_grads: list[torch.Tensor] | None,
    check: bool = False,
    budget: float | None = None,
) -> tuple[StrategyResult, list[torch.Tensor]]:
    """Measure one strategy; returns its result and its gradients."""
    model, x = subject.model, subject.x
    device = x.device
    meter = LiveTensorMeter(device_type=device.type)
    policy = policy_for(strategy) if strategy.startswith("selective") else None
    if strategy == "budget":
        from demos.budget import compile_step, warm_up

        assert budget is not None
        net = subject.net()
        compiled = compile_step(net.embed, net.body, net.loss, budget, device.type)
        warm_up(compiled, x, list(model.parameters()))

        def plain() -> torch.Tensor:
            return compiled(x)

        step = plain
    else:
        step = subject.step(strategy, policy, meter)

    def run_forward() -> torch.Tensor:
        torch.manual_seed(seed)  # the same dropout masks for every strategy
        return step()

    _clear_grads(model)
    reserved: int | None = None
    check_bytes: int | None = None
    if device.type == "cuda":
        cuda = cuda_step_memory(device, run_forward, timeline=True)
        peak, saved, reserved, timeline = cuda.peak_bytes, cuda.after_forward_bytes, cuda.reserved_bytes, cuda.timeline
        meter_name = "CUDA allocator (max_memory_allocated, memory history)"
        if strategy != "budget":  # a dispatch mode would make Dynamo run the compiled step eagerly
            _clear_grads(model)
            with meter:
                loss = run_forward()
                meter.set_phase(BACKWARD)
                backward(loss)
                del loss
            _sync(device)
            check_bytes = meter.peak_bytes
    elif strategy == "budget":
        with profiler_allocations() as compiled_trace:
            loss = run_forward()
            with torch.profiler.record_function(BACKWARD_RANGE):
                backward(loss)
            del loss
        assert compiled_trace.timeline is not None
        peak, timeline = compiled_trace.peak_bytes, compiled_trace.timeline
        saved = compiled_trace.marks.get("forward_end", 0)
        meter_name = "CPU allocator events recorded by torch.profiler"
    else:
        check_ctx: Any = profiler_allocations() if check else nullcontext()
        trace: AllocationTrace | None
        with check_ctx as trace, meter:
            loss = run_forward()
            saved = meter.live_bytes
            meter.set_phase(BACKWARD)
            backward(loss)
            del loss
        peak, timeline = meter.peak_bytes, meter.timeline()
        check_bytes = trace.peak_bytes if trace is not None else None
        meter_name = "live-tensor meter"
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if policy is not None and policy.saved == 0 and subject.kind != "hf-gpt2":
        log.warning("the selective policy saved nothing: no operator matched %s", policy.ops)

    timed = _timed(run_forward, model, device, repeat)
    identical, diff = _grad_diff(grads, baseline_grads)
    label = strategy if budget is None else f"budget {budget:g}"
    result = StrategyResult(
        strategy=strategy,
        peak_bytes=int(peak),
        peak_check_bytes=None if check_bytes is None else int(check_bytes),
        saved_bytes=int(saved),
        step_ms=timed.median_ms,
        grads_identical=identical,
        reserved_bytes=reserved,
        label=label,
        budget=budget,
        grad_max_diff=diff,
        meter=meter_name,
        timeline=timeline,
        step_ms_runs=timed.runs_ms,
        step_ms_spread=timed.spread_ms,
        step_ms_spread_kind=timed.kind,
        step_ms_wide=timed.wide,
    )
    log.info("%s: peak %.1f MiB, %.1f ms", label, peak / MIB, result.step_ms)
    return result, grads


def _counted(number: int, noun: str) -> str:
    """'1 segment', '3 segments' (demos/ stands alone: bot.core.wording.counted's twin)."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


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
        f"sqrt with {_counted(k, 'segment')} keeps {_counted(k - 1, 'input')} plus one {max(chunk, last)}-layer "
        f"segment = {predicted['sqrt'] / MIB:.1f} MiB, O(sqrt N); block keeps N inputs "
        f"plus one layer = {predicted['block'] / MIB:.1f} MiB."
    )
    return Theory(a, b, k, predicted, text)


def _subject(cfg: DemoConfig, depth: int, device: torch.device) -> Subject:
    torch.manual_seed(cfg.seed)
    if cfg.model == "hf-gpt2":
        from demos.hf import build_gpt2

        model: nn.Module = build_gpt2(depth, cfg.width, cfg.heads, cfg.tokens)
    else:
        model = build_net(cfg.model, depth, cfg.width, cfg.heads, cfg.tokens)
    model = model.to(device)
    model.train()
    return Subject(cfg.model, model, demo_input(cfg.model, cfg.tokens, cfg.width, cfg.batch, cfg.seed + 1, device))


def _runs(cfg: DemoConfig) -> list[tuple[str, float | None]]:
    """(strategy, budget) in order: one run per strategy, one per budget for ``budget``."""
    out: list[tuple[str, float | None]] = []
    for strategy in cfg.strategies:
        if strategy == "budget":
            out.extend(("budget", b) for b in cfg.budgets)
        else:
            out.append((strategy, None))
    return out


def _with_estimate(result: StrategyResult, estimate: int | None) -> StrategyResult:
    if estimate is None:
        return result
    error = round(100.0 * (estimate - result.peak_bytes) / result.peak_bytes, 2) if result.peak_bytes else None
    return replace(result, estimate_bytes=int(estimate), estimate_error_pct=error)


def run_demo(
    cfg: DemoConfig,
    estimate: bool = True,
    on_result: Callable[[StrategyResult], None] | None = None,
    traced_none: TracedStep | None = None,
) -> DemoReport:
    """Run every strategy (or the sweep) and return the report; `on_result` hears of each
    strategy as soon as it is measured (the chat shows the first figure before the end).
    ``traced_none``, the bounds check's trace of ``none`` at this size, is reused."""
    started = time.perf_counter()
    device = torch.device(cfg.device)
    depths = cfg.sweep or (cfg.layers,)
    results: list[StrategyResult] = []
    theory: Theory | None = None
    params_bytes = input_bytes = 0
    kernels = "cuda" if device.type == "cuda" else "cpu"
    for depth in depths:
        subject = _subject(cfg, depth, device)
        x = subject.x
        params_bytes, input_bytes = parameter_bytes(subject.model), x.numel() * x.element_size()
        baseline: list[torch.Tensor] | None = None
        for strategy, budget in _runs(cfg):
            result, grads = measure_strategy(subject, strategy, cfg.repeat, cfg.seed, baseline, cfg.check, budget)
            if estimate and strategy != "budget":
                if strategy == "none" and traced_none is not None and depth == cfg.layers and not cfg.sweep:
                    traced_peak = traced_none.peak_bytes
                else:
                    from demos.estimate import trace_demo_step

                    traced_peak = trace_demo_step(
                        cfg.model, depth, cfg.tokens, cfg.width, strategy, cfg.heads, cfg.batch, kernels
                    ).peak_bytes
                result = _with_estimate(result, traced_peak)
            elif not estimate:
                result = replace(result, estimate_bytes=None)
            if cfg.sweep:
                result = replace(result, layers=depth)
            if strategy == "none":
                baseline = grads
                if cfg.model in ("blocks", "chain"):
                    theory = theory_for(depth, result.saved_bytes, input_bytes)
            results.append(result)
            if on_result is not None:
                on_result(result)
        del subject, x, baseline
    meters = (
        {
            "peak_bytes": "CUDA max_memory_allocated minus the pre-step baseline",
            "peak_check_bytes": "live-tensor meter (TorchDispatchMode, storages counted once)",
            "timeline": "CUDA allocator memory history (alloc and free events), forward and backward",
        }
        if device.type == "cuda"
        else {
            "peak_bytes": "live-tensor meter (TorchDispatchMode, storages counted once); budget: "
            "CPU allocator events recorded by torch.profiler (compiled code runs eagerly under a dispatch mode)",
            "peak_check_bytes": "CPU allocator events recorded by torch.profiler (with --check)",
            "timeline": "the meter that gives peak_bytes, one point per stretch of allocator events",
        }
    )
    meters["scope"] = "bytes above parameters and input for one forward+backward, parameter gradients included"
    meters["estimate_bytes"] = (
        f"fake-tensor trace of the same step (nothing allocated), attention as {kernels.upper()} kernels "
        "allocate; budget: none (fake tensors make Dynamo run the step eagerly)"
    )
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
        heads=cfg.heads if cfg.model in TOKEN_MODELS else 0,
        batch=cfg.batch,
        estimate_kernels=kernels if estimate else "",
    )


# -- output --------------------------------------------------------------------------


#: Printed once under a CPU run's table.
CPU_TIMES_NOTE = (
    "CPU step times do not carry over to GPUs: the kernels, the threads and what a recomputation "
    "costs differ there, and so do the ratios to none; read them as this machine's times, not as "
    "checkpointing's cost."
)
#: Printed under a CPU run's table when the estimate ran.
CPU_ESTIMATE_NOTE = (
    "est and err on the CPU: the fake-tensor trace counts the same tensors, through the same CPU "
    "kernels, as the live-tensor meter, so +0.0% says the two agree on the bookkeeping, not that the "
    "estimate predicts a GPU's peak (CUDA's dropout keeps a bool mask where the CPU's keeps a float "
    "one, and its attention is fused: only a --device cuda run checks that)."
)


def _label(r: StrategyResult) -> str:
    name = r.label or r.strategy
    return f"compiled {name}" if r.strategy == "budget" else name


def _spread_cell(r: StrategyResult) -> str:
    if r.step_ms_spread is None:
        return f"{'-':>15} "
    low, high = r.step_ms_spread
    return f"{f'{low:.1f}-{high:.1f}':>15}{'!' if r.step_ms_wide else ' '}"


def _table_row(r: StrategyResult, base: StrategyResult | None, layers: int) -> str:
    mem = f"{r.peak_bytes / base.peak_bytes:.2f}x" if base and base.peak_bytes else "-"
    t = f"{r.step_ms / base.step_ms:.2f}x" if base and base.step_ms else "-"
    est = f"{r.estimate_bytes / MIB:.1f}" if r.estimate_bytes is not None else "-"
    err = f"{r.estimate_error_pct:+.1f}%" if r.estimate_error_pct is not None else "-"
    grads = "identical" if r.grads_identical else f"max diff {r.grad_max_diff:.1e}"
    return (
        f"{_label(r):<20}{r.layers or layers:>7}{r.peak_bytes / MIB:>10.1f}"
        f"{est:>9}{err:>8}{r.saved_bytes / MIB:>10.1f}{mem:>9}"
        f"{r.step_ms:>9.1f}{_spread_cell(r)}{t:>9}  {grads}"
    )


def format_table(report: DemoReport) -> str:
    """The result as text: eager rows (ratios against none), then the compiled budget runs in
    their own section (ratios against compiled budget 1), then what the columns mean."""
    eager = [r for r in report.results if r.strategy != "budget"]
    compiled = [r for r in report.results if r.strategy == "budget"]
    none = {r.layers: r for r in eager if r.strategy == "none"}
    compiled_none = {r.layers: r for r in compiled if r.budget == 1.0}
    shape = (
        f"batch {report.batch} x {report.tokens} tokens, width {report.width}, {report.heads} heads"
        if report.heads
        else f"{report.tokens} tokens x width {report.width}"
    )
    head = f"{report.model}, {report.layers} layers, {shape}, {report.dtype}, {report.device}, torch {report.torch}"
    rows = [
        head,
        f"{'strategy':<20}{'layers':>7}{'peak MiB':>10}{'est MiB':>9}{'err':>8}"
        f"{'saved MiB':>10}{'vs none':>9}{'step ms':>9}{'spread ms':>15} {'vs none':>9}  grads",
    ]
    rows.extend(_table_row(r, none.get(r.layers), report.layers) for r in eager)
    if compiled:
        meters = sorted({r.meter for r in compiled} - {r.meter for r in eager})
        meter = f"measured by the {meters[0]}" if meters else "measured by the same allocator"
        rows.append(
            f"-- compiled: another graph (torch.compile) than the eager rows above, {meter}; "
            "its vs columns are against compiled budget 1, not eager none --"
        )
        rows.extend(_table_row(r, compiled_none.get(r.layers), report.layers) for r in compiled)
    if report.theory is not None and not report.sweep:
        rows.append(report.theory.text)
    if compiled:
        rows.append(
            "budget: torch.compile with torch._functorch.config.activation_memory_budget; compiled code may "
            "reorder float sums (and draws its own dropout masks), so its gradients are compared by their "
            "largest difference."
        )
    timed = next((r for r in report.results if r.step_ms_runs), None)
    if timed is not None:
        repeats = len(timed.step_ms_runs)
        kind = "the interquartile range" if repeats >= 4 else "the fastest and the slowest"
        text = f"step ms: the median of {repeats} timed steps" + (f"; spread: {kind}" if repeats > 1 else "")
        if any(r.step_ms_wide for r in report.results):
            text += (
                f"; ! marks a spread wider than {WIDE_SPREAD:.0%} of the median: that time and its "
                "ratio are not settled (more --repeat, a quieter machine)"
            )
        rows.append(text + ".")
    if report.device == "cpu":
        if any(r.estimate_error_pct is not None for r in report.results):
            rows.append(CPU_ESTIMATE_NOTE)
        rows.append(CPU_TIMES_NOTE)
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
        traced = check_bounds(cfg)
    except BadInput as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    on_result = None
    if cfg.progress:
        total = len(_runs(cfg)) * len(cfg.sweep or (cfg.layers,))
        emit_event({"event": "start", "total": total, **where_it_runs(cfg.device)})

        def on_result(result: StrategyResult) -> None:
            emit_event({"event": "row", "row": asdict(result)})

    report = run_demo(cfg, on_result=on_result, traced_none=traced)
    if cfg.chart:
        from demos.chart import write_charts

        charts = write_charts(report, cfg.chart)
        report = replace(report, chart=cfg.chart, charts=charts)
    report = replace(report, wall_s=round(time.perf_counter() - process_start, 3))
    if cfg.progress:
        emit_event({"event": "result", "result": report.to_json()})
    elif cfg.json:
        print(json.dumps(report.to_json()))
    else:
        print(format_table(report))
        for name, path in report.charts.items():
            print(f"chart ({name}): {path}")
    return 0


def _entry(func: Callable[[list[str] | None], int]) -> None:
    logging.basicConfig(level=os.environ.get("STUDYBOT_DEMO_LOG", "WARNING"), stream=sys.stderr)
    raise SystemExit(func(None))


if __name__ == "__main__":
    _entry(main)
