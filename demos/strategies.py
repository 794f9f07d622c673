"""Ways to run the forward pass of a layer stack, each a checkpointing strategy.

- ``none``: plain autograd, every activation is kept for backward.
- ``block``: ``torch.utils.checkpoint`` around every layer (``use_reentrant=False``).
- ``sqrt``: ``checkpoint_sequential`` with round(sqrt(N)) segments.
- ``selective``: selective activation checkpointing (SAC): the outputs of the matmul
  operators are saved, everything else is recomputed. Policies must name exact operator
  overloads such as ``aten.mm.default``; a packet such as ``aten.mm`` never matches an
  operator that actually runs.
- ``offload``: saved activations are moved to (pinned) CPU memory; CUDA only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import (
    CheckpointPolicy,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
)

from demos.models import segments_for

STRATEGIES = ("none", "block", "sqrt", "selective", "offload")
CUDA_ONLY = frozenset({"offload"})

_aten = torch.ops.aten
#: Operators whose outputs selective checkpointing keeps (exact overloads).
SAVED_OPS: tuple[torch._ops.OpOverload, ...] = (
    _aten.mm.default,
    _aten.addmm.default,
    _aten.bmm.default,
    _aten.baddbmm.default,
)


@dataclass
class MatmulSavePolicy:
    """SAC policy: MUST_SAVE for :data:`SAVED_OPS`, PREFER_RECOMPUTE for the rest.

    Counts how often it chose to save, so a policy that matches nothing is visible.
    """

    ops: frozenset[Any] = field(default_factory=lambda: frozenset(SAVED_OPS))
    saved: int = 0

    def __call__(self, ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
        if op in self.ops:
            if not ctx.is_recompute:
                self.saved += 1
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE


def make_forward(
    model: nn.Sequential,
    strategy: str,
    policy: MatmulSavePolicy | None = None,
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The forward pass of ``model`` under ``strategy``."""
    layers = list(model)
    if strategy == "none":
        return model
    if strategy == "block":

        def forward_block(x: torch.Tensor) -> torch.Tensor:
            for layer in layers:
                x = checkpoint(layer, x, use_reentrant=False)
            return x

        return forward_block
    if strategy == "sqrt":
        segments = segments_for(len(layers))

        def forward_sqrt(x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = checkpoint_sequential(model, segments, x, use_reentrant=False)
            return out

        return forward_sqrt
    if strategy == "selective":
        chosen = policy if policy is not None else MatmulSavePolicy()
        context_fn = functools.partial(create_selective_checkpoint_contexts, chosen)

        def forward_selective(x: torch.Tensor) -> torch.Tensor:
            for layer in layers:
                x = checkpoint(layer, x, use_reentrant=False, context_fn=context_fn)
            return x

        return forward_selective
    if strategy == "offload":

        def forward_offload(x: torch.Tensor) -> torch.Tensor:
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return model(x)

        return forward_offload
    raise ValueError(f"unknown strategy {strategy!r}")


def loss_of(output: torch.Tensor) -> torch.Tensor:
    """A scalar loss that depends on every output element."""
    return output.pow(2).mean()
