"""Fact tests for questions/compile.yaml (the compile-time partitioner, torch 2.13).

These use AOTAutograd's aot_function with explicit partitioners and graph-capturing
compilers, and torch.compile with the aot_eager or a capturing backend, so each runs in
about a second on the CPU. One test compiles with Inductor (C++ kernels, a compiler
needed; some 20 s the first time) to read the fused backward kernel.
"""

from __future__ import annotations

import re
import shutil

import pytest
import torch
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_settings
import torch.nn.functional as F
from functorch.compile import (
    aot_function,
    default_partition,
    make_boxed_func,
    min_cut_rematerialization_partition,
)
from torch._inductor.custom_graph_pass import CustomPartitionerFn
from torch._inductor.utils import run_fw_bw_and_get_code
from torch.utils.checkpoint import checkpoint

from tests.facts.support import SavedBytes

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


def _saved_bytes_min_cut(fn, n_inputs: int) -> int:  # type: ignore[no-untyped-def]
    """Bytes the min-cut partitioner keeps for backward: the distinct tensors behind the
    forward graph's saved outputs (a saved view counts as the tensor it views)."""
    graphs: dict[str, torch.fx.GraphModule] = {}

    def fw(gm, _inputs):  # type: ignore[no-untyped-def]
        graphs["fw"] = gm
        return make_boxed_func(gm)

    compiled = aot_function(
        fn,
        fw_compiler=fw,
        bw_compiler=lambda gm, _: make_boxed_func(gm),
        partition_fn=min_cut_rematerialization_partition,
    )
    torch.manual_seed(0)
    compiled(*[torch.randn(8, 8, requires_grad=True) for _ in range(n_inputs)]).sum().backward()
    (outputs,) = [n.args[0] for n in graphs["fw"].graph.nodes if n.op == "output"]

    def base(node: torch.fx.Node) -> torch.fx.Node:
        while node.op == "call_function" and getattr(node.target, "_schema", None) is not None:
            returns = node.target._schema.returns  # type: ignore[union-attr]
            if not returns or returns[0].alias_info is None:
                break
            node = node.args[0]  # type: ignore[assignment]
        return node

    bases = {base(o) for o in outputs[1:] if o is not None}
    return sum(b.meta["val"].numel() * b.meta["val"].element_size() for b in bases)


def _saved_bytes_eager(fn, n_inputs: int) -> int:  # type: ignore[no-untyped-def]
    """Bytes eager autograd saves for backward for the same call (distinct storages)."""
    torch.manual_seed(0)
    args = [torch.randn(8, 8, requires_grad=True) for _ in range(n_inputs)]
    with SavedBytes() as meter:
        fn(*args)
    return meter.nbytes


def mlp(a: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(a + F.gelu(a @ w1) @ w2, (8,))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.T / 8**0.5, -1) @ v


def test_min_cut_saves_no_more_than_eager() -> None:
    assert functorch_config.activation_memory_budget == 1.0  # the default plan
    for fn, n in ((chain, 3), (three_layers, 4), (mlp, 3), (attention, 3)):
        # eager's saved bytes (inputs included) against what min-cut keeps: never more
        assert _saved_bytes_min_cut(fn, n) <= _saved_bytes_eager(fn, n), fn.__name__
    # on the chain it keeps less (sin is recomputed) ...
    assert _saved_bytes_min_cut(chain, 3) < _saved_bytes_eager(chain, 3)
    # ... while still saving the matmul output: speed first, it reruns no matmul
    saved, bw = _partition(chain, min_cut_rematerialization_partition, 3)
    _, bw_default = _partition(chain, default_partition, 3)
    assert "mm" in saved and _bw_targets(bw).count(MM) == _bw_targets(bw_default).count(MM)


class _DefaultPartition(CustomPartitionerFn):
    """Inductor's partitioner hook set to AOTAutograd's default_partition (saves every
    forward output backward needs, recomputes nothing), to compare with Inductor's own."""

    def __call__(self, gm, joint_inputs, **kwargs):  # type: ignore[no-untyped-def]
        kwargs.pop("compiler", None)
        kwargs.pop("static_lifetime_input_indices", None)
        return default_partition(gm, joint_inputs, **kwargs)

    def uuid(self) -> str:
        return "tests.facts.default_partition"


