"""Fact tests for questions/performance.yaml (torch 2.13, CPU, small tensors).

Compute is counted, never timed: torch.utils.flop_counter.FlopCounterMode counts
matmul FLOPs, and a small TorchDispatchMode counts aten ops, in forward and backward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from tests.facts.support import OpCounter, SavedBytes, make_stack, run_chain


def flops(fn) -> int:  # type: ignore[no-untyped-def]
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


class Layer(nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.lin = nn.Linear(h, h, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


def test_full_recompute_costs_one_extra_forward() -> None:
    layers = make_stack(h=64, layer=Layer)
    x = torch.randn(32, 64, requires_grad=True)
    fwd = flops(lambda: run_chain(layers, x))
    plain = flops(lambda: run_chain(layers, x).sum().backward())
    assert plain == 3 * fwd  # backward of a matmul layer: about 2x its forward
    for mode in ("reentrant", "non-reentrant"):
        reentrant = mode == "reentrant"
        ckpt = flops(lambda r=reentrant: run_chain(layers, x, True, r).sum().backward())
        assert ckpt == plain + fwd  # one more forward: 4/3 of the plain step
        assert ckpt * 3 == plain * 4


def test_recompute_happens_in_backward_not_in_forward() -> None:
    layers = make_stack(h=64, layer=Layer)
    x = torch.randn(32, 64, requires_grad=True)
    fwd_plain = flops(lambda: run_chain(layers, x))
    with FlopCounterMode(display=False) as fc:
        out = run_chain(layers, x, ckpt=True, use_reentrant=False)
    assert fc.get_total_flops() == fwd_plain  # the checkpointed forward costs the same
    bwd_ckpt = flops(lambda: out.sum().backward())
    out_plain = run_chain(layers, x)
    bwd_plain = flops(lambda: out_plain.sum().backward())
    assert bwd_ckpt == bwd_plain + fwd_plain  # the extra forward runs inside backward


class MixedBlock(nn.Module):
    """matmul -> three cheap pointwise ops -> matmul, like an MLP with a fancy activation."""

    def __init__(self, h: int) -> None:
        super().__init__()
        self.up = nn.Linear(h, 4 * h, bias=False)
        self.down = nn.Linear(4 * h, h, bias=False)

    def pointwise(self, u: torch.Tensor) -> torch.Tensor:
        return torch.sin(torch.sin(torch.sin(u)))

    def forward(self, x: torch.Tensor, where: str = "none") -> torch.Tensor:
        if where == "block":
            return checkpoint(self.forward, x, "none", use_reentrant=False)
        u = self.up(x)
        if where == "pointwise":
            g = checkpoint(self.pointwise, u, use_reentrant=False)
        else:
            g = self.pointwise(u)
        return self.down(g)


def test_what_is_recomputed_sets_the_overhead() -> None:
    torch.manual_seed(0)
    block = MixedBlock(64)
    x = torch.randn(32, 64, requires_grad=True)
    cost: dict[str, tuple[int, int, Counter[str]]] = {}
    for where in ("none", "pointwise", "block"):
        with SavedBytes(exclude=block) as m, OpCounter() as oc:
            with FlopCounterMode(display=False) as fc:
                out = block(x, where)
                saved = m.nbytes
                out.sum().backward()
        cost[where] = (fc.get_total_flops(), saved, oc.ops)
    plain_flops, plain_saved, plain_ops = cost["none"]
    fwd_flops = flops(lambda: block(x))
    # recomputing only the cheap pointwise ops: no extra matmul work, some memory saved
    pw_flops, pw_saved, pw_ops = cost["pointwise"]
    assert pw_flops == plain_flops
    assert pw_ops["mm"] == plain_ops["mm"] and pw_ops["sin"] > plain_ops["sin"]
    assert pw_saved < plain_saved
    # recomputing the whole block: the matmuls run again too, and more memory is saved
    blk_flops, blk_saved, blk_ops = cost["block"]
    assert plain_flops < blk_flops <= plain_flops + fwd_flops
    # (here exactly the `up` matmul, half the forward: early stop skips the final `down`)
    assert blk_flops == plain_flops + fwd_flops // 2
    assert blk_ops["mm"] > plain_ops["mm"]
    assert blk_saved < pw_saved


class WideAndNarrow(nn.Module):
    """A wide cheap part (three sins on 4h-wide tensors between two matmuls) followed by a
    narrow matmul-heavy part (h -> h, relu, h -> h). `where` checkpoints one part."""

    def __init__(self, h: int) -> None:
        super().__init__()
        self.mixed = MixedBlock(h)
        self.a = nn.Linear(h, h, bias=False)
        self.b = nn.Linear(h, h, bias=False)

    def narrow(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))

    def forward(self, x: torch.Tensor, where: str = "none") -> torch.Tensor:
        h = self.mixed(x, "pointwise" if where == "pointwise" else "none")
        if where == "narrow":
            return checkpoint(self.narrow, h, use_reentrant=False)
        return self.narrow(h)


def _step_cost(run: Callable[[], torch.Tensor], exclude: nn.Module) -> tuple[int, int]:
    """(bytes saved for backward, FLOPs of forward + backward) of one step."""
    with SavedBytes(exclude=exclude) as m, FlopCounterMode(display=False) as fc:
        out = run()
        saved = m.nbytes
        out.sum().backward()
    return saved, fc.get_total_flops()


def test_overhead_follows_what_is_rerun_not_the_memory_freed() -> None:
    torch.manual_seed(0)
    block = WideAndNarrow(64)
    x = torch.randn(32, 64, requires_grad=True)
    plain_saved, plain_flops = _step_cost(lambda: block(x), block)
    cost = {}
    for where in ("pointwise", "narrow"):
        saved, step_flops = _step_cost(lambda w=where: block(x, w), block)
        cost[where] = (plain_saved - saved, step_flops - plain_flops)  # (freed, extra FLOPs)
    # checkpointing the wide pointwise ops frees more memory than checkpointing the narrow
    # matmuls, yet costs no matmul FLOPs where the narrow placement reruns one matmul
    (pw_freed, pw_extra), (nw_freed, nw_extra) = cost["pointwise"], cost["narrow"]
    assert pw_freed > 4 * nw_freed
    assert pw_extra == 0 and nw_extra == flops(lambda: block.a(x.detach()))
    # the graph matters too: checkpointing every block of a stack of matmul+relu layers
    # adds a third to the step, but a sixth for MixedBlocks, whose last op is a matmul that
    # early stop never reruns
    layers = make_stack(h=64, layer=Layer)
    y = torch.randn(32, 64, requires_grad=True)
    _, stack_plain = _step_cost(lambda: run_chain(layers, y), layers)
    _, stack_ckpt = _step_cost(lambda: run_chain(layers, y, ckpt=True), layers)
    assert stack_ckpt * 3 == stack_plain * 4
    mixed = MixedBlock(64)
    _, mixed_plain = _step_cost(lambda: mixed(y), mixed)
    _, mixed_ckpt = _step_cost(lambda: mixed(y, "block"), mixed)
    assert mixed_ckpt * 6 == mixed_plain * 7


def test_non_reentrant_early_stop_skips_the_trailing_matmul() -> None:
    torch.manual_seed(0)
    w1 = torch.randn(64, 64, requires_grad=True)
    w2 = torch.randn(64, 64, requires_grad=True)
    x = torch.randn(32, 64, requires_grad=True)

    def region(t: torch.Tensor) -> torch.Tensor:
        return torch.relu(t @ w1) @ w2

    def mm_count(**kw: bool) -> int:
        with OpCounter() as oc:
            checkpoint(region, x, **kw).sum().backward()
        return oc.ops["mm"]

    with OpCounter() as oc:
        region(x).sum().backward()
    plain = oc.ops["mm"]  # 2 forward + 4 backward
    assert plain == 6
    assert mm_count(use_reentrant=True) == plain + 2  # reruns the whole function
    assert mm_count(use_reentrant=False, early_stop=False) == plain + 2
    # stops once every saved tensor is rebuilt: the last matmul's inputs are saved
    # before it runs, so it is never recomputed
    assert mm_count(use_reentrant=False) == plain + 1


def _segment_recompute_flops(layers: nn.Sequential, k: int, reentrant: bool) -> int:
    """FLOPs a step spends beyond plain training when the layers run as k checkpointed segments."""
    x = torch.randn(32, 64, requires_grad=True)
    plain = flops(lambda: layers(x).sum().backward())
    per = len(layers) // k

    def segmented() -> None:
        t = x
        for s in range(k):
            t = checkpoint(layers[s * per : (s + 1) * per], t, use_reentrant=reentrant)
        t.sum().backward()

    return flops(segmented) - plain


def test_segment_count_leaves_the_recompute_flops_unchanged() -> None:
    relu_layers = make_stack(16, 64, layer=Layer)  # Linear(no bias) + ReLU, as in the prompt
    forward = flops(lambda: relu_layers(torch.randn(32, 64)))
    for reentrant in (False, True):
        # one forward's worth of recompute, exactly, for every segment count
        assert [_segment_recompute_flops(relu_layers, k, reentrant) for k in (2, 4, 8, 16)] == [forward] * 4
    # the caveat: bare Linear layers end each segment in a matmul whose output nothing saves,
    # so non-reentrant early stop skips it and the recompute does fall as k grows
    bare = make_stack(16, 64, layer=lambda h: nn.Linear(h, h, bias=False))
    assert [_segment_recompute_flops(bare, k, False) * 8 // forward for k in (2, 4, 8, 16)] == [
        7,
        6,
        4,
        0,
    ]
    assert [_segment_recompute_flops(bare, k, True) for k in (2, 4, 8, 16)] == [forward] * 4


def _attention_saved_bytes(s: int, fused: bool) -> int:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, s, 16, requires_grad=True) for _ in range(3))
    with SavedBytes() as m:
        if fused:
            torch.nn.functional.scaled_dot_product_attention(q, k, v)
        else:
            torch.softmax(q @ k.transpose(-1, -2) / 4, dim=-1) @ v
    return m.nbytes


def test_fused_attention_keeps_no_sequence_squared_tensor() -> None:
    # unfused attention saves (s, s) scores and probabilities: more than 2x per doubling of s
    unfused = [_attention_saved_bytes(s, fused=False) for s in (64, 128, 256)]
    assert unfused[1] > 2 * unfused[0] and unfused[2] > 2 * unfused[1]
    # the fused kernel saves inputs, output and per-row statistics: exactly linear in s,
    # so recomputing it would win back little memory for a costly rerun
    fused = [_attention_saved_bytes(s, fused=True) for s in (64, 128, 256)]
    assert fused[1] == 2 * fused[0] and fused[2] == 2 * fused[1]
    assert fused[2] < unfused[2]


def _cpu_sdpa_flops(q, k, v, *args, out_shape=None, **kwargs) -> int:  # type: ignore[no-untyped-def]
    return sdpa_flop_count(q, k, v)


def _cpu_sdpa_backward_flops(grad, q, k, v, *args, out_shape=None, **kwargs) -> int:  # type: ignore[no-untyped-def]
    return sdpa_backward_flop_count(grad, q, k, v)


# FlopCounterMode counts the CUDA flash and efficient kernels; the CPU flash kernel gets
# the same formulas (its two matmuls, q k^T and p v, forward; their gradients backward)
SDPA_CPU_FLOPS = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_flops,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_sdpa_backward_flops,
}


def _attention_cost(s: int, fused: bool, ckpt: bool) -> tuple[int, int, int]:
    """(bytes saved for backward, FLOPs of forward+backward, fused-kernel calls) for one
    attention call over sequence length s, checkpointed or not."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, s, 16, requires_grad=True) for _ in range(3))

    def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if fused:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return torch.softmax(q @ k.transpose(-1, -2) / 4, dim=-1) @ v

    with SavedBytes() as m, FlopCounterMode(display=False, custom_mapping=SDPA_CPU_FLOPS) as fc, OpCounter() as oc:
        out = checkpoint(attention, q, k, v, use_reentrant=False) if ckpt else attention(q, k, v)
        saved = m.nbytes
        out.sum().backward()
    return saved, fc.get_total_flops(), oc.ops["_scaled_dot_product_flash_attention_for_cpu"]


