"""Fact tests for questions/compile.yaml (the compile-time partitioner, torch 2.13).

These use AOTAutograd's aot_function with explicit partitioners and graph-capturing
compilers, and torch.compile with the aot_eager or a capturing backend, so each runs in
about a second on the CPU. One test compiles with Inductor (C++ kernels, a compiler
needed; some 20 s the first time) to read the fused backward kernel.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

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
from torch._dynamo.backends.common import aot_autograd
from torch._functorch import partitioners
from torch._functorch.partitioners import get_default_op_list
from torch._inductor.custom_graph_pass import CustomPartitionerFn
from torch._inductor.utils import run_fw_bw_and_get_code
from torch.utils.checkpoint import checkpoint

from tests.facts.support import SavedBytes

MM = torch.ops.aten.mm.default


def _partition(fn, partition_fn, n_inputs: int):  # type: ignore[no-untyped-def]
    """Run fn forward+backward through AOTAutograd; return (saved names, backward graph)."""
    graphs, fw, bw = _capturing_compilers()
    compiled = aot_function(fn, fw_compiler=fw, bw_compiler=bw, partition_fn=partition_fn)
    torch.manual_seed(0)
    args = [torch.randn(8, 8, requires_grad=True) for _ in range(n_inputs)]
    compiled(*args).sum().backward()
    (outputs,) = [n.args[0] for n in graphs["fw"].graph.nodes if n.op == "output"]
    saved = [str(o) for o in outputs[1:]]  # outputs[0] is the user-visible result
    return saved, graphs["bw"]


def _capturing_compilers() -> tuple[dict[str, torch.fx.GraphModule], Any, Any]:
    """AOTAutograd compilers that keep the forward and backward graphs they are given (in the
    dict, as "fw" and "bw") and run them unchanged."""
    graphs: dict[str, torch.fx.GraphModule] = {}

    def keeping(name: str) -> Any:
        def compiler(gm, _inputs):  # type: ignore[no-untyped-def]
            graphs[name] = gm
            return make_boxed_func(gm)

        return compiler

    return graphs, keeping("fw"), keeping("bw")


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
    graphs, fw, bw = _capturing_compilers()
    compiled = aot_function(fn, fw_compiler=fw, bw_compiler=bw, partition_fn=min_cut_rematerialization_partition)
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
    # why: at the default the partitioner recomputes only ops on its allowlist of cheap
    # ones (pointwise, views, ...); mm is not on it, and it is on the compute-intensive list
    # that still bans it when the allowlist is switched off
    aten = torch.ops.aten
    ops = get_default_op_list()
    assert functorch_config.ban_recompute_not_in_allowlist is True
    assert aten.sin in ops.recomputable_ops and aten.relu in ops.recomputable_ops
    assert aten.mm not in ops.recomputable_ops and aten.convolution not in ops.recomputable_ops
    assert aten.mm in ops.compute_intensive_ops and aten.convolution in ops.compute_intensive_ops
    with functorch_config.patch(ban_recompute_not_in_allowlist=False):
        _, bw_denylist = _partition(three_layers, min_cut_rematerialization_partition, 4)
    assert _bw_targets(bw_denylist).count(MM) == 6
    # "not rerun" is not "nothing rerun": on the sin chain the same default plan computes sin
    # once more in backward than the plain partition does, and still adds no matmul
    sin = torch.ops.aten.sin.default
    _, bw_plain = _partition(chain, default_partition, 3)
    _, bw_chain = _partition(chain, min_cut_rematerialization_partition, 3)
    assert _bw_targets(bw_chain).count(sin) == _bw_targets(bw_plain).count(sin) + 1
    assert _bw_targets(bw_chain).count(MM) == _bw_targets(bw_plain).count(MM) == 4


def test_default_budget_is_one_and_one_is_the_plain_min_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget 1.0 (the default) hands back the runtime-optimized min cut unchanged: the same
    saved tensors as with no patch, exactly the set solve_min_cut returned, no knapsack, and
    that set already leaves the cheap sin to be recomputed."""
    assert functorch_config.activation_memory_budget == 1.0
    cuts: list[list[str]] = []
    original = partitioners.solve_min_cut

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        saved = original(*args, **kwargs)
        cuts.append([n.name for n in saved[0]])
        return saved

    monkeypatch.setattr(partitioners, "solve_min_cut", spy)
    knapsack = _KnapsackSpy(monkeypatch)
    saved_unpatched, bw_unpatched = _partition(chain, min_cut_rematerialization_partition, 3)
    with functorch_config.patch(activation_memory_budget=1.0):
        saved_one, bw_one = _partition(chain, min_cut_rematerialization_partition, 3)
    assert saved_one == saved_unpatched
    assert [str(t) for t in _bw_targets(bw_one)] == [str(t) for t in _bw_targets(bw_unpatched)]
    # one min cut per partition, returned as it is: no further cut and no knapsack
    assert len(cuts) == 2 and knapsack.calls == []
    assert sorted(cuts[1]) == sorted(saved_one)
    assert "sin" not in saved_one and "mm" in saved_one
    _, bw_plain = _partition(chain, default_partition, 3)
    sin = torch.ops.aten.sin.default
    assert _bw_targets(bw_one).count(sin) == _bw_targets(bw_plain).count(sin) + 1
    # a budget just under 1.0 is read on the scale: a second, more aggressive cut runs and
    # the saved set shrinks, so 1.0 is the end of the scale, not a share of some memory
    with functorch_config.patch(activation_memory_budget=0.99):
        saved_under, _ = _partition(chain, min_cut_rematerialization_partition, 3)
    assert len(cuts) == 4
    assert set(saved_under) < set(saved_one)


