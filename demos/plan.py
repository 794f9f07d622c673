"""What to checkpoint so a training step fits in N GiB, planned with fake tensors (nothing allocated).

    python -m demos.plan --model hf-gpt2 --gpu-gib 8 [--batch B] [--seq S] [--json]

The whole step is traced once per checkpointing policy applied to every layer (``none``,
SAC saving matmuls, SAC saving matmuls and attention, full recompute), with CUDA's kernels
assumed (dropout keeps a bool mask, attention is the fused kernel that keeps its output
and a log-sum-exp per row). Each trace gives, per layer, the bytes its forward saves, the
peak of its backward, and the FLOPs its recomputation costs (``FlopCounterMode``);
``offload`` follows from ``none`` (its saved bytes leave the GPU and come back for the
layer's backward). The plan is then the number of layers given each policy that keeps the
step's peak within the GPU's memory less the margin, with the fewest recomputed FLOPs
(every count is enumerated; offloading is priced as FLOPs at a stated exchange rate). The
chosen plan is applied by the code it prints and traced again to check the prediction.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from demos.errors import BadInput
from demos.memory import BACKWARD, FORWARD, LiveTensorMeter, backward
from demos.plan_models import PRESETS, Built, Preset, build, needs_transformers, transformers_missing
from demos.report import fake_start_event
from demos.strategies import ATTENTION_OPS, SAVED_OPS

log = logging.getLogger(__name__)

GIB = 1024**3
#: The policies, in the order the plan lists them.
POLICIES = ("none", "sac-mm", "sac-mm-attn", "full", "offload")
POLICY_ABOUT = {
    "none": "no checkpointing: every activation kept",
    "sac-mm": "selective checkpointing: matmul outputs saved, the rest (attention included) recomputed",
    "sac-mm-attn": "selective checkpointing: matmul and attention outputs saved, the rest recomputed",
    "full": "the whole layer recomputed in backward (torch.utils.checkpoint)",
    "offload": "saved activations moved to CPU memory and back (save_on_cpu), nothing recomputed",
}
TRACED = ("none", "sac-mm", "sac-mm-attn", "full")
DTYPES = ("fp32", "bf16-autocast", "bf16")
OPTIMIZERS = ("adamw", "adam", "sgd", "adapters")
#: Offloading's price in FLOPs per byte moved: a GPU's dense throughput over the host link's
#: (400 TFLOP/s over 25 GB/s, PCIe 4 x16 in practice), with no overlap assumed.
OFFLOAD_FLOPS_PER_BYTE = 16_000
#: The margin left for the CUDA context and the allocator's fragmentation, unless given.
DEFAULT_MARGIN_FRACTION = 0.10
ADAPTER_RANK = 16


# -- CUDA's kernels, on a CPU trace -----------------------------------------------------


@contextmanager
def cuda_kernels() -> Iterator[None]:
    """Dropout and attention allocate as CUDA's kernels do, for the duration.

    CPU dropout keeps a float mask (``bernoulli_`` then multiply) where CUDA's fused
    ``native_dropout`` keeps a bool one: dropout is routed through ``native_dropout``.
    CPU attention with dropout falls back to the math path and keeps the s x s weights;
    CUDA's flash and memory-efficient kernels drop inside the kernel and keep the output
    and a log-sum-exp per row, which is what the fused CPU kernel without dropout keeps.
    """
    dropout, sdpa = F.dropout, F.scaled_dot_product_attention

    def fused_dropout(  # F.dropout's signature; `inplace` is accepted and not needed
        x: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False  # noqa: ARG001
    ) -> torch.Tensor:
        if not training or p == 0.0:
            return x
        out: torch.Tensor = torch.native_dropout(x, p, True)[0]
        return out

    def fused_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if len(args) >= 2:
            args = (args[0], 0.0, *args[2:])
        kwargs.pop("dropout_p", None)
        out: torch.Tensor = sdpa(q, k, v, *args, **kwargs)
        return out

    F.dropout = fused_dropout  # type: ignore[assignment]
    F.scaled_dot_product_attention = fused_sdpa  # type: ignore[assignment]
    try:
        yield
    finally:
        F.dropout = dropout
        F.scaled_dot_product_attention = sdpa


# -- applying a policy (the same functions the printed code calls) ------------------------


def sac_ops(policy: str) -> list[Any]:
    """The operators a SAC policy saves (exact overloads)."""
    return list(SAVED_OPS) + (list(ATTENTION_OPS) if policy == "sac-mm-attn" else [])


def wrapper_for(policy: str) -> Callable[[nn.Module], nn.Module]:
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper, offload_wrapper
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    if policy == "full":
        return checkpoint_wrapper
    if policy == "offload":
        return offload_wrapper
    if policy in ("sac-mm", "sac-mm-attn"):
        context_fn = functools.partial(create_selective_checkpoint_contexts, sac_ops(policy))
        return functools.partial(checkpoint_wrapper, context_fn=context_fn)
    raise ValueError(f"no wrapper for {policy!r}")


def apply_policies(model: nn.Module, layers: list[nn.Module], assignment: list[str]) -> None:
    """Wrap ``layers[i]`` for ``assignment[i]`` with ``apply_activation_checkpointing``."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing

    for policy in POLICIES:
        if policy == "none":
            continue
        chosen = {id(layer) for layer, p in zip(layers, assignment, strict=True) if p == policy}
        if chosen:
            apply_activation_checkpointing(
                model, checkpoint_wrapper_fn=wrapper_for(policy), check_fn=lambda m, c=chosen: id(m) in c
            )


# -- the meter with the planner's bookkeeping --------------------------------------------


@dataclass(frozen=True)
class LiveTensor:
    """A tensor alive at the traced step's peak: its size, phase, region and the op that made it."""

    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    phase: str
    region: str
    op: str