def _inductor_backward_kernels(**inductor_config: object) -> dict[str, str]:
    """Compile `chain` with Inductor on the CPU; return the backward's fused kernels by name."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    args = [torch.randn(32, 32, requires_grad=True) for _ in range(3)]
    with inductor_settings.patch(inductor_config):
        compiled = torch.compile(chain)
        _, (_forward_code, backward_code) = run_fw_bw_and_get_code(lambda: compiled(*args))
    torch._dynamo.reset()
    names = re.findall(r"^(cpp_fused_\w+) = ", backward_code, flags=re.MULTILINE)
    kernels = {}
    for name in names:
        body = backward_code[backward_code.index(f"{name} = ") :]
        kernels[name] = body[: body.index("''')")]
    return kernels


@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("c++")), reason="Inductor's CPU path needs a C++ compiler")
def test_inductor_fuses_the_recomputed_sin_into_the_backward_kernel() -> None:
    # Inductor's own partitioner (min-cut) against the default one that saves sin's output
    min_cut = _inductor_backward_kernels()
    saving = _inductor_backward_kernels(custom_partitioner_fn=_DefaultPartition())
    # either way backward runs one fused pointwise kernel (the cos and sin derivatives) ...
    assert len(min_cut) == 1 and len(saving) == 1
    (recompute,), (reload,) = min_cut.values(), saving.values()

    def sins(code: str) -> int:
        return len(re.findall(r"\.sin\(\)|\bsin\(", code))

    def inputs(code: str) -> int:
        return len(set(re.findall(r"\bin_(?:out_)?ptr\d+", code)))

    # ... and min-cut's recompute of sin(mm) is one more sin inside that same kernel, which
    # reads one tensor fewer: no kernel added, one saved tensor neither written nor read
    assert sins(recompute) == sins(reload) + 1
    assert inputs(recompute) == inputs(reload) - 1


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


def test_dynamo_wraps_checkpoint_as_higher_order_op_or_falls_back_to_eager() -> None:
    graphs: list[torch.fx.GraphModule] = []

    def capture(gm, _inputs):  # type: ignore[no-untyped-def]
        graphs.append(gm)
        return gm.forward

    def safe(x: torch.Tensor) -> torch.Tensor:
        return x.sin().cos()

    @torch.compile(backend=capture, fullgraph=True)
    def wrapped(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(safe, x, use_reentrant=False) * 2

    torch._dynamo.reset()
    wrapped(torch.randn(4, requires_grad=True)).sum().backward()
    (gm,) = graphs
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert "tag_activation_checkpoint" in targets
    # sin and cos sit inside the wrapped body, not inline in the outer graph
    assert not any("sin" in t or "cos" in t for t in targets)

    # a body that cannot be traced safely: fullgraph refuses it, otherwise eager fallback
    calls: list[int] = []

    def body(x: torch.Tensor) -> torch.Tensor:
        calls.append(1)  # a side effect outside the region: not safe to trace into the op
        return x.sin().cos()

    def f(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(body, x, use_reentrant=False) * 2

    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported, match="Unsafe side effect"):
        torch.compile(f, backend=capture, fullgraph=True)(torch.randn(4, requires_grad=True))
    torch._dynamo.reset()
    graphs.clear()
    calls.clear()
    x = torch.randn(4, requires_grad=True)
    y = torch.compile(f, backend=capture)(x)  # without fullgraph: a graph break instead
    assert len(calls) == 1
    y.sum().backward()
    assert len(calls) == 2  # eager checkpoint: the body ran again in backward
    targets = [str(n.target) for g in graphs for n in g.graph.nodes if n.op == "call_function"]
    assert "tag_activation_checkpoint" not in targets  # no higher-order op was made
    assert not any("sin" in t or "cos" in t for t in targets)  # the body stayed in eager
    torch.testing.assert_close(x.grad, -torch.sin(x.sin()) * torch.cos(x) * 2)
    torch._dynamo.reset()


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