class _KnapsackSpy:
    """Wraps the partitioner's knapsack entry point: records each call's candidates
    (output shapes), their normalised sizes and estimated runtimes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[dict[str, object]] = []
        original = partitioners._optimize_runtime_with_given_memory

        def spy(joint_graph, memory, runtimes, max_memory, node_info, nodes):  # type: ignore[no-untyped-def]
            self.calls.append(
                {
                    "shapes": [tuple(n.meta["val"].shape) for n in nodes],
                    "memory": list(memory),
                    "runtimes": list(runtimes),
                }
            )
            return original(joint_graph, memory, runtimes, max_memory, node_info, nodes)

        monkeypatch.setattr(partitioners, "_optimize_runtime_with_given_memory", spy)


# Three independent matmuls; the largest output is also by far the costliest to compute:
# (16x256)@(256x16) -> 16x16, 131072 FLOPs; (12x2)@(2x12) -> 12x12, 576; (10x2)@(2x10) -> 10x10, 400
_KNAPSACK_SHAPES = [(16, 256), (256, 16), (12, 2), (2, 12), (10, 2), (2, 10)]


def three_matmuls(a, wa, b, wb, c, wc):  # type: ignore[no-untyped-def]
    return torch.mm(a, wa).relu().sum() + torch.mm(b, wb).relu().sum() + torch.mm(c, wc).relu().sum()


def _recomputed_matmuls(budget: float) -> list[tuple[int, ...]]:
    """Output shapes of the forward matmuls that the backward graph reruns at this budget."""
    graphs, fw, bw = _capturing_compilers()
    compiled = aot_function(
        three_matmuls, fw_compiler=fw, bw_compiler=bw, partition_fn=min_cut_rematerialization_partition
    )
    torch.manual_seed(0)
    with functorch_config.patch(activation_memory_budget=budget):
        compiled(*[torch.randn(*s, requires_grad=True) for s in _KNAPSACK_SHAPES]).backward()
    # a rerun forward matmul is the only square mm in backward (gradient matmuls are not)
    shapes = [tuple(n.meta["val"].shape) for n in graphs["bw"].graph.nodes if n.target is MM]
    return sorted(s for s in shapes if s[0] == s[1])


def test_budget_knapsack_keeps_the_costly_matmul_and_reruns_cheap_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # defaults: runtime estimated from FLOP counts, a dynamic-programming knapsack solver
    assert functorch_config.activation_memory_budget_runtime_estimator == "flops"
    assert functorch_config.activation_memory_budget_solver == "dp"
    spy = _KnapsackSpy(monkeypatch)
    # budget 1: the default min cut, no knapsack and no matmul rerun
    assert _recomputed_matmuls(1.0) == [] and spy.calls == []
    # budget 0.55: no cheap-op cut fits, so the knapsack gets the three matmuls
    rerun = _recomputed_matmuls(0.55)
    (call,) = spy.calls
    assert call["shapes"] == [(16, 16), (12, 12), (10, 10)]
    # their cost is a FLOP count (2*m*k*n), not a timing
    assert call["runtimes"] == [2 * 16 * 256 * 16, 2 * 12 * 2 * 12, 2 * 10 * 2 * 10]
    memory = call["memory"]
    assert isinstance(memory, list) and memory[0] > 0.5 > memory[1] + memory[2]
    # it keeps the largest, costliest output and reruns the two cheap ones, although
    # dropping the largest alone would also have met the budget (0.29 + 0.2 < 0.55)
    assert rerun == [(10, 10), (12, 12)]


def test_knapsack_runs_only_when_cheap_recomputes_cannot_meet_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _KnapsackSpy(monkeypatch)
    # on mm-sin-cos-exp-mm, budget 0.9 is met by recomputing more pointwise ops (exp too):
    # the partitioner's looser min cuts fit, no knapsack, no matmul rerun
    with functorch_config.patch(activation_memory_budget=0.9):
        saved, bw = _partition(chain, min_cut_rematerialization_partition, 3)
    assert "exp" not in saved and "mm" in saved
    assert spy.calls == [] and _bw_targets(bw).count(MM) == 4
    # a tighter budget reaches the knapsack
    with functorch_config.patch(activation_memory_budget=0.3):
        _partition(chain, min_cut_rematerialization_partition, 3)
    assert len(spy.calls) == 1


def test_lower_budgets_save_fewer_bytes_and_rerun_more_matmuls() -> None:
    """The demo's budget curve, 1 -> 0.5 -> 0, on a small block: the bytes saved for backward
    fall at each step and the backward graph's matmul count rises (6 is the gradient ones)."""
    saved_bytes: list[int] = []
    matmuls: list[int] = []
    for budget in (1.0, 0.5, 0.0):
        with functorch_config.patch(activation_memory_budget=budget):
            saved_bytes.append(_saved_bytes_min_cut(three_layers, 4))
            _, bw = _partition(three_layers, min_cut_rematerialization_partition, 4)
        matmuls.append(_bw_targets(bw).count(MM))
    assert saved_bytes[0] > saved_bytes[1] > saved_bytes[2]
    assert matmuls[0] == 6 < matmuls[1] < matmuls[2]


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
    # 2.13 also has a region-scoped prototype, torch.autograd.graph.region_activation_memory_budget:
    # it only annotates a compiled region for the same partitioner, which overrides the global
    # value with it, and it refuses to run outside torch.compile
    assert _compiled_backward_matmuls(None) == 6  # the global default, 1.0
    assert _compiled_backward_matmuls(0.0) == 9  # the region's 0.0: every matmul rerun
    with pytest.raises(RuntimeError, match="inside a torch.compile region"):
        with torch.autograd.graph.region_activation_memory_budget(0.0):
            pass


def _compiled_backward_matmuls(region_budget: float | None) -> int:
    """Backward matmuls of three_layers under torch.compile (AOTAutograd, min-cut partitioner),
    with its whole body inside region_activation_memory_budget(region_budget) unless None."""
    graphs, fw, bw = _capturing_compilers()
    backend = aot_autograd(fw_compiler=fw, bw_compiler=bw, partition_fn=min_cut_rematerialization_partition)

    def f(a, w1, w2, w3):  # type: ignore[no-untyped-def]
        if region_budget is None:
            return three_layers(a, w1, w2, w3)
        with torch.autograd.graph.region_activation_memory_budget(region_budget):
            return three_layers(a, w1, w2, w3)

    torch._dynamo.reset()
    torch.manual_seed(0)
    args = [torch.randn(8, 8, requires_grad=True) for _ in range(4)]
    torch.compile(f, backend=backend, fullgraph=True)(*args).sum().backward()
    torch._dynamo.reset()
    return _bw_targets(graphs["bw"]).count(MM)


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
