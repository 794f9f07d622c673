"""Fact tests for the bank's last questions on the newest APIs (issue 22, torch 2.13, CPU):
the CPU-offload policy values under torch.compile, GraphExecGroup, the pipelining split
backward over a checkpointed stage, and what CPU attention saves with and without dropout."""

from __future__ import annotations

import functools

import torch
import torch._functorch.config as functorch_config
import torch.nn.functional as F
from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
from torch import nn
from torch.autograd.graph import saved_tensors_hooks
from torch.utils.checkpoint import (
    CheckpointError,
    CheckpointPolicy,
    GraphExecGroup,
    checkpoint,
    create_selective_checkpoint_contexts,
)

from tests.facts.support import OpCounter
from tests.facts.test_api import _two_output_runs

MM = torch.ops.aten.mm.default

# ----------------------------------------------------------------------------- offload policy, compiled


def _compiled_sac_graphs(policy: CheckpointPolicy, offloading: bool = False) -> dict[str, torch.fx.GraphModule]:
    """Forward and backward graphs of relu(relu(x @ w1) @ w2) under torch.compile (AOTAutograd,
    the min-cut partitioner Inductor uses), checkpointed with a SAC policy giving `policy` to
    every matmul and PREFER_RECOMPUTE to everything else."""
    torch._dynamo.reset()
    graphs: dict[str, torch.fx.GraphModule] = {}

    def keep(name: str):  # type: ignore[no-untyped-def]
        def compiler(gm, _inputs):  # type: ignore[no-untyped-def]
            graphs[name] = gm
            return make_boxed_func(gm.forward)

        return compiler

    from torch._dynamo.backends.common import aot_autograd

    backend = aot_autograd(
        fw_compiler=keep("fw"), bw_compiler=keep("bw"), partition_fn=min_cut_rematerialization_partition
    )
    torch.manual_seed(0)
    w1 = torch.randn(16, 16, requires_grad=True)
    w2 = torch.randn(16, 16, requires_grad=True)

    def region(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.relu(x @ w1) @ w2)

    def choose(ctx, op, *args, **kwargs):  # type: ignore[no-untyped-def]
        return policy if op == MM else CheckpointPolicy.PREFER_RECOMPUTE

    context_fn = functools.partial(create_selective_checkpoint_contexts, choose)

    def step(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(region, x, use_reentrant=False, context_fn=context_fn)

    with functorch_config.patch(enable_activation_offloading=offloading):
        torch.compile(step, backend=backend)(torch.randn(8, 16, requires_grad=True)).sum().backward()
    torch._dynamo.reset()
    return graphs


def _bw_matmuls(graphs: dict[str, torch.fx.GraphModule]) -> int:
    return sum(1 for n in graphs["bw"].graph.nodes if n.target == MM)


def _bw_inputs(graphs: dict[str, torch.fx.GraphModule]) -> list[str]:
    return [n.name for n in graphs["bw"].graph.nodes if n.op == "placeholder"]


def _moves(graphs: dict[str, torch.fx.GraphModule]) -> list[str]:
    """Nodes that copy a tensor between devices or that the offloading pass names."""
    return [
        f"{n.name}:{n.target}"
        for gm in graphs.values()
        for n in gm.graph.nodes
        if any(word in f"{n.name} {n.target}" for word in ("offload", "reload", "device_put", "_to_copy"))
    ]


def test_offload_policy_under_compile_saves_matmuls_and_moves_nothing() -> None:
    save = _compiled_sac_graphs(CheckpointPolicy.MUST_SAVE)
    recompute = _compiled_sac_graphs(CheckpointPolicy.MUST_RECOMPUTE)
    offload = _compiled_sac_graphs(CheckpointPolicy.MUST_CPU_OFFLOAD)
    prefer_offload = _compiled_sac_graphs(CheckpointPolicy.PREFER_CPU_OFFLOAD)
    # recomputing the two matmuls puts them back into the backward graph
    assert _bw_matmuls(recompute) == _bw_matmuls(save) + 2
    # an offload value is not a recompute value: the partitioner keeps the matmul outputs,
    # exactly as for MUST_SAVE (mm is never recomputed by default) ...
    for graphs in (offload, prefer_offload):
        assert _bw_matmuls(graphs) == _bw_matmuls(save)
        assert {"mm", "mm_1"} <= set(_bw_inputs(graphs))
        assert _bw_inputs(graphs) == _bw_inputs(save)
        # ... and no node copies them to the host and back
        assert _moves(graphs) == []
    # the compile-side offloading pass, switched on, picks nodes by its own mark
    # (node.meta["should_offload"]), which no policy value sets: still nothing moves
    with_pass = _compiled_sac_graphs(CheckpointPolicy.MUST_CPU_OFFLOAD, offloading=True)
    assert _moves(with_pass) == []
    assert _bw_inputs(with_pass) == _bw_inputs(save)


# ----------------------------------------------------------------------------- GraphExecGroup


def test_graph_exec_group_recomputes_once_for_two_backward_calls() -> None:
    torch.manual_seed(0)
    # outputs on separate paths, and no retain_graph on the first call
    runs_alone, grad_alone = _two_output_runs(grouped=False, shared=False, retain_first=False)
    runs_grouped, grad_grouped = _two_output_runs(grouped=True, shared=False, retain_first=False)
    assert isinstance(grad_alone, torch.Tensor) and isinstance(grad_grouped, torch.Tensor)
    # each backward call that reaches the region reruns it: forward + 2 recomputes ...
    assert runs_alone == 3
    # ... under one GraphExecGroup the first recompute serves both calls
    assert runs_grouped == 2
    assert torch.equal(grad_alone, grad_grouped)


def test_graph_exec_group_refuses_calls_that_share_a_saved_tensor() -> None:
    x = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(8, 8, requires_grad=True)
    out = checkpoint(lambda t: torch.tanh(t @ w), x, use_reentrant=False).sum()
    with GraphExecGroup():
        torch.autograd.grad(out, x, retain_graph=True)
        try:
            torch.autograd.grad(out, w)
        except CheckpointError as error:
            assert "already unpacked once" in str(error)
        else:
            raise AssertionError("two overlapping backward calls in one group passed")
    # and the group cannot be nested
    with GraphExecGroup():
        try:
            with GraphExecGroup():
                pass
        except RuntimeError as error:
            assert "cannot be nested" in str(error)
        else:
            raise AssertionError("a nested GraphExecGroup was accepted")


# ----------------------------------------------------------------------------- split backward


def test_split_backward_reruns_a_checkpointed_stage_per_autograd_call() -> None:
    from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight

    def stage_and_counter() -> tuple[nn.Sequential, list[int]]:
        torch.manual_seed(0)
        stage = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        runs = [0]
        stage[0].register_forward_pre_hook(lambda *_: runs.__setitem__(0, runs[0] + 1))
        return stage, runs

    def split_step(checkpointed: bool) -> tuple[list[int], int, list[torch.Tensor]]:
        stage, runs = stage_and_counter()
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1), requires_grad=True)
        out = checkpoint(stage, x, use_reentrant=False) if checkpointed else stage(x)
        counts = [runs[0]]
        _, groups = stage_backward_input([out], [torch.ones_like(out)], [x], stage.parameters())
        counts.append(runs[0])  # after the input-gradient pass (the "B" of a zero-bubble step)
        stage_backward_weight(stage.parameters(), groups)
        counts.append(runs[0])  # after the weight-gradient pass (the "W")
        assert x.grad is not None
        return counts, len(groups), [x.grad, *(p.grad for p in stage.parameters() if p.grad is not None)]

    plain, _, plain_grads = split_step(checkpointed=False)
    checked, weight_calls, checked_grads = split_step(checkpointed=True)
    assert plain == [1, 1, 1]  # without checkpointing the stage runs once
    # with it: one rerun for the input pass, then one more per weight-gradient call
    # (one parameter group per Linear here)
    assert weight_calls == 2
    assert checked == [1, 2, 2 + weight_calls]
    assert len(checked_grads) == len(plain_grads) == 5
    assert all(torch.equal(a, b) for a, b in zip(plain_grads, checked_grads, strict=True))
    # one GraphExecGroup around both passes is refused: they need some of the same saved tensors
    stage, _ = stage_and_counter()
    x = torch.randn(4, 8, requires_grad=True)
    out = checkpoint(stage, x, use_reentrant=False)
    with GraphExecGroup():
        _, groups = stage_backward_input([out], [torch.ones_like(out)], [x], stage.parameters())
        try:
            stage_backward_weight(stage.parameters(), groups)
        except CheckpointError as error:
            assert "already unpacked once" in str(error)
        else:
            raise AssertionError("the weight pass shared the input pass's recompute")


