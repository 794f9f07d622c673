"""Fact tests for questions/performance.yaml (torch 2.13, CPU, small tensors).

Compute is counted, never timed: torch.utils.flop_counter.FlopCounterMode counts
matmul FLOPs, and a small TorchDispatchMode counts aten ops, in forward and backward.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode


class OpCounter(TorchDispatchMode):
    """Counts aten ops (by overload packet name) that run while the mode is active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


class SavedMeter:
    """Bytes of distinct storages saved for backward (one count per data_ptr) still held."""

    def __init__(self, ignore: set[int]) -> None:
        self.ignore = ignore
        self.ptrs: dict[int, int] = {}

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        key = t.untyped_storage().data_ptr()
        if key not in self.ignore:
            self.ptrs[key] = t.untyped_storage().nbytes()
        return t

    @property
    def total(self) -> int:
        return sum(self.ptrs.values())

    def __enter__(self) -> "SavedMeter":
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


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


def stack(n: int = 4, h: int = 64) -> nn.ModuleList:
    torch.manual_seed(0)
    return nn.ModuleList(Layer(h) for _ in range(n))


def run(layers: nn.ModuleList, x: torch.Tensor, mode: str) -> torch.Tensor:
    for layer in layers:
        if mode == "none":
            x = layer(x)
        else:
            x = checkpoint(layer, x, use_reentrant=(mode == "reentrant"))
    return x


def test_full_recompute_costs_one_extra_forward() -> None:
    layers = stack()
    x = torch.randn(32, 64, requires_grad=True)
    fwd = flops(lambda: run(layers, x, "none"))
    plain = flops(lambda: run(layers, x, "none").sum().backward())
    assert plain == 3 * fwd  # backward of a matmul layer: about 2x its forward
    for mode in ("reentrant", "non-reentrant"):
        ckpt = flops(lambda: run(layers, x, mode).sum().backward())
        assert ckpt == plain + fwd  # one more forward: 4/3 of the plain step
        assert ckpt * 3 == plain * 4


def test_recompute_happens_in_backward_not_in_forward() -> None:
    layers = stack()
    x = torch.randn(32, 64, requires_grad=True)
    fwd_plain = flops(lambda: run(layers, x, "none"))
    with FlopCounterMode(display=False) as fc:
        out = run(layers, x, "non-reentrant")
    assert fc.get_total_flops() == fwd_plain  # the checkpointed forward costs the same
    bwd_ckpt = flops(lambda: out.sum().backward())
    out_plain = run(layers, x, "none")
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
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    cost: dict[str, tuple[int, int, Counter[str]]] = {}
    for where in ("none", "pointwise", "block"):
        with SavedMeter(params) as m, OpCounter() as oc:
            with FlopCounterMode(display=False) as fc:
                out = block(x, where)
                saved = m.total
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