def op_flops(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    """FLOPs of one operator by ``torch.utils.flop_counter``'s formulas (matmuls and attention).

    ``FlopCounterMode`` itself is not used: its module tracker keeps a checkpointed layer's
    recomputed activations alive until garbage collection, which would distort the meter.
    The fused CPU attention kernel (the CPU trace's stand-in for CUDA's) is counted as
    ``scaled_dot_product_attention``; any other operator counts one FLOP per output element
    (``FlopCounterMode`` counts it as zero), views and copies none.
    """
    from torch.utils.flop_counter import flop_registry, sdpa_backward_flop_count, sdpa_flop_count

    packet = getattr(func, "_overloadpacket", None)
    if packet is _aten._scaled_dot_product_flash_attention_for_cpu:
        return int(sdpa_flop_count(args[0].shape, args[1].shape, args[2].shape))
    if packet is _aten._scaled_dot_product_flash_attention_for_cpu_backward:
        return int(sdpa_backward_flop_count(args[0].shape, args[1].shape, args[2].shape, args[3].shape))
    formula = flop_registry.get(packet)
    if formula is None:
        if func in _FREE or not isinstance(out, torch.Tensor):
            return 0
        return int(out.numel())  # an elementwise or reduction operator: one FLOP per output element
    return int(formula(*args, **kwargs, out_val=out))


_aten = torch.ops.aten
_FREE = frozenset(
    getattr(_aten, name).default
    for name in (
        "view",
        "_unsafe_view",
        "t",
        "transpose",
        "expand",
        "permute",
        "detach",
        "alias",
        "copy_",
        "clone",
        "empty",
        "empty_like",
        "zeros",
        "zeros_like",
        "ones_like",
        "new_empty_strided",
        "empty_strided",
        "slice",
        "select",
        "unsqueeze",
        "squeeze",
        "split",
        "unbind",
        "_to_copy",
        "lift_fresh",
        "arange",
        "randint",
        "as_strided",
        "reshape",
        "contiguous",
    )
    if hasattr(_aten, name) and hasattr(getattr(_aten, name), "default")
)


class PlanMeter(LiveTensorMeter):
    """The live-tensor meter, also keeping per-layer windows, regions and what is live at the peak."""

    def __init__(self) -> None:
        super().__init__()
        self.region = "stem"
        self.window: int | None = None
        self.window_peak = 0
        self.outside_peak = 0
        self.meta: dict[int, LiveTensor] = {}
        self._op = ""
        self.peak_op = ""
        self.peak_region = ""
        self.peak_phase = ""
        self.flops = 0
        # backward's own allocations still live that are not parameter gradients (MemTracker's TEMP)
        self.temp_live = 0
        self.temp_at_backward_peak = 0
        self.backward_peak = 0
        self._temp: set[int] = set()

    def mark_gradient(self, t: torch.Tensor) -> None:
        serial = self._serial_of.get(int(t.untyped_storage()._cdata))
        if serial is not None and serial in self._temp:
            self._temp.discard(serial)
            self.temp_live -= self.meta[serial].nbytes

    def _released(self, key: int, serial: int, nbytes: int) -> None:
        if serial in self._temp:
            self._temp.discard(serial)
            self.temp_live -= nbytes
        super()._released(key, serial, nbytes)

    def _track(self, t: torch.Tensor, input_keys: set[int]) -> None:
        before = self._next_serial
        super()._track(t, input_keys)
        if self._next_serial == before:
            return
        serial = before
        self.meta[serial] = LiveTensor(
            tuple(t.shape),
            str(t.dtype).replace("torch.", ""),
            int(t.untyped_storage().nbytes()),
            self.phase,
            self.region,
            self._op,
        )
        if self._peak_event == len(self._events) - 1:
            self.peak_op, self.peak_region, self.peak_phase = self._op, self.region, self.phase
        if self.phase != FORWARD:
            self._temp.add(serial)
            self.temp_live += self.meta[serial].nbytes
            if self.live_bytes > self.backward_peak:
                self.backward_peak = self.live_bytes
                self.temp_at_backward_peak = self.temp_live
        if self.window is None:
            self.outside_peak = max(self.outside_peak, self.live_bytes)
        else:
            self.window_peak = max(self.window_peak, self.live_bytes)

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        self._op = str(func.__name__) if hasattr(func, "__name__") else str(func)
        out = super().__torch_dispatch__(func, types, args, kwargs)
        self.flops += op_flops(func, args, kwargs or {}, out)
        return out

    def live_at_peak(self) -> list[tuple[int, LiveTensor]]:
        return [(s, self.meta[s]) for s in self.live_bytes_at_peak() if s in self.meta]


@dataclass
class StepTrace:
    """One fake-traced forward and backward with per-layer figures (bytes above the static)."""

    peak: int
    saved: int  # live at the end of the forward
    flops: int
    after_fwd: list[int]
    before_fwd: list[int]
    window_peak: list[int]
    window_grads: list[int]
    outside_peak: int
    peak_op: str
    peak_region: str
    peak_phase: str
    at_peak: dict[str, int]
    temp_at_backward_peak: int  # MemTracker's TEMP at the backward's peak
    loop_bytes: int  # the previous step's output the loop still held during the forward
    largest_at_peak: list[LiveTensor] = field(default_factory=list)


def _first_tensor(items: Any) -> torch.Tensor | None:
    if isinstance(items, torch.Tensor):
        return items
    if isinstance(items, (tuple, list)):
        for item in items:
            found = _first_tensor(item)
            if found is not None:
                return found
    if isinstance(items, dict):
        return _first_tensor(list(items.values()))
    return None


def _grad_bytes(params: list[nn.Parameter]) -> int:
    return sum(p.grad.untyped_storage().nbytes() for p in params if p.grad is not None)


def trace_step(built: Built, ids: torch.Tensor, autocast: bool) -> StepTrace:  # noqa: C901 - the hooks close over it
    """Trace forward and backward of ``built`` on ``ids`` (fake or real tensors alike)."""
    n = len(built.layers)
    meter = PlanMeter()
    after, before = [0] * n, [0] * n
    wpeak, wgrads = [0] * n, [0] * n
    params = list({id(p): p for p in built.model.parameters() if p.requires_grad}.values())
    handles = [p.register_post_accumulate_grad_hook(lambda q: meter.mark_gradient(q.grad)) for p in params]

    def start_window(j: int) -> None:
        if meter.window is not None:
            end_window(meter.window)
        meter.window = j
        meter.window_peak = meter.live_bytes
        meter.region = "layers"
        wgrads[j] = _grad_bytes(params)

    def end_window(j: int) -> None:
        if meter.window == j:
            wpeak[j] = max(meter.window_peak, meter.live_bytes)
            meter.window = None
            meter.region = "stem" if j == 0 else "layers"

    for j, layer in enumerate(built.layers):

        def pre(_module: nn.Module, args: Any, kwargs: Any, j: int = j) -> None:
            if meter.phase != FORWARD:
                return
            before[j] = meter.live_bytes
            meter.region = "layers"
            x = _first_tensor((args, kwargs))
            if x is not None and x.requires_grad:
                x.register_hook(lambda _grad, j=j: end_window(j))

        def post(_module: nn.Module, _args: Any, _kwargs: Any, out: Any, j: int = j) -> None:
            if meter.phase != FORWARD:
                return
            after[j] = meter.live_bytes
            meter.region = "head" if j == n - 1 else "layers"
            y = _first_tensor(out)
            if y is not None and y.requires_grad:
                y.register_hook(lambda _grad, j=j: start_window(j))

        handles.append(layer.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(layer.register_forward_hook(post, with_kwargs=True))
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else _null()
    try:
        with meter:
            previous = None
            if built.loop_output is not None:
                # the loop's variable still holds the previous step's output during this forward
                meter.region = "loop"
                previous = torch.empty(ids.shape[0], ids.shape[1], built.loop_output[-1])
                meter.region = "stem"
            with amp:
                loss = built.loss(ids)
            loop_bytes = meter.live_bytes
            del previous  # ``output = model(inp)`` drops it once the new output exists
            loop_bytes -= meter.live_bytes
            saved = meter.live_bytes
            meter.set_phase(BACKWARD)
            meter.region = "head"
            backward(loss)
            del loss
    finally:
        for h in handles:
            h.remove()
    grads = {int(p.grad.untyped_storage()._cdata) for p in params if p.grad is not None}
    live = meter.live_at_peak()
    grad_serials = {meter._serial_of[k] for k in grads if k in meter._serial_of}
    parts: dict[str, int] = {"gradients": 0, "saved activations": 0, "transients": 0, "LM head": 0}
    for serial, t in live:
        if t.region == "loop":
            parts["the loop's previous output"] = parts.get("the loop's previous output", 0) + t.nbytes
        elif serial in grad_serials:
            parts["gradients"] += t.nbytes
        elif t.region == "head":
            parts["LM head"] += t.nbytes
        elif t.phase == FORWARD:
            parts["saved activations"] += t.nbytes
        else:
            parts["transients"] += t.nbytes
    largest = sorted((t for _, t in live), key=lambda t: -t.nbytes)[:4]
    return StepTrace(
        peak=meter.peak_bytes,
        saved=saved,
        flops=meter.flops,
        after_fwd=after,
        before_fwd=before,
        window_peak=wpeak,
        window_grads=wgrads,
        outside_peak=meter.outside_peak,
        peak_op=meter.peak_op,
        peak_region=meter.peak_region,
        peak_phase=meter.peak_phase,
        at_peak=parts,
        largest_at_peak=largest,
        temp_at_backward_peak=meter.temp_at_backward_peak,
        loop_bytes=loop_bytes,
    )


@contextmanager
def _null() -> Iterator[None]:
    yield


# -- the request and the model under it ------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What the planner is asked: a model, batch, sequence, dtype, optimizer, shards and GPU size."""

    model: str
    batch: int
    seq: int
    dtype: str = "fp32"
    optimizer: str = "adamw"
    shards: int = 1
    gpu_gib: float = 24.0
    margin_gib: float | None = None
    policies: tuple[str, ...] = POLICIES
    layers: int | None = None
    width: int | None = None
    vocab: int | None = None
    #: "peak": the step's simultaneous peak, optimizer state included; "torch-bound": sac_milp's
    #: model (activations at the end of forward plus backward temporaries at their peak, less
    #: what checkpointing discards, plus parameters over the shards; no optimizer state).
    accounting: str = "peak"

    @property
    def margin(self) -> float:
        return self.gpu_gib * DEFAULT_MARGIN_FRACTION if self.margin_gib is None else self.margin_gib


class LoRA(nn.Module):
    """A frozen linear map plus a trainable low-rank update (x A^T B^T)."""

    def __init__(self, base: nn.Module, fan_in: int, fan_out: int, rank: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(rank, fan_in, dtype=dtype) / fan_in**0.5)
        self.b = nn.Parameter(torch.zeros(fan_out, rank, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.base(x) + F.linear(F.linear(x, self.a), self.b)
        return out


def add_adapters(built: Built, rank: int = ADAPTER_RANK) -> None:
    """Freeze every parameter, then give each linear map in the layers a trainable LoRA update."""
    for p in built.model.parameters():
        p.requires_grad_(False)
    for layer in built.layers:
        for _name, child in list(layer.named_modules()):
            for attr, sub in list(child.named_children()):
                kind = type(sub).__name__
                if kind not in ("Linear", "Conv1D"):
                    continue
                w = sub.weight
                fan_in, fan_out = (w.shape[1], w.shape[0]) if kind == "Linear" else (w.shape[0], w.shape[1])
                setattr(child, attr, LoRA(sub, int(fan_in), int(fan_out), rank, w.dtype))


def make_model(req: Request, preset: Preset) -> Built:
    default = torch.get_default_dtype()
    if req.dtype == "bf16":  # built in bf16 (``.to()`` cannot swap a fake parameter's storage)
        torch.set_default_dtype(torch.bfloat16)
    try:
        built = build(preset, req.layers, req.width, req.vocab)
    finally:
        torch.set_default_dtype(default)
    if req.optimizer == "adapters":
        add_adapters(built)
    built.model.train()
    return built


def _ids(req: Request, preset: Preset) -> torch.Tensor:
    vocab = req.vocab if req.vocab is not None else preset.vocab
    return torch.randint(0, vocab, (req.batch, req.seq))


@dataclass(frozen=True)
class Static:
    """Memory that lives through the step (bytes, per GPU)."""

    parameters: int
    optimizer_state: int
    layer_gather: int  # FSDP: one layer's parameters gathered whole
    trainable: int  # bytes of the trainable parameters (their gradients' size)
    optimizer_step_transient: int


def optimizer_state_bytes(model: nn.Module, optimizer: str) -> int:
    trainable = [p for p in {id(p): p for p in model.parameters()}.values() if p.requires_grad]
    per = {"adamw": 2, "adam": 2, "adapters": 2, "sgd": 1}[optimizer]
    steps = 4 if per == 2 else 0
    return sum(per * p.numel() * p.element_size() + steps for p in trainable)


def _static(req: Request, built: Built) -> Static:
    params = list({id(p): p for p in built.model.parameters()}.values())
    pbytes = sum(p.numel() * p.element_size() for p in params)
    trainable = [p for p in params if p.requires_grad]
    tbytes = sum(p.numel() * p.element_size() for p in trainable)
    layer_bytes = sum(p.numel() * p.element_size() for p in built.layers[0].parameters()) if built.layers else 0
    largest = max((p.numel() * p.element_size() for p in trainable), default=0)
    # single-tensor AdamW's temporaries for its largest parameter (see demos.estimate): about two of its size
    transient = (2 if req.optimizer != "sgd" else 1) * largest // req.shards
    return Static(
        parameters=pbytes // req.shards,
        optimizer_state=optimizer_state_bytes(built.model, req.optimizer) // req.shards,
        layer_gather=layer_bytes - layer_bytes // req.shards if req.shards > 1 else 0,
        trainable=tbytes,
        optimizer_step_transient=transient,
    )


# -- per-policy layer figures and the composition ---------------------------------------


@dataclass(frozen=True)
class PolicyCost:
    """One checkpoint policy's price per layer: bytes kept, FLOPs recomputed, bytes moved."""

    policy: str
    saved_per_layer: int  # on the GPU
    recomputed_flops_per_layer: int
    moved_bytes_per_layer: int  # offload: out and back
    cost_per_layer: int  # recomputed FLOPs, offloading priced in FLOPs


@dataclass
class Stats:
    """What the traces measured, from which the planner prices every split of the layers."""

    layers: int
    costs: dict[str, PolicyCost]
    window: dict[str, list[int]]  # per policy: the layer's backward peak, FSDP-adjusted, minus j*s
    outside: int  # the none trace's peak outside the layers' backward, minus L * s_none
    base_flops: int
    traces: dict[str, StepTrace]
    bound_base: int = 0  # torch-bound: the none plan's bound, parameters over the shards included


def layer_stats(req: Request, preset: Preset) -> tuple[Stats, Static]:
    """The per-policy figures of ``req``'s model (remembered per model and shape: a budget changes none)."""
    from dataclasses import replace

    return _layer_stats(replace(req, gpu_gib=1.0, margin_gib=None, accounting="peak"), preset)


@functools.lru_cache(maxsize=16)
def _layer_stats(req: Request, preset: Preset) -> tuple[Stats, Static]:
    traces: dict[str, StepTrace] = {}
    static: Static | None = None
    policies = [p for p in TRACED if p in req.policies or p == "none"]
    with FakeTensorMode(), cuda_kernels():
        for policy in policies:
            torch.manual_seed(0)
            built = make_model(req, preset)
            if static is None:
                static = _static(req, built)
            apply_policies(built.model, built.layers, [policy] * len(built.layers))
            traces[policy] = trace_step(built, _ids(req, preset), req.dtype == "bf16-autocast")
    assert static is not None
    n = len(traces["none"].after_fwd)
    keep = 1.0 - 1.0 / req.shards
    costs: dict[str, PolicyCost] = {}
    window: dict[str, list[int]] = {}
    for policy, t in traces.items():
        s = (t.after_fwd[-1] - t.before_fwd[0]) // n
        rec = max(0, (t.flops - traces["none"].flops) // n)
        costs[policy] = PolicyCost(policy, s, rec, 0, rec)
        window[policy] = [t.window_peak[j] - int(keep * t.window_grads[j]) - j * s for j in range(n)]
    none = costs["none"]
    if "offload" in req.policies:
        moved = 2 * none.saved_per_layer
        costs["offload"] = PolicyCost("offload", 0, 0, moved, moved * OFFLOAD_FLOPS_PER_BYTE)
        window["offload"] = list(window["none"])
    outside = traces["none"].outside_peak - n * none.saved_per_layer
    t0 = traces["none"]
    bound = t0.saved + t0.loop_bytes + t0.temp_at_backward_peak + static.parameters
    stats = Stats(n, costs, window, outside, t0.flops, traces, bound)
    return stats, static


def composed_peak(stats: Stats, assignment: list[str]) -> int:
    """The step's peak (above the static memory) for a policy per layer, from the per-policy traces."""
    total_saved = sum(stats.costs[p].saved_per_layer for p in assignment)
    peak = stats.outside + total_saved
    prefix = 0
    for j, p in enumerate(assignment):
        peak = max(peak, stats.window[p][j] + prefix)
        prefix += stats.costs[p].saved_per_layer
    return peak


def order_for(stats: Stats, counts: dict[str, int]) -> list[str]:
    """Layers in forward order: the policies whose backward costs most memory first, ``none`` last.

    The first layers' backward runs last, when the fewest saved activations remain.
    """
    n = stats.layers
    heavy = sorted(counts, key=lambda p: (p == "none", -(stats.window[p][n - 1] + stats.costs[p].saved_per_layer)))
    return [p for p in heavy for _ in range(counts[p])]


@dataclass(frozen=True)
class Point:
    """One split of the layers among the policies, with its peak and its cost."""

    counts: dict[str, int]
    peak_bytes: int  # the whole step per GPU, static included
    recomputed_flops: int
    cost: int


def enumerate_points(
    stats: Stats, static: Static, policies: tuple[str, ...], shards: int, accounting: str = "peak"
) -> list[Point]:
    """Every split of the layers among the policies: its peak and its cost."""
    names = [p for p in POLICIES if p in policies and p in stats.costs]
    n = stats.layers
    none = stats.costs["none"].saved_per_layer
    points = []
    for split in _compositions(n, len(names)):
        counts = {p: c for p, c in zip(names, split, strict=True) if c}
        if accounting == "torch-bound":
            discarded = sum((none - stats.costs[p].saved_per_layer) * c for p, c in counts.items())
            peak = stats.bound_base - discarded
        else:
            order = order_for(stats, counts)
            peak = _with_optimizer(static, composed_peak(stats, order), shards)
        rec = sum(stats.costs[p].recomputed_flops_per_layer * c for p, c in counts.items())
        cost = sum(stats.costs[p].cost_per_layer * c for p, c in counts.items())
        points.append(Point(counts, peak, rec, cost))
    return points


def _with_optimizer(static: Static, step_peak: int, shards: int) -> int:
    resident = static.parameters + static.optimizer_state
    optimizer_step = resident + static.trainable // shards + static.optimizer_step_transient
    return max(resident + static.layer_gather + step_peak, optimizer_step)


def _compositions(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every way to write n as an ordered sum of k counts >= 0."""
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        prev = -1
        out = []
        for b in (*bars, n + k - 1):
            out.append(b - prev - 1)
            prev = b
        yield tuple(out)


def frontier(points: list[Point]) -> list[Point]:
    """The points no other beats on both peak and cost, by rising peak."""
    best: list[Point] = []
    for p in sorted(points, key=lambda p: (p.peak_bytes, p.cost)):
        if not best or p.cost < best[-1].cost:
            best.append(p)
    return best


def choose(points: list[Point], usable: int) -> Point | None:
    fits = [p for p in points if p.peak_bytes <= usable]
    return min(fits, key=lambda p: (p.cost, p.peak_bytes)) if fits else None


# -- the plan ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The planner's answer: whether the step fits, the split chosen, its code and its figures."""

    request: dict[str, Any]
    preset: str
    source: str
    layers: int
    usable_bytes: int
    margin_gib: float
    fits: bool
    sentence: str
    chosen: dict[str, int] | None
    assignment: list[str] | None
    predicted_peak_bytes: int | None  # the chosen plan traced whole (the emitted code applied)
    composed_peak_bytes: int | None
    least_peak_bytes: int
    recomputed_flops: int | None
    step_flops: int
    policies: list[dict[str, Any]]
    breakdown: dict[str, int] | None
    at_peak: str | None
    advice: str | None
    frontier: list[dict[str, Any]]
    code: str | None
    assumptions: list[str]
    #: PyTorch's planner baseline (ilp_utils.get_peak_memory_runtime_baseline) on our trace:
    #: parameters + activations at the end of the forward + backward temporaries at its peak
    #: (no optimizer state, no FSDP); a bound, not a simultaneous peak.
    torch_baseline_bytes: int
    wall_s: float = 0.0


def plan(req: Request) -> Plan:
    started = time.perf_counter()
    preset = PRESETS[req.model]
    stats, static = layer_stats(req, preset)
    usable = int((req.gpu_gib - req.margin) * GIB)
    points = enumerate_points(stats, static, req.policies, req.shards, req.accounting)
    front = frontier(points)
    none_trace = stats.traces["none"]
    least = min(p.peak_bytes for p in points)
    pick = choose(points, usable)
    front_rows = [
        {
            "counts": p.counts,
            "peak_bytes": p.peak_bytes,
            "recomputed_flops": p.recomputed_flops,
            "cost": p.cost,
            "chosen": pick is not None and p.counts == pick.counts,
        }
        for p in front
    ]
    if pick is not None and not any(r["chosen"] for r in front_rows):
        front_rows.append(
            {
                "counts": pick.counts,
                "peak_bytes": pick.peak_bytes,
                "recomputed_flops": pick.recomputed_flops,
                "cost": pick.cost,
                "chosen": True,
            }
        )
    policies = [
        {
            "policy": c.policy,
            "about": POLICY_ABOUT[c.policy],
            "saved_per_layer_bytes": c.saved_per_layer,
            "recomputed_flops_per_layer": c.recomputed_flops_per_layer,
            "moved_bytes_per_layer": c.moved_bytes_per_layer,
        }
        for c in stats.costs.values()
    ]
    shape = (
        f"{req.model}, batch {req.batch} x {req.seq} tokens, {req.dtype}, {req.optimizer}"
        + (f", {req.shards} FSDP shards" if req.shards > 1 else "")
        + (", counted as sac_milp bounds it" if req.accounting == "torch-bound" else "")
    )
    assumptions = [
        "Fake tensors: nothing allocated; CUDA's kernels assumed (dropout keeps a bool mask, fused attention).",
        f"Margin for the CUDA context and fragmentation: {req.margin:g} GiB of the {req.gpu_gib:g} GiB"
        + (" (10% unless --margin-gib)." if req.margin_gib is None else "."),
        f"Offloading priced at {OFFLOAD_FLOPS_PER_BYTE:,} FLOPs per byte moved (400 TFLOP/s over 25 GB/s, no overlap).",
        "The optimizer step is single-tensor (foreach=False); its state has the parameters' dtype.",
    ]
    if req.accounting == "torch-bound":
        assumptions.append(
            "Counted as torch.distributed._tools.sac_ilp.sac_milp does: parameters over the shards, activations at "
            "the end of the forward and backward temporaries at their peak, less what checkpointing discards; "
            "no optimizer state."
        )
    if req.shards > 1:
        assumptions.append(
            "FSDP: parameters, gradients and optimizer state divided by the shards; one layer gathered whole."
        )
    base = dict(
        request=asdict(req),
        preset=req.model,
        source=_source(preset),
        layers=stats.layers,
        usable_bytes=usable,
        margin_gib=req.margin,
        least_peak_bytes=least,
        step_flops=stats.base_flops,
        policies=policies,
        frontier=front_rows,
        assumptions=assumptions,
        torch_baseline_bytes=static.parameters * req.shards
        + none_trace.saved
        + none_trace.loop_bytes
        + none_trace.temp_at_backward_peak,
    )
    if pick is None:
        sentence = (
            f"No plan fits {shape} in {req.gpu_gib:g} GiB less the {req.margin:g} GiB margin: the least any plan "
            f"reaches is {least / GIB:.2f} GiB."
        )
        return Plan(
            fits=False,
            sentence=sentence,
            chosen=None,
            assignment=None,
            predicted_peak_bytes=None,
            composed_peak_bytes=None,
            recomputed_flops=None,
            breakdown=None,
            at_peak=None,
            advice=None,
            code=None,
            wall_s=round(time.perf_counter() - started, 3),
            **base,
        )
    assignment = order_for(stats, pick.counts)
    code = emit_code(preset, assignment)
    if len(set(assignment)) == 1 and assignment[0] in stats.traces:
        traced, built_static = stats.traces[assignment[0]], static  # already traced whole, with the same code
    else:
        traced, built_static = trace_plan(req, preset, assignment)
    # FSDP: the gradients live at the peak are held as shards, as the composition counts them
    sharded_away = int((1.0 - 1.0 / req.shards) * traced.at_peak["gradients"])
    predicted = _with_optimizer(built_static, traced.peak - sharded_away, req.shards)
    breakdown = {
        "parameters": built_static.parameters + built_static.layer_gather,
        "optimizer state": built_static.optimizer_state,
        **{k: v for k, v in traced.at_peak.items()},
    }
    breakdown["gradients"] -= sharded_away
    resident = built_static.parameters + built_static.optimizer_state
    optimizer_peak = resident + built_static.trainable // req.shards + built_static.optimizer_step_transient
    at_peak, advice = explain_peak(
        traced, req, preset, optimizer_peak > resident + built_static.layer_gather + traced.peak
    )
    rec_share = pick.recomputed_flops / stats.base_flops if stats.base_flops else 0.0
    summary = ", ".join(f"{c} x {p}" for p, c in pick.counts.items())
    if req.accounting == "torch-bound":
        peak_text = (
            f"sac_milp's bound {pick.peak_bytes / GIB:.2f} GiB of {usable / GIB:.2f} GiB usable (the step's "
            f"traced peak with optimizer state: {predicted / GIB:.2f} GiB)"
        )
    else:
        peak_text = f"peak {predicted / GIB:.2f} GiB of {usable / GIB:.2f} GiB usable"
    sentence = (
        f"{shape} fits in {req.gpu_gib:g} GiB with {summary}: {peak_text}, "
        f"recomputing {pick.recomputed_flops / 1e9:,.1f} GFLOPs a step "
        f"({rec_share:.2%} of the step's {stats.base_flops / 1e12:,.2f} TFLOPs)."
    )
    return Plan(
        fits=True,
        sentence=sentence,
        chosen=pick.counts,
        assignment=assignment,
        predicted_peak_bytes=predicted,
        composed_peak_bytes=pick.peak_bytes,
        recomputed_flops=pick.recomputed_flops,
        breakdown=breakdown,
        at_peak=at_peak,
        advice=advice,
        code=code,
        wall_s=round(time.perf_counter() - started, 3),
        **base,
    )


def _source(preset: Preset) -> str:
    if preset.family == "torch-test":
        from demos.plan_models import _sac_test_model

        with FakeTensorMode():
            return _sac_test_model(1, preset.heads, preset.heads, 64, 16, 0.0)[1]
    return {"demo": "demos.models", "hf": "transformers GPT2LMHeadModel", "llama": "demos.models.TransformerLM"}[
        preset.family
    ]


def trace_plan(req: Request, preset: Preset, assignment: list[str]) -> tuple[StepTrace, Static]:
    """Trace the whole step with the printed code applied (offloaded layers counted as moved)."""
    with FakeTensorMode(), cuda_kernels():
        torch.manual_seed(0)
        built = make_model(req, preset)
        static = _static(req, built)
        run_emitted(emit_code(preset, assignment, offload_as="none"), built.model)
        t = trace_step(built, _ids(req, preset), req.dtype == "bf16-autocast")
    return t, static


def explain_peak(t: StepTrace, req: Request, preset: Preset, optimizer: bool) -> tuple[str, str]:
    vocab = req.vocab if req.vocab is not None else preset.vocab
    big = ", ".join(f"{list(x.shape)} {x.dtype} ({x.nbytes / 2**20:,.0f} MiB, {x.op})" for x in t.largest_at_peak[:3])
    where = f"{t.peak_phase} of the {t.peak_region}" if t.peak_region != "layers" else f"{t.peak_phase} of the layers"
    at = f"The peak is in the {where}, at {t.peak_op}; largest live: {big}."
    if optimizer:
        return at, "The optimizer step is the peak: sharding its state (FSDP) or a lighter optimizer moves it."
    logits = [x for x in t.largest_at_peak if x.shape and x.shape[-1] == vocab]
    if t.peak_region == "head" or logits:
        return at, (
            "The LM head's logits (batch x tokens x vocabulary) hold the peak: a chunked cross-entropy "
            "(the loss over slices of the sequence, or a fused linear cross-entropy) moves it; checkpointing cannot."
        )
    return (
        at,
        "The layers' activations hold the peak: checkpointing more layers, or a policy that saves less, moves it.",
    )


# -- the code that applies the plan ------------------------------------------------------


def emit_code(preset: Preset, assignment: list[str], offload_as: str = "offload") -> str:
    """Python that applies ``assignment`` to ``model`` (runs as printed; ``model`` must exist)."""
    counts = {p: assignment.count(p) for p in POLICIES if assignment.count(p)}
    uniform = len(counts) == 1
    lines: list[str] = []
    if set(counts) == {"none"}:
        return "# No checkpointing needed: train as is.\n"
    sac = [p for p in counts if p.startswith("sac")]
    if preset.family == "hf" and uniform and assignment[0] in ("full", "sac-mm", "sac-mm-attn"):
        p = assignment[0]
        lines += [
            "import functools",
            "import torch",
            "from torch.utils.checkpoint import create_selective_checkpoint_contexts",
            "",
        ]
        kwargs = '{"use_reentrant": False}'
        if p != "full":
            lines += [_ops_line(p), ""]
            kwargs = (
                '{"use_reentrant": False, "context_fn": functools.partial(create_selective_checkpoint_contexts, SAVE)}'
            )
        lines.append(f"model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={kwargs})")
        return "\n".join(lines) + "\n"
    lines += [
        "import functools",
        "import torch",
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (",
        "    apply_activation_checkpointing, checkpoint_wrapper, offload_wrapper)",
        "from torch.utils.checkpoint import create_selective_checkpoint_contexts",
        "",
        f"layers = list({preset_expr(preset)})",
    ]
    for p in counts:
        if p == "none":
            continue
        name = p.replace("-", "_")
        spans = [f"layers[{a}:{b}]" for a, b in _runs(assignment, p)]
        sets = " + ".join(spans)
        lines.append(f"{name} = {{id(m) for m in {sets}}}  # {POLICY_ABOUT[p]}")
    for p in sac:
        lines.append(_ops_line(p, p.replace("-", "_").upper()))
    for p in counts:
        if p == "none":
            continue
        name = p.replace("-", "_")
        if p == "full":
            fn = "checkpoint_wrapper"
        elif p == "offload":
            fn = "offload_wrapper" if offload_as == "offload" else "lambda m: m  # offload: traced as kept"
        else:
            context = f"functools.partial(create_selective_checkpoint_contexts, {name.upper()})"
            fn = f"functools.partial(checkpoint_wrapper, context_fn={context})"
        if p == "offload" and offload_as != "offload":
            continue
        lines.append(
            f"apply_activation_checkpointing(model, checkpoint_wrapper_fn={fn}, check_fn=lambda m: id(m) in {name})"
        )
    return "\n".join(lines) + "\n"


def _runs(assignment: list[str], policy: str) -> list[tuple[int, int]]:
    """The [start, end) spans of consecutive layers given ``policy``."""
    spans: list[tuple[int, int]] = []
    for j, p in enumerate(assignment):
        if p != policy:
            continue
        if spans and spans[-1][1] == j:
            spans[-1] = (spans[-1][0], j + 1)
        else:
            spans.append((j, j + 1))
    return spans


def preset_expr(preset: Preset) -> str:
    return {"demo": "model.body", "hf": "model.transformer.h", "llama": "model.blocks", "torch-test": "model.layers"}[
        preset.family
    ]


def _ops_line(policy: str, name: str = "SAVE") -> str:
    ops = ", ".join(f"torch.ops.aten.{op.overloadpacket.__name__}.{op._overloadname}" for op in sac_ops(policy))
    return f"{name} = [{ops}]"


def run_emitted(code: str, model: nn.Module) -> None:
    """Run the printed code on ``model`` (as a user pastes it)."""
    exec(compile(code, "<plan>", "exec"), {"model": model, "__name__": "plan"})  # noqa: S102


# -- the plan checked on the CPU -------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """A plan run for real on the CPU at a reduced size against its prediction at that size."""

    width: int
    vocab: int
    seq: int
    batch: int
    assignment: list[str]
    predicted_peak_bytes: int  # composed from the per-policy fake traces at the reduced size
    measured_peak_bytes: int  # the CPU allocator's events (torch.profiler)
    meter_peak_bytes: int  # the live-tensor meter on the real run
    predicted_saved_bytes: int
    measured_saved_bytes: int  # live at the end of the real forward, the printed code applied
    error_pct: float


def check_on_cpu(req: Request, assignment: list[str], factor: int = 8) -> Check:
    """Run ``assignment`` (offload counted as kept: the CPU has nowhere to offload to) on the CPU.

    Width, vocabulary and sequence are divided by ``factor`` (heads and the layer's shape
    ratios kept); the prediction is composed, as the plan's is, from fake traces at that size.
    """
    from demos.memory import profiler_allocations
    from demos.plan_models import scaled_shape

    preset = PRESETS[req.model]
    width, vocab, seq, batch = scaled_shape(preset, factor)
    kept = ["none" if p == "offload" else p for p in assignment]
    small = Request(
        req.model,
        batch,
        seq,
        req.dtype,
        req.optimizer,
        1,
        req.gpu_gib,
        req.margin_gib,
        tuple(dict.fromkeys(["none", *kept])),
        len(kept),
        width,
        vocab,
    )
    stats, _ = layer_stats(small, preset)
    predicted = composed_peak(stats, kept)
    t0 = stats.traces["none"]
    none = stats.costs["none"].saved_per_layer
    predicted_saved = t0.saved + sum(stats.costs[p].saved_per_layer - none for p in kept)
    with cuda_kernels():
        torch.manual_seed(0)
        built = make_model(small, preset)
        run_emitted(emit_code(preset, kept), built.model)
        ids = _ids(small, preset)
        with profiler_allocations() as trace:
            real = trace_step(built, ids, req.dtype == "bf16-autocast")
    measured = int(trace.peak_bytes)
    return Check(
        width,
        vocab,
        seq,
        batch,
        kept,
        predicted,
        measured,
        real.peak,
        predicted_saved,
        real.saved,
        round(100.0 * (predicted - measured) / measured, 2),
    )


def measure_on_cuda(req: Request, assignment: list[str]) -> dict[str, Any]:
    """Run two real training steps of the plan on CUDA; the second step's allocator peak.

    The same code the plan prints is applied; the optimizer is single-tensor (as planned).
    CUDA's own kernels run (no stand-ins), so this checks the CPU trace's assumptions too.
    """
    if not torch.cuda.is_available():
        raise BadInput("--measure-cuda needs a CUDA GPU.")
    if req.shards != 1:
        raise BadInput("--measure-cuda runs on one GPU: use --shards 1.")
    preset = PRESETS[req.model]
    device = torch.device("cuda")
    torch.manual_seed(0)
    with torch.device(device):
        built = make_model(req, preset)
    kept = ["none" if p == "offload" else p for p in assignment]
    run_emitted(emit_code(preset, kept), built.model)
    ids = _ids(req, preset).to(device)
    params = [p for p in built.model.parameters() if p.requires_grad]
    opt: torch.optim.Optimizer
    if req.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=False)
    else:
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=False)
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if req.dtype == "bf16-autocast" else _null()

    def step() -> None:
        with amp:
            loss = built.loss(ids)
        backward(loss)
        del loss
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # creates the optimizer state
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return {
        "assignment": kept,
        "measured_peak_bytes": int(torch.cuda.max_memory_allocated()),
        "reserved_peak_bytes": int(torch.cuda.max_memory_reserved()),
        "device": torch.cuda.get_device_name(0),
    }


# -- output -------------------------------------------------------------------------------


def _gib(b: int | None) -> str:
    return "-" if b is None else f"{b / GIB:.2f}"


def format_plan(p: Plan) -> str:
    rows = [p.sentence, ""]
    rows.append(f"{p.preset} ({p.source}), {p.layers} layers; per layer:")
    rows.append(f"  {'policy':<13}{'saved MiB':>11}{'recomputed GFLOPs':>19}  what it does")
    for c in p.policies:
        rows.append(
            f"  {c['policy']:<13}{c['saved_per_layer_bytes'] / 2**20:>11,.1f}"
            f"{c['recomputed_flops_per_layer'] / 1e9:>19,.2f}  {c['about']}"
        )
    rows.append("")
    rows.append("Frontier (peak against recomputed FLOPs, then offloading priced as FLOPs too; * the plan):")
    shown = _thin(p.frontier, 12)
    for r in shown:
        mark = "*" if r["chosen"] else " "
        split = ", ".join(f"{c} {k}" for k, c in r["counts"].items())
        rows.append(
            f" {mark} {r['peak_bytes'] / GIB:>8.2f} GiB {r['recomputed_flops'] / 1e9:>12,.1f} GFLOPs"
            f" {r['cost'] / 1e9:>12,.1f} priced  {split}"
        )
    if p.breakdown:
        rows.append("")
        rows.append(
            f"At the peak ({_gib(p.predicted_peak_bytes)} GiB traced with the code below; "
            f"{_gib(p.composed_peak_bytes)} GiB composed from the per-layer figures):"
        )
        for k, v in p.breakdown.items():
            rows.append(f"  {k:<20}{v / GIB:>8.3f} GiB")
        rows.append(p.at_peak or "")
        rows.append(p.advice or "")
        rows.append("")
        rows.append("The code that applies the plan:")
        rows.extend("  " + line for line in (p.code or "").splitlines())
    rows.append("")
    rows.extend(p.assumptions)
    return "\n".join(rows)


def _thin(rows: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    if len(rows) <= most:
        return rows
    step = len(rows) / most
    keep = {int(i * step) for i in range(most)} | {len(rows) - 1}
    return [r for i, r in enumerate(rows) if i in keep or r["chosen"]]


# -- the command line ---------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(message[0].upper() + message[1:].rstrip(".") + ".")


def _help_epilog() -> str:
    models = "\n".join(f"  {p.name:<15}{p.about}; default batch {p.batch} x {p.seq}" for p in PRESETS.values())
    policies = "\n".join(f"  {name:<15}{about}" for name, about in POLICY_ABOUT.items())
    return (
        f"models:\n{models}\n\npolicies:\n{policies}\n\n"
        "dtypes: fp32; bf16-autocast (fp32 weights, bf16 compute); bf16 (bf16 weights and optimizer state)\n"
        "optimizers: adamw, adam (two moments), sgd (momentum), adapters (base frozen, LoRA rank "
        f"{ADAPTER_RANK} on every linear map of the layers, AdamW)"
    )


def parse_request(argv: list[str] | None) -> Options:
    parser = _Parser(
        prog="python -m demos.plan",
        description=(__doc__ or "").split("\n")[0],
        epilog=_help_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", default="hf-gpt2", help="a preset below (default hf-gpt2)")
    parser.add_argument("--batch", default=None, help="sequences a step (default: the preset's)")
    parser.add_argument("--seq", default=None, help="tokens a sequence (default: the preset's)")
    parser.add_argument("--dtype", default="fp32", help="fp32, bf16-autocast or bf16 (default fp32)")
    parser.add_argument(
        "--optimizer", default=None, help="adamw, adam, sgd or adapters (default adamw; the planner test's model: adam)"
    )
    parser.add_argument(
        "--shards", default="1", help="FSDP shards dividing parameters, gradients and optimizer state (default 1)"
    )
    parser.add_argument("--gpu-gib", default="24", help="the GPU's memory in GiB (default 24)")
    parser.add_argument(
        "--margin-gib", default=None, help="GiB kept for the CUDA context and fragmentation (default 10%% of --gpu-gib)"
    )
    parser.add_argument(
        "--policies", default=",".join(POLICIES), help=f"policies to choose from (default {','.join(POLICIES)})"
    )
    parser.add_argument("--layers", default=None, help="another depth than the preset's")
    parser.add_argument(
        "--accounting",
        default="peak",
        help="peak (the step's simultaneous peak, optimizer state included; default) or torch-bound "
        "(sac_milp's bound: no optimizer state, end-of-forward activations plus backward temporaries)",
    )
    parser.add_argument("--json", action="store_true", help="the plan as JSON")
    parser.add_argument(
        "--measure-cuda", action="store_true", help="run the plan on the CUDA GPU and add its measured peak"
    )
    parser.add_argument("--chart", default=None, help="write the frontier and the breakdown to this PNG (matplotlib)")
    parser.add_argument(
        "--progress", action="store_true", help="JSON lines for the demo worker: start, then the result"
    )
    args = parser.parse_args(argv)
    if args.model not in PRESETS:
        raise BadInput(f"Unknown model {args.model!r}; choose one of {', '.join(PRESETS)}.")
    preset = PRESETS[args.model]
    if needs_transformers(preset) and transformers_missing():
        raise BadInput(f"The {preset.name} preset needs the transformers package (pip install '.[demo]').")
    batch = _whole("--batch", args.batch, preset.batch, 65536)
    seq = _whole("--seq", args.seq, preset.seq, preset.max_seq)
    shards = _whole("--shards", args.shards, 1, 65536)
    layers = None if args.layers is None else _whole("--layers", args.layers, preset.layers, 512)
    if args.dtype not in DTYPES:
        raise BadInput(f"Unknown --dtype {args.dtype!r}; choose one of {', '.join(DTYPES)}.")
    optimizer = args.optimizer or preset.optimizer
    if optimizer not in OPTIMIZERS:
        raise BadInput(f"Unknown --optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}.")
    gpu = _number("--gpu-gib", args.gpu_gib)
    margin = None if args.margin_gib is None else _number("--margin-gib", args.margin_gib, zero=True)
    if margin is not None and margin >= gpu:
        raise BadInput(f"--margin-gib ({margin:g}) must be less than --gpu-gib ({gpu:g}).")
    policies = tuple(x.strip() for x in args.policies.split(",") if x.strip())
    unknown = [x for x in policies if x not in POLICIES]
    if unknown or "none" not in policies:
        raise BadInput(f"--policies must name none and any of {', '.join(POLICIES[1:])}, not {args.policies!r}.")
    if args.accounting not in ("peak", "torch-bound"):
        raise BadInput(f"Unknown --accounting {args.accounting!r}; choose peak or torch-bound.")
    req = Request(
        args.model, batch, seq, args.dtype, optimizer, shards, gpu, margin, policies, layers, accounting=args.accounting
    )
    return Options(req, bool(args.json), args.chart, bool(args.measure_cuda), bool(args.progress))


@dataclass(frozen=True)
class Options:
    """A command line's request and what to print: text, JSON, or the worker's JSON lines."""

    request: Request
    as_json: bool
    chart: str | None
    measure_cuda: bool
    progress: bool = False


def _whole(name: str, text: str | None, default: int, high: int) -> int:
    if text is None:
        return default
    if not (text.isascii() and text.isdigit()):
        raise BadInput(f"{name} must be a whole number, not {text!r}.")
    value = int(text)
    if not 1 <= value <= high:
        raise BadInput(f"{name} must be between 1 and {high:,}, not {value:,}.")
    return value


def _number(name: str, text: str, zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{name} must be a number of GiB, not {text!r}.") from None
    if not (value >= 0 if zero else value > 0) or value > 1e6 or value != value:
        raise BadInput(f"{name} must be a positive number of GiB, not {text}.")
    return value


def main(argv: list[str] | None = None) -> int:
    try:
        options = parse_request(argv)
        if options.measure_cuda and not torch.cuda.is_available():
            raise BadInput("--measure-cuda needs a CUDA GPU.")
    except BadInput as exc:
        print(str(exc), file=sys.stderr)
        return 2
    req, chart, measure = options.request, options.chart, options.measure_cuda
    if options.progress:
        print(json.dumps(fake_start_event()), flush=True)
    result = plan(req)
    measured: dict[str, Any] | None = None
    if measure and result.assignment is not None:
        measured = measure_on_cuda(req, result.assignment)
        predicted = result.predicted_peak_bytes or 0
        measured["predicted_peak_bytes"] = predicted
        real = measured["measured_peak_bytes"]
        measured["error_pct"] = round(100.0 * (predicted - real) / real, 2)
    if chart:
        from demos.plan_chart import plan_chart

        plan_chart(result, chart)
    if options.as_json or options.progress:
        out = asdict(result)
        out["torch"] = torch.__version__
        out["measured"] = measured
        if chart:
            out["charts"] = {"plan": chart}
        print(json.dumps({"event": "result", "result": out}) if options.progress else json.dumps(out), flush=True)
    else:
        print(format_plan(result))
        if measured:
            print(
                f"Measured on {measured['device']}: {measured['measured_peak_bytes'] / GIB:.2f} GiB allocated at most "
                f"(predicted {measured['predicted_peak_bytes'] / GIB:.2f} GiB, {measured['error_pct']:+.1f}%)."
            )
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    raise SystemExit(main())