def test_recomputing_fused_attention_reruns_the_whole_kernel_to_free_little() -> None:
    cost: dict[str, list[tuple[int, int]]] = {"fused": [], "unfused": []}
    kept = [_attention_cost(s, fused=True, ckpt=False)[0] for s in (64, 128, 256)]
    assert kept[1] == 2 * kept[0] and kept[2] == 2 * kept[1]  # no s x s tensor is saved
    unfused_kept = [_attention_cost(s, fused=False, ckpt=False)[0] for s in (64, 128, 256)]
    assert unfused_kept[1] > 2 * unfused_kept[0] and unfused_kept[2] > 2 * unfused_kept[1]
    for s in (64, 128, 256):
        for kind in cost:
            plain_saved, plain_flops, plain_calls = _attention_cost(s, kind == "fused", ckpt=False)
            ckpt_saved, ckpt_flops, ckpt_calls = _attention_cost(s, kind == "fused", ckpt=True)
            freed, extra = plain_saved - ckpt_saved, ckpt_flops - plain_flops
            cost[kind].append((freed, extra))
            if kind == "fused":
                # the kernel runs once more, in backward: all of its forward FLOPs again
                assert (plain_calls, ckpt_calls) == (1, 2)
                assert extra == 4 * 2 * 4 * s * s * 16  # q k^T and p v over 2 x 4 heads
    fused, unfused = cost["fused"], cost["unfused"]
    # per doubling of s the fused rerun frees twice the bytes (output and row statistics)
    # for four times the FLOPs, so FLOPs per freed byte double ...
    for (f0, e0), (f1, e1) in zip(fused, fused[1:], strict=False):
        assert f1 == 2 * f0 and e1 == 4 * e0
    # ... while recomputing unfused attention frees the s x s tensors at a fixed price
    ratios = [extra / freed for freed, extra in unfused]
    assert ratios[0] == ratios[1] == ratios[2]
    # already at s=64 the fused kernel costs over 7 times as many FLOPs per byte freed
    assert fused[0][1] / fused[0][0] > 7 * ratios[0]


