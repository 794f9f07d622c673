"""Fact tests for questions/compile.yaml (the compile-time partitioner, torch 2.13).

These use AOTAutograd's aot_function with explicit partitioners and graph-capturing
compilers (no Inductor, no C++ compiler), and torch.compile with the aot_eager or a
capturing backend, so each runs in about a second on the CPU.
"""

from __future__ import annotations

import pytest
import torch
import torch._functorch.config as functorch_config
from functorch.compile import (
    aot_function,
    default_partition,
    make_boxed_func,
    min_cut_rematerialization_partition,
)
from torch.utils.checkpoint import checkpoint

MM = torch.ops.aten.mm.default


def _partition(fn, partition_fn, n_inputs: int):  # type: ignore[no-untyped-def]
    """Run fn forward+backward through AOTAutograd; return (saved names, backward graph)."""
    graphs: dict[str, torch.fx.GraphModule] = {}

    def fw(gm, _inputs):  # type: ignore[no-untyped-def]
        graphs["fw"] = gm
        return make_boxed_func(gm)

    def bw(gm, _inputs):  # type: ignore[no-untyped-def]
        graphs["bw"] = gm
        return make_boxed_func(gm)

    compiled = aot_function(fn, fw_compiler=fw, bw_compiler=bw, partition_fn=partition_fn)
    torch.manual_seed(0)
    args = [torch.randn(8, 8, requires_grad=True) for _ in range(n_inputs)]
    compiled(*args).sum().backward()
    (outputs,) = [n.args[0] for n in graphs["fw"].graph.nodes if n.op == "output"]
    saved = [str(o) for o in outputs[1:]]  # outputs[0] is the user-visible result
    return saved, graphs["bw"]


def _bw_targets(bw: torch.fx.GraphModule) -> list[object]:
    return [n.target for n in bw.graph.nodes if n.op == "call_function"]


def chain(a: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return torch.mm(torch.mm(a, w1).sin().cos().exp(), w2)


def three_layers(a, w1, w2, w3):  # type: ignore[no-untyped-def]
    h = torch.mm(a, w1).relu()
    h = torch.mm(h, w2).relu()
    return torch.mm(h, w3).relu()


def test_min_cut_recomputes_cheap_pointwise_op() -> None:
    saved_default, bw_default = _partition(chain, default_partition, 3)
    saved_min_cut, bw_min_cut = _partition(chain, min_cut_rematerialization_partition, 3)
    # the default partitioner saves the sin output; min-cut does not ...
    assert "sin" in saved_default
    assert "sin" not in saved_min_cut
    # ... and computes sin(mm) again in the backward graph instead
    sin = torch.ops.aten.sin.default
    assert _bw_targets(bw_min_cut).count(sin) == _bw_targets(bw_default).count(sin) + 1
    # both keep the matmul output
    assert "mm" in saved_default and "mm" in saved_min_cut


def test_min_cut_default_budget_never_recomputes_matmul() -> None:
    assert functorch_config.activation_memory_budget == 1.0
    _, bw = _partition(three_layers, min_cut_rematerialization_partition, 4)
    # 3 forward matmuls -> exactly 2 gradient matmuls each, no recomputed matmul
    assert _bw_targets(bw).count(MM) == 6


def test_budget_zero_recomputes_like_full_checkpointing() -> None:
    with functorch_config.patch(activation_memory_budget=0.0):
        saved, bw = _partition(three_layers, min_cut_rematerialization_partition, 4)
    # only the graph inputs are kept; every activation is rebuilt in backward
    assert all(name.startswith("primals") for name in saved)
    assert _bw_targets(bw).count(MM) > 6
    # a middle budget lands in between
    with functorch_config.patch(activation_memory_budget=0.5):
        saved_half, bw_half = _partition(three_layers, min_cut_rematerialization_partition, 4)
    assert 6 <= _bw_targets(bw_half).count(MM) <= _bw_targets(bw).count(MM)


def test_budget_lives_in_functorch_config_not_dynamo() -> None:
    assert functorch_config.activation_memory_budget == 1.0
    with pytest.raises(AttributeError, match="does not exist"):
        torch._dynamo.config.activation_memory_budget = 0.5  # the blog's spelling
    with pytest.raises(AttributeError):
        _ = torch._dynamo.config.activation_memory_budget


def test_dynamo_wraps_checkpoint_as_higher_order_op() -> None:
    graphs: list[torch.fx.GraphModule] = []

    def capture(gm, _inputs):  # type: ignore[no-untyped-def]
        graphs.append(gm)
        return gm.forward

    def body(x: torch.Tensor) -> torch.Tensor:
        return x.sin().cos()

    @torch.compile(backend=capture, fullgraph=True)
    def f(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(body, x, use_reentrant=False) * 2

    torch._dynamo.reset()
    f(torch.randn(4, requires_grad=True)).sum().backward()
    (gm,) = graphs
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "tag_activation_checkpoint" in targets
    # sin and cos sit inside the wrapped body, not inline in the outer graph
    assert not any("sin" in t or "cos" in t for t in targets)


def test_preserve_rng_state_false_is_ignored_under_compile() -> None:
    def body(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, 0.5, training=True)

    def f(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(body, x, use_reentrant=False, preserve_rng_state=False)

    x = torch.ones(1000, requires_grad=True)
    torch.manual_seed(0)
    y = f(x)
    y.sum().backward()
    # eager: the recompute draws a new mask, so the gradient's mask disagrees with y's
    assert not torch.equal(y != 0, x.grad != 0)
    x.grad = None
    torch._dynamo.reset()
    y = torch.compile(f, backend="aot_eager", fullgraph=True)(x)
    y.sum().backward()
    assert (y == 0).any() and (y != 0).any()  # dropout still ran
    # compiled: the gradient uses the same mask as the forward
    assert torch.equal(y != 0, x.grad != 0)