# ----------------------------------------------------------------------------- CPU attention


def _attention_saved_bytes(seq: int, dropout_p: float) -> tuple[int, list[str]]:
    """Bytes scaled_dot_product_attention saves for backward on the CPU beyond q, k and v
    (each storage once), and the attention ops it ran."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, seq, 16, requires_grad=True) for _ in range(3))
    inputs = {t.untyped_storage().data_ptr() for t in (q, k, v)}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with saved_tensors_hooks(pack, lambda t: t), OpCounter() as ops:
        F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    names = sorted(str(op) for op in ops.counts if "attention" in str(op) or "softmax" in str(op))
    return sum(n for ptr, n in saved.items() if ptr not in inputs), names


def test_cpu_attention_with_dropout_saves_the_quadratic_weights() -> None:
    fused = [_attention_saved_bytes(s, 0.0) for s in (64, 128, 256)]
    dropped = [_attention_saved_bytes(s, 0.1) for s in (64, 128, 256)]
    # without dropout the CPU runs its fused (flash) kernel, which keeps O(s) per head:
    # doubling s doubles the saved bytes
    assert all(names == ["aten._scaled_dot_product_flash_attention_for_cpu.default"] for _, names in fused)
    assert fused[1][0] == 2 * fused[0][0] and fused[2][0] == 2 * fused[1][0]
    # with dropout it falls back to the math path (softmax, dropout, two bmm), which keeps
    # the s x s weights: doubling s nearly quadruples the bytes
    assert all("aten._safe_softmax.default" in names for _, names in dropped)
    assert all("flash" not in " ".join(names) for _, names in dropped)
    for shorter, longer in zip(dropped, dropped[1:], strict=False):
        assert 3.5 * shorter[0] < longer[0] <= 4 * shorter[0]
    # the s x s float32 weights alone, 2 heads at s=256: 512 KiB, past anything the fused kernel keeps
    assert dropped[2][0] > 2 * 256 * 256 * 4 > 10 * fused[2][0]