def test_checkpointing_a_single_pointwise_op_saves_nothing() -> None:
    # The multi-op chain in MixedBlock is what makes pointwise-only checkpointing pay: with
    # one op, the checkpoint keeps the op's input and the next matmul still keeps its output.
    torch.manual_seed(0)
    up = nn.Linear(32, 128, bias=False)
    down = nn.Linear(128, 32, bias=False)
    x = torch.randn(8, 32, requires_grad=True)

    def saved(act, ckpt: bool) -> int:  # type: ignore[no-untyped-def]
        with SavedBytes(exclude=nn.ModuleList([up, down])) as m:
            u = up(x)
            g = checkpoint(act, u, use_reentrant=False) if ckpt else act(u)
            down(g)
        return m.nbytes

    gelu = torch.nn.functional.gelu
    assert saved(gelu, ckpt=True) == saved(gelu, ckpt=False)  # GELU saved its input anyway
    assert saved(torch.relu, ckpt=True) > saved(torch.relu, ckpt=False)  # ReLU: one more tensor


def test_accumulation_adds_no_flops_while_checkpointing_adds_recompute() -> None:
    layers = make_stack(h=64, layer=Layer)
    torch.manual_seed(1)
    batch = torch.randn(64, 64)

    def full(ckpt: bool):  # type: ignore[no-untyped-def]
        return lambda: run_chain(layers, batch, ckpt=ckpt).sum().backward()

    def accumulated() -> None:
        for micro in batch.chunk(4):
            (run_chain(layers, micro).sum() / 4).backward()

    forward = flops(lambda: run_chain(layers, batch))
    plain = flops(full(False))
    assert flops(accumulated) == plain  # same matmul work, in four smaller pieces
    # the recompute is extra work on top: every layer's forward matmul once more
    assert flops(full(True)) == plain + forward


