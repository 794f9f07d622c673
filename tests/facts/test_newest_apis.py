"""Fact tests for the bank's questions on the newest checkpointing APIs (torch 2.13): the
selective-checkpointing policy's calls and its cache of saved outputs, the compile memory
budget's steps, compiled gradients against eager ones."""

from __future__ import annotations

import functools

import pytest
import torch
import torch._functorch.config as functorch_config
from functorch.compile import min_cut_rematerialization_partition
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from tests.facts.support import OpCounter, largest_difference, layernorm_mlp, parameter_grads
from tests.facts.test_compile import MM, _bw_targets, _partition, three_layers


def _two_matmuls(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.mm(torch.mm(x, w).sin(), w).sum()


def _sac_run(policy) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(matmuls in forward, matmuls in forward + backward) under a SAC policy."""
    x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy)
    with OpCounter() as ops:
        out = checkpoint(_two_matmuls, x, w, use_reentrant=False, context_fn=context_fn)
        forward = ops.counts[MM]
        out.backward()
    return forward, ops.counts[MM]


def _save_mm_as(value: CheckpointPolicy):  # type: ignore[no-untyped-def]
    def policy(ctx, op, *args, **kwargs):  # type: ignore[no-untyped-def]
        return value if op is MM else CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def test_policy_is_called_once_per_op_in_forward_only() -> None:
    calls: list[tuple[bool, object, tuple[int, ...]]] = []

    def policy(ctx, op, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append((ctx.is_recompute, op, tuple(ctx.op_output.shape)))
        return CheckpointPolicy.PREFER_RECOMPUTE

    forward, total = _sac_run(policy)
    # mm, sin, mm, sum: one call each, made in forward with the op's output in hand ...
    aten = torch.ops.aten
    assert [op for _, op, _ in calls] == [MM, aten.sin.default, MM, aten.sum.default]
    assert [shape for _, _, shape in calls] == [(8, 8), (8, 8), (8, 8), ()]
    # ... and none during the recompute, which did run (a matmul was rebuilt)
    assert total > 2 * forward
    assert not any(is_recompute for is_recompute, _, _ in calls)


def test_mutating_a_cached_output_raises_unless_allowed() -> None:
    def region(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x, w)
        s = h.exp()  # exp keeps its output, so plain autograd never needs h itself
        h.mul_(2)
        return (s * h).sum()

    torch.manual_seed(0)
    x, w = torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    (right,) = torch.autograd.grad(region(x, w), x)
    (plain,) = torch.autograd.grad(checkpoint(region, x, w, use_reentrant=False), x)
    assert torch.equal(plain, right)

    def sac(allow: bool) -> torch.Tensor:
        context_fn = functools.partial(
            create_selective_checkpoint_contexts,
            _save_mm_as(CheckpointPolicy.MUST_SAVE),
            allow_cache_entry_mutation=allow,
        )
        (grad,) = torch.autograd.grad(checkpoint(region, x, w, use_reentrant=False, context_fn=context_fn), x)
        return grad

    with pytest.raises(RuntimeError, match="cached during selective activation checkpoint has been mutated"):
        sac(allow=False)
    assert not torch.allclose(sac(allow=True), right)  # the check lifted, the gradient is wrong


def test_lower_budgets_save_less_and_recompute_more_matmuls() -> None:
    saved: list[int] = []
    matmuls: list[int] = []
    for budget in (1.0, 0.5, 0.0):
        with functorch_config.patch(activation_memory_budget=budget):
            names, bw = _partition(three_layers, min_cut_rematerialization_partition, 4)
        saved.append(len([n for n in names if not n.startswith("primals")]))
        matmuls.append(_bw_targets(bw).count(MM))
    assert saved[0] > saved[1] > saved[2] == 0  # activations kept beyond the inputs
    assert matmuls[0] == 6 < matmuls[1] < matmuls[2]  # 6 is the gradient matmuls alone


def test_compiled_gradients_differ_from_eager_only_by_rounding() -> None:
    net, x = layernorm_mlp()

    def grads(forward) -> list[torch.Tensor]:  # type: ignore[no-untyped-def]
        return parameter_grads(net, x, forward)

    eager = grads(net)
    assert largest_difference(eager, grads(lambda t: checkpoint(net, t, use_reentrant=False))) == 0.0
    torch._dynamo.reset()
    compiled = torch.compile(net, backend="aot_eager_decomp_partition")
    diff = largest_difference(eager, grads(compiled))
    torch._dynamo.reset()
    scale = max(g.abs().max().item() for g in eager)
    assert 0.0 < diff < 1e-6 * scale  # the last bits of float32, not a different gradient
