"""Ways to run the forward pass of a layer stack, each a checkpointing strategy.

- ``none``: plain autograd, every activation is kept for backward.
- ``block``: ``torch.utils.checkpoint`` around every layer (``use_reentrant=False``).
- ``sqrt``: ``checkpoint_sequential`` with round(sqrt(N)) segments.
- ``selective``: selective activation checkpointing (SAC) around every layer: the outputs
  of the matmul operators and of the fused attention kernels are saved, everything else
  is recomputed. Policies must name exact operator overloads such as ``aten.mm.default``;
  a packet such as ``aten.mm`` never matches an operator that actually runs.
- ``selective-attn``: the same, but attention is recomputed too (only matmuls saved).
- ``offload``: saved activations are moved to (pinned) CPU memory; CUDA only.
- ``budget``: ``torch.compile`` with ``torch._functorch.config.activation_memory_budget``
  (see :mod:`demos.budget`); it compiles the whole step, so it is not built here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn
from torch.utils.checkpoint import (
    CheckpointPolicy,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
)

from demos.models import segments_for

STRATEGIES = ("none", "block", "sqrt", "selective", "selective-attn", "offload", "budget")
CUDA_ONLY = frozenset({"offload"})
#: Strategies that run the layers through torch.utils.checkpoint (their recomputation is marked).
RECOMPUTING = frozenset({"block", "sqrt", "selective", "selective-attn"})

_aten = torch.ops.aten
#: Operators whose outputs selective checkpointing keeps (exact overloads).
SAVED_OPS: tuple[torch._ops.OpOverload, ...] = (
    _aten.mm.default,
    _aten.addmm.default,
    _aten.bmm.default,
    _aten.baddbmm.default,
)
#: Fused attention kernels (those this build of torch has): saved by ``selective`` only.
ATTENTION_OPS: tuple[torch._ops.OpOverload, ...] = tuple(
    getattr(_aten, name).default
    for name in (
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
    )
    if hasattr(_aten, name)
)


class PhaseSink(Protocol):
    """Something that hears when recomputation starts and ends (a memory meter)."""

    def recompute_started(self) -> None: ...

    def recompute_ended(self) -> None: ...


@contextmanager
def _marked(sink: PhaseSink | None) -> Iterator[None]:
    if sink is None:
        yield
        return
    sink.recompute_started()
    try:
        yield
    finally:
        sink.recompute_ended()


def _marking(layer: Callable[..., torch.Tensor], sink: PhaseSink | None) -> Callable[..., torch.Tensor]:
    """``layer``, telling ``sink`` whenever it runs while grad mode says backward recomputes it.

    A checkpointed function runs twice: in the forward pass and, during backward, to rebuild
    what was not kept. The sink decides which call is which (it knows its phase).
    """
    if sink is None:
        return layer

    def run(*args: Any) -> torch.Tensor:
        with _marked(sink):
            return layer(*args)

    return run


@dataclass
class MatmulSavePolicy:
    """SAC policy: MUST_SAVE for :data:`SAVED_OPS`, PREFER_RECOMPUTE for the rest.

    Counts how often it chose to save, so a policy that matches nothing is visible.
    """

    ops: frozenset[Any] = field(default_factory=lambda: frozenset(SAVED_OPS + ATTENTION_OPS))
    saved: int = 0

    def __call__(self, ctx: Any, op: Any, *_args: Any, **_kwargs: Any) -> CheckpointPolicy:
        if op in self.ops:
            if not ctx.is_recompute:
                self.saved += 1
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE


def policy_for(strategy: str) -> MatmulSavePolicy:
    """The SAC policy of ``selective`` (matmuls and attention saved) or ``selective-attn``."""
    if strategy == "selective-attn":
        return MatmulSavePolicy(ops=frozenset(SAVED_OPS))
    return MatmulSavePolicy()


def _segment(layers: list[nn.Module]) -> Callable[[torch.Tensor], torch.Tensor]:
    def run(x: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            x = layer(x)
        return x

    return run


def make_forward(  # noqa: C901 - one branch per strategy
    model: nn.Sequential,
    strategy: str,
    policy: MatmulSavePolicy | None = None,
    sink: PhaseSink | None = None,
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The forward pass of ``model`` under ``strategy``; ``sink`` hears of recomputation."""
    layers = list(model)
    if strategy == "none":
        return model
    if strategy == "block":
        marked = [_marking(layer, sink) for layer in layers]

        def forward_block(x: torch.Tensor) -> torch.Tensor:
            for layer in marked:
                x = checkpoint(layer, x, use_reentrant=False)
            return x

        return forward_block
    if strategy == "sqrt":
        segments = segments_for(len(layers))
        if sink is None:

            def forward_sqrt(x: torch.Tensor) -> torch.Tensor:
                out: torch.Tensor = checkpoint_sequential(model, segments, x, use_reentrant=False)  # type: ignore[no-untyped-call]
                return out

            return forward_sqrt
        # checkpoint_sequential's own split (A8): chunks of len // segments, the last one
        # (with any remainder) not checkpointed; the same split, each chunk marked.
        size = len(layers) // segments
        chunks = [layers[i * size : (i + 1) * size] for i in range(segments - 1)]
        runs = [_marking(_segment(chunk), sink) for chunk in chunks]
        tail = _segment(layers[(segments - 1) * size :])

        def forward_sqrt_marked(x: torch.Tensor) -> torch.Tensor:
            for run in runs:
                x = checkpoint(run, x, use_reentrant=False)
            return tail(x)

        return forward_sqrt_marked
    if strategy in ("selective", "selective-attn"):
        chosen = policy if policy is not None else policy_for(strategy)
        context_fn = functools.partial(create_selective_checkpoint_contexts, chosen)
        marked = [_marking(layer, sink) for layer in layers]

        def forward_selective(x: torch.Tensor) -> torch.Tensor:
            for layer in marked:
                x = checkpoint(layer, x, use_reentrant=False, context_fn=context_fn)
            return x

        return forward_selective
    if strategy == "offload":

        def forward_offload(x: torch.Tensor) -> torch.Tensor:
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                out: torch.Tensor = model(x)
                return out

        return forward_offload
    raise ValueError(f"unknown strategy {strategy!r}")


def loss_of(output: torch.Tensor) -> torch.Tensor:
    """A scalar loss that depends on every output element."""
    loss: torch.Tensor = output.pow(2).mean()
    return loss