def test_checkpointing_every_other_layer_halves_the_recompute() -> None:
    stack = make_stack(8, 32)
    x = torch.randn(64, 32, requires_grad=True)

    def every(n: int):  # type: ignore[no-untyped-def]
        def run() -> None:
            t = x
            for i, block in enumerate(stack):
                t = checkpoint(block, t, use_reentrant=False) if i % n == 0 else block(t)
            t.sum().backward()

        return run

    plain = flops(lambda: stack(x).sum().backward())
    extra_all = flops(every(1)) - plain
    extra_half = flops(every(2)) - plain
    assert extra_all > 0 and extra_half * 2 == extra_all

    def held(n: int) -> int:
        with SavedBytes(exclude=stack) as saved:
            t = x
            for i, block in enumerate(stack):
                t = checkpoint(block, t, use_reentrant=False) if i % n == 0 else block(t)
        return saved.nbytes

    with SavedBytes(exclude=stack) as none:
        stack(x)
    assert held(1) < held(2) < none.nbytes  # memory lands between the two extremes


def test_one_memory_budget_per_compiled_graph() -> None:
    import pytest
    import torch._dynamo
    from torch.autograd.graph import region_activation_memory_budget as budget

    def mixed(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        with budget(0.2):
            y = torch.sin(x @ w1)
        with budget(0.8):
            return torch.cos(y @ w2).sum()

    def split(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        with budget(0.2):
            y = torch.sin(x @ w1)
        torch._dynamo.graph_break()  # two graphs, one budget each
        with budget(0.8):
            return torch.cos(y @ w2).sum()

    torch.manual_seed(0)
    args = [torch.randn(8, 8, requires_grad=True) for _ in range(3)]
    expected = torch.autograd.grad(torch.cos(torch.sin(args[0] @ args[1]) @ args[2]).sum(), args)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="conflicting budgets within a single joint graph"):
        torch.compile(mixed, backend="aot_eager_decomp_partition")(*args)
    torch._dynamo.reset()
    got = torch.autograd.grad(torch.compile(split, backend="aot_eager_decomp_partition")(*args), args)
    assert all(torch.allclose(a, b) for a, b in zip(expected, got, strict=True))
    torch._dynamo.reset()


def test_partitioner_draws_its_memory_budget_pareto_curve(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import torch._dynamo
    import torch._functorch.config as functorch_config

    def f(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, w3: torch.Tensor) -> torch.Tensor:
        return torch.cos(torch.sin(torch.sin(x @ w1) @ w2) @ w3).sum()

    torch.manual_seed(0)
    args = [torch.randn(32, 32, requires_grad=True) for _ in range(4)]
    for default_budget in (1.0, 0.0):  # the flag alone draws nothing: the partitioner returns first
        out = tmp_path / f"at-{default_budget}"
        out.mkdir()
        torch._dynamo.reset()
        with functorch_config.patch(
            activation_memory_budget=default_budget,
            visualize_memory_budget_pareto=True,
            memory_budget_pareto_dir=str(out),
        ):
            torch.compile(f, backend="aot_eager_decomp_partition")(*args).backward()
        assert not list(out.glob("*.svg")), default_budget
    torch._dynamo.reset()
    with functorch_config.patch(
        activation_memory_budget=0.5, visualize_memory_budget_pareto=True, memory_budget_pareto_dir=str(tmp_path)
    ):
        torch.compile(f, backend="aot_eager_decomp_partition")(*args).backward()
    torch._dynamo.reset()
    (svg,) = tmp_path.glob("memory_budget_pareto*.svg")  # one curve per joint graph, at a budget inside (0, 1)
    text = svg.read_text()
    assert "Pareto Frontier of Memory Budget vs. Recomputation Runtime" in text
    # a budget inside (0, 1) is not enough: at 0.9 a more aggressive min-cut already fits,
    # so the partitioner returns that plan before the sweep and this graph gets no curve
    loose = tmp_path / "at-0.9"
    loose.mkdir()
    with functorch_config.patch(
        activation_memory_budget=0.9, visualize_memory_budget_pareto=True, memory_budget_pareto_dir=str(loose)
    ):
        torch.compile(f, backend="aot_eager_decomp_partition")(*args).backward()
    torch._dynamo.reset()
    assert not list(loose.glob("*.svg"))
