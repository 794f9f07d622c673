"""The ``budget`` strategy: ``torch.compile`` with an activation memory budget.

``torch._functorch.config.activation_memory_budget`` (0 to 1) tells the partitioner of the
compiled forward+backward graph how much activation memory to keep: 1.0 is the default,
runtime-first plan, 0.0 recomputes as much as checkpointing the whole region would, and
values between pick the cheapest recomputation that fits (a knapsack over the ops).
The backend is ``aot_eager_decomp_partition`` on the CPU (the partitioner without
Inductor's code generation) and ``inductor`` on CUDA. A dispatch mode (the live-tensor
meter, fake tensors) makes Dynamo run the code eagerly, so compiled steps are measured
by the allocator (the CPU profiler's events, CUDA's statistics) and are not fake-traced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from demos.memory import backward

DEFAULT_BUDGETS = (1.0, 0.5, 0.2, 0.0)


def backend_for(device_type: str) -> str:
    return "inductor" if device_type == "cuda" else "aot_eager_decomp_partition"


@dataclass
class CompiledStep:
    """The loss with every body layer compiled at one budget; the first call compiles.

    Each layer is compiled on its own (as large models compile one block at a time), so
    what the partitioner recomputes is rebuilt one layer at a time during backward, as
    with block checkpointing; one graph for the whole step would rebuild everything at
    once and its peak would not fall with the budget.
    """

    fn: Callable[[torch.Tensor], torch.Tensor]
    budget: float

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        with torch._functorch.config.patch(activation_memory_budget=self.budget):
            return self.fn(x)


def compile_step(
    embed: Callable[[torch.Tensor], torch.Tensor],
    body: nn.Sequential,
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    budget: float,
    device_type: str,
) -> CompiledStep:
    """Compile every layer of ``body`` afresh (Dynamo's cache reset) under ``budget``."""
    import torch._dynamo

    torch._dynamo.reset()
    backend = backend_for(device_type)
    layers = [torch.compile(layer, backend=backend, fullgraph=True) for layer in body]

    def step(x: torch.Tensor) -> torch.Tensor:
        h = embed(x)
        for layer in layers:
            h = layer(h)
        return loss(h, x)

    return CompiledStep(step, budget)


def warm_up(step: CompiledStep, x: torch.Tensor, params: list[nn.Parameter]) -> None:
    """Compile forward and backward under the step's budget (the first call does it)."""
    with torch._functorch.config.patch(activation_memory_budget=step.budget):
        backward(step.fn(x))
    for p in params:
        p.grad = None
