"""Peak memory of a training step, traced with fake tensors (nothing is allocated).

The same :class:`~demos.memory.LiveTensorMeter` that measures real CPU runs follows a
run on ``FakeTensorMode`` tensors, which have shapes, dtypes and storages but no data.
The figures are therefore what the real run allocates, operator by operator, minus
what kernels allocate internally and what the allocator rounds up.

CLI::

    python -m demos.estimate --preset gpt2-small [--batch B] [--seq S] [--gpu-gib G] [--json]

A step here is: forward, backward, AdamW step, with gradients set to ``None`` before the
step and the optimizer state already created (the steady state of training). The AdamW
step is traced on the largest parameter alone, which gives the whole step's peak (see
:func:`_one_parameter_adamw`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from demos.errors import BadInput
from demos.memory import BACKWARD, FORWARD, OPTIMIZER, LiveTensorMeter, backward
from demos.models import PRESETS, TOKEN_MODELS, TransformerConfig, TransformerLM, build_net, parameter_bytes
from demos.report import fake_start_event
from demos.strategies import make_forward
from demos.traced import TracedStep

__all__ = ["BadInput", "TracedStep", "trace_demo_step", "measure_training_step", "estimate", "main"]

log = logging.getLogger(__name__)

GIB = 1024**3


def approx_step_flops(model: nn.Module, tokens: int, recompute: bool) -> int:
    """6 x tokens x parameters for forward+backward (8x when the forward is rerun).

    A time-budget figure only: attention's sequence-squared term is not included.
    """
    count = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    return (8 if recompute else 6) * tokens * count


# -- the checkpoint demo's own step ------------------------------------------------


def trace_demo_step(
    kind: str,
    layers: int,
    tokens: int,
    width: int,
    strategy: str,
    heads: int = 4,
    batch: int = 1,
    kernels: str = "cpu",
) -> TracedStep:
    """Trace one step of ``demos.checkpoint``'s model with fake tensors.

    ``kernels="cuda"`` traces attention as CUDA's fused kernels allocate (hf-gpt2 only;
    the demo's own transformer has no attention dropout, so both agree there).
    """
    # offload changes where saved tensors live, not how much the device needs at most
    # during the forward: it is traced as "none".
    traced_as = "none" if strategy == "offload" else strategy
    with FakeTensorMode(allow_non_fake_inputs=False):
        if kind == "hf-gpt2":
            return _trace_hf(layers, tokens, width, heads, batch, strategy, kernels)
        net = build_net(kind, layers, width, heads, tokens)
        x = torch.randint(0, 512, (batch, tokens)) if kind in TOKEN_MODELS else torch.randn(tokens, width)
        body = make_forward(net.body, traced_as)
        peak, saved = _measure_step(lambda: net.loss(body(net.embed(x)), x))
        return TracedStep(
            strategy=strategy,
            peak_bytes=peak,
            saved_bytes=saved,
            flops=approx_step_flops(net, batch * tokens, recompute=traced_as != "none"),
            params_bytes=parameter_bytes(net),
            input_bytes=x.numel() * x.element_size(),
        )


def _measure_step(forward: Callable[[], torch.Tensor]) -> tuple[int, int]:
    """One forward and backward under the live-tensor meter: (peak bytes, bytes live when
    the backward starts, i.e. what the forward saved)."""
    meter = LiveTensorMeter()
    with meter:
        loss = forward()
        saved = meter.live_bytes
        meter.set_phase(BACKWARD)
        backward(loss)
        del loss
    return meter.peak_bytes, saved


def _trace_hf(layers: int, tokens: int, width: int, heads: int, batch: int, strategy: str, kernels: str) -> TracedStep:
    from demos.hf import HF_VOCAB, build_gpt2, gpt2_loss, set_checkpointing

    model = build_gpt2(layers, width, heads, tokens, kernels)
    model.train()
    set_checkpointing(model, strategy == "block")
    ids = torch.randint(0, HF_VOCAB, (batch, tokens))
    peak, saved = _measure_step(lambda: gpt2_loss(model, ids))
    return TracedStep(
        strategy=strategy,
        peak_bytes=peak,
        saved_bytes=saved,
        flops=approx_step_flops(model, batch * tokens, recompute=strategy == "block"),
        params_bytes=parameter_bytes(model),
        input_bytes=ids.numel() * ids.element_size(),
    )


# -- a training step of a language model ---------------------------------------------


@dataclass(frozen=True)
class StepBreakdown:
    """Peak memory of one training step and what was live at that moment (bytes)."""

    checkpointing: bool
    total_bytes: int
    parameters_bytes: int
    gradients_bytes: int
    optimizer_state_bytes: int
    activations_bytes: int
    temporaries_bytes: int
    step_peak_bytes: int  # the peak above parameters, optimizer state and input
    saved_bytes: int  # live at the end of the forward pass
    flops: int  # approximate, see approx_step_flops


def _loss(model: nn.Module, cfg: TransformerConfig, ids: torch.Tensor, checkpointing: bool) -> torch.Tensor:
    if cfg.source == "hf":
        from demos.hf import gpt2_loss

        return gpt2_loss(model, ids)
    assert isinstance(model, TransformerLM)
    loss: torch.Tensor = model(ids, checkpoint_blocks=checkpointing)
    return loss


def _training_step(
    model: nn.Module,
    cfg: TransformerConfig,
    ids: torch.Tensor,
    opt: torch.optim.Optimizer,
    checkpointing: bool,
    meter: LiveTensorMeter,
) -> int:
    """One step; returns the bytes live after forward, as the meter saw them."""
    for p in model.parameters():
        p.grad = None
    meter.set_phase(FORWARD)
    loss = _loss(model, cfg, ids, checkpointing)
    saved = meter.live_bytes
    meter.set_phase(BACKWARD)
    backward(loss)
    del loss
    meter.set_phase(OPTIMIZER)
    opt.step()
    return saved


def adamw_state_bytes(model: nn.Module) -> int:
    """AdamW's state, from the parameters alone: two moments of each parameter's size, plus
    a 4-byte step count per parameter tensor (tied weights counted once)."""
    params = {id(p): p for p in model.parameters()}.values()
    return sum(2 * p.numel() * p.element_size() + 4 for p in params)


def _largest_parameter(model: nn.Module) -> nn.Parameter:
    return max({id(p): p for p in model.parameters()}.values(), key=lambda p: p.numel() * p.element_size())


def _one_parameter_adamw(model: nn.Module) -> torch.optim.Optimizer:
    """AdamW over the largest parameter only, its state created as a first step would.

    Single-tensor AdamW (``foreach=False``) updates one parameter at a time in place, and
    each update's temporaries die before the next begins; what is live during the step is
    every gradient plus one parameter's temporaries, most for the largest. Stepping that
    parameter alone gives the same peak as stepping them all, without tracing a step per
    parameter; the state's bytes follow from the parameters (:func:`adamw_state_bytes`).
    """
    p = _largest_parameter(model)
    opt = torch.optim.AdamW([p], lr=1e-4, foreach=False)
    opt.state[p] = {
        "step": torch.tensor(0.0),
        "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
        "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
    }
    return opt


def _build(cfg: TransformerConfig, checkpointing: bool, kernels: str) -> nn.Module:
    if cfg.source == "hf":
        from demos.hf import build_gpt2, set_checkpointing

        model = build_gpt2(cfg.layers, cfg.width, cfg.heads, cfg.max_seq, kernels)
        set_checkpointing(model, checkpointing)
        return model
    return TransformerLM(cfg)


def measure_training_step(
    cfg: TransformerConfig,
    batch: int,
    seq: int,
    checkpointing: bool,
    fake: bool = True,
    kernels: str = "cpu",
) -> tuple[StepBreakdown, int | None]:
    """Measure one steady-state step with the live-tensor meter.

    With ``fake=True`` nothing is allocated. With ``fake=False`` the step really runs on
    the CPU and the profiler's allocator peak of the same step is returned beside it.
    ``kernels="cuda"`` traces attention as CUDA's fused kernels allocate it.
    """
    from contextlib import nullcontext

    from demos.memory import profiler_allocations

    mode = FakeTensorMode() if fake else nullcontext()
    with mode:
        torch.manual_seed(0)
        model = _build(cfg, checkpointing, kernels)
        model.train()
        ids = torch.randint(0, cfg.vocab, (batch, seq))
        opt = _one_parameter_adamw(model)
        state_bytes = adamw_state_bytes(model)
        meter = LiveTensorMeter()
        check = profiler_allocations() if not fake else nullcontext()
        with check as trace, meter:
            saved = _training_step(model, cfg, ids, opt, checkpointing, meter)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        comp = meter.composition_at_peak(grads)
        params = parameter_bytes(model)
        activations = comp.by_phase.get(FORWARD, 0)
        temporaries = sum(v for k, v in comp.by_phase.items() if k != FORWARD)
        breakdown = StepBreakdown(
            checkpointing=checkpointing,
            total_bytes=params + state_bytes + meter.peak_bytes,
            parameters_bytes=params,
            gradients_bytes=comp.gradient_bytes,
            optimizer_state_bytes=state_bytes,
            activations_bytes=activations,
            temporaries_bytes=temporaries,
            step_peak_bytes=meter.peak_bytes,
            saved_bytes=saved,
            flops=approx_step_flops(model, batch * seq, recompute=checkpointing),
        )
        checked = None if trace is None else int(trace.peak_bytes)
        return breakdown, checked


@dataclass(frozen=True)
class Estimate:
    preset: str
    batch: int
    seq: int
    dtype: str
    gpu_gib: float
    without: StepBreakdown
    with_checkpointing: StepBreakdown
    verdict: str
    kernels: str = "cuda"
    reference: dict[str, float | str] | None = None


#: A published measurement to hold the hf-gpt2 estimate to: PyTorch's Mosaic memory-profiling
#: tutorial trained GPT-2 (batch 4 x 512 tokens, AdamW, fp32, CUDA) and reports peaks (torch
#: figures, GiB) for what the training steps allocate: optimizer state plus the step's peak.
MOSAIC_GPT2: dict[str, float | str] = {
    "source": "PyTorch Mosaic memory-profiling tutorial, GPT-2, batch 4 x 512, AdamW, fp32, CUDA",
    "without_gib": 4.62,
    "with_gib": 2.55,
}


def steps_gib(b: StepBreakdown) -> float:
    """What the tutorial's figure counts: optimizer state plus the step's peak, in GiB."""
    return (b.optimizer_state_bytes + b.step_peak_bytes) / GIB


def verdict_for(without: StepBreakdown, with_ckpt: StepBreakdown, gpu_gib: float) -> str:
    """One sentence: does the step fit on a GPU of ``gpu_gib`` GiB?"""
    usable = gpu_gib * GIB * 0.9  # leave room for the CUDA context and fragmentation
    a, b = without.total_bytes / GIB, with_ckpt.total_bytes / GIB
    if without.total_bytes <= usable:
        return f"Fits on a {gpu_gib:g} GiB GPU without checkpointing ({a:.2f} GiB)."
    if with_ckpt.total_bytes <= usable:
        return (
            f"Needs checkpointing on a {gpu_gib:g} GiB GPU: {a:.2f} GiB without, {b:.2f} GiB with block checkpointing."
        )
    return f"Does not fit on a {gpu_gib:g} GiB GPU even with block checkpointing ({b:.2f} GiB; {a:.2f} GiB without)."


def estimate(preset: str, batch: int, seq: int, gpu_gib: float, kernels: str = "cuda") -> Estimate:
    cfg = PRESETS[preset]
    without, _ = measure_training_step(cfg, batch, seq, checkpointing=False, kernels=kernels)
    with_ckpt, _ = measure_training_step(cfg, batch, seq, checkpointing=True, kernels=kernels)
    reference: dict[str, float | str] | None = None
    if preset == "hf-gpt2" and (batch, seq) == (4, 512):
        reference = {
            **MOSAIC_GPT2,
            "estimate_without_gib": round(steps_gib(without), 3),
            "estimate_with_gib": round(steps_gib(with_ckpt), 3),
        }
    return Estimate(
        preset,
        batch,
        seq,
        "float32",
        gpu_gib,
        without,
        with_ckpt,
        verdict_for(without, with_ckpt, gpu_gib),
        kernels,
        reference,
    )


def _positive_int(name: str, text: str, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadInput(f"{name} must be a whole number, not {text!r}.") from None
    if not 1 <= value <= high:
        raise BadInput(f"{name} must be between 1 and {high:,}, not {value:,}.")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(message[0].upper() + message[1:].rstrip(".") + ".")


def _help_epilog() -> str:
    presets = "\n".join(
        f"  {c.name:<13}{c.layers} layers, width {c.width}, {c.heads} heads"
        + (f" ({c.kv_heads} for keys and values)" if c.kv_heads != c.heads else "")
        + f", vocabulary {c.vocab:,}, at most {c.max_seq:,} tokens"
        + ("; transformers' GPT2LMHeadModel (needs transformers)" if c.source == "hf" else "")
        for c in PRESETS.values()
    )
    return (
        f"presets (--preset; default gpt2-small):\n{presets}\n\n"
        "A step is forward, backward and an AdamW step in float32, without and with block "
        "checkpointing; --preset hf-gpt2 --batch 4 --seq 512 prints PyTorch's Mosaic tutorial figures beside it."
    )


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m demos.estimate",
        description=(__doc__ or "").split("\n")[0],
        epilog=_help_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--preset", default="gpt2-small", help=f"{', '.join(PRESETS)} (default gpt2-small)")
    parser.add_argument("--batch", default="8", help="sequences a step (default 8)")
    parser.add_argument("--seq", default="1024", help="tokens a sequence, at most the preset's (default 1024)")
    parser.add_argument("--gpu-gib", default="24", help="the GPU's memory in GiB for the verdict (default 24)")
    parser.add_argument(
        "--kernels", default="cuda", help="whose attention kernels to trace: cuda or cpu (default cuda)"
    )
    parser.add_argument("--json", action="store_true", help="the estimate as one JSON object")
    parser.add_argument("--progress", action="store_true", help="JSON lines: start, then the result")
    try:
        args = parser.parse_args(argv)
        if args.preset not in PRESETS:
            raise BadInput(f"Unknown preset {args.preset!r}; choose one of {', '.join(PRESETS)}.")
        cfg = PRESETS[args.preset]
        batch = _positive_int("--batch", args.batch, 4096)
        seq = _positive_int("--seq", args.seq, cfg.max_seq)
        try:
            gpu_gib = float(args.gpu_gib)
        except ValueError:
            raise BadInput(f"--gpu-gib must be a number, not {args.gpu_gib!r}.") from None
        if not 0 < gpu_gib <= 1e6:
            raise BadInput(f"--gpu-gib must be a positive number of GiB, not {args.gpu_gib}.")
        if args.kernels not in ("cuda", "cpu"):
            raise BadInput(f"Unknown --kernels {args.kernels!r}; choose cuda or cpu.")
        if cfg.source == "hf":
            import importlib.util

            if importlib.util.find_spec("transformers") is None:
                raise BadInput("The hf-gpt2 preset needs the transformers package (pip install '.[demo]').")
    except BadInput as exc:
        print(str(exc), file=sys.stderr)
        return 2
    started = time.perf_counter()
    if args.progress:
        print(json.dumps(fake_start_event()), flush=True)
    result = estimate(args.preset, batch, seq, gpu_gib, args.kernels)
    wall = time.perf_counter() - started
    if args.json or args.progress:
        out = asdict(result)
        out.update(torch=torch.__version__, wall_s=round(wall, 3))
        print(json.dumps({"event": "result", "result": out}) if args.progress else json.dumps(out), flush=True)
    else:
        print(format_estimate(result))
    return 0


def format_estimate(e: Estimate) -> str:
    rows = [
        f"{e.preset}, batch {e.batch} x {e.seq} tokens, {e.dtype}, AdamW, "
        f"attention traced as {e.kernels.upper()} kernels allocate"
    ]
    rows.append(f"{'':22}{'no checkpointing':>18}{'block checkpoints':>19}")
    for label, key in [
        ("parameters", "parameters_bytes"),
        ("gradients at peak", "gradients_bytes"),
        ("optimizer state", "optimizer_state_bytes"),
        ("activations at peak", "activations_bytes"),
        ("temporaries at peak", "temporaries_bytes"),
        ("total peak", "total_bytes"),
    ]:
        a, b = getattr(e.without, key) / GIB, getattr(e.with_checkpointing, key) / GIB
        rows.append(f"{label:22}{a:>14.2f} GiB{b:>15.2f} GiB")
    rows.append(e.verdict)
    if e.reference:
        r = e.reference
        rows.append(
            f"{r['source']}: {r['without_gib']} and {r['with_gib']} GiB (optimizer state plus step peak); "
            f"this estimate: {r['estimate_without_gib']:.2f} and {r['estimate_with_gib']:.2f} GiB."
        )
    return "\n".join(rows)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    raise SystemExit(main())
