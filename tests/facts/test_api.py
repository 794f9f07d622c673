"""Fact tests for questions/pytorch-api.yaml (torch.utils.checkpoint API, torch 2.13).

Each test runs the behaviour a question teaches, on the CPU with small tensors, and
fails if PyTorch changes it. Every call passes use_reentrant= explicitly, except the
test about what happens when it is omitted.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import pytest
import torch
from torch.utils.checkpoint import (
    CheckpointError,
    GraphExecGroup,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
)

from tests.facts.support import held_output_bytes


def held_intermediate_bytes(run) -> int:  # type: ignore[no-untyped-def]
    """Bytes of op outputs still alive after `run()` returns, excluding its result.

    What is still alive after the forward pass is what autograd (or a checkpoint
    cache) keeps for backward. Unique storages are counted once, by data_ptr.
    """
    out, held = held_output_bytes(run)
    del out
    return held


def _graph_node_names(t: torch.Tensor) -> set[str]:
    """Class names of every autograd node reachable from t.grad_fn."""
    seen: set[str] = set()
    stack = [t.grad_fn]
    visited = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        seen.add(type(node).__name__)
        stack.extend(fn for fn, _ in node.next_functions)
    return seen


def _block() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.Linear(128, 32), torch.nn.Tanh())


def test_checkpoint_keeps_fewer_intermediates() -> None:
    block = _block()
    x = torch.randn(16, 32, requires_grad=True)
    # the call runs block now and returns its usual output (nothing is deferred)
    assert torch.equal(checkpoint(block, x, use_reentrant=False), block(x))
    plain = held_intermediate_bytes(lambda: block(x))
    ckpt = held_intermediate_bytes(lambda: checkpoint(block, x, use_reentrant=False))
    assert plain > 0
    assert ckpt == 0  # only the input (not an op output) is kept
    # and the gradients are the same as without checkpointing
    x1 = x.detach().clone().requires_grad_()
    block(x1).sum().backward()
    g_plain = x1.grad
    x2 = x.detach().clone().requires_grad_()
    checkpoint(block, x2, use_reentrant=False).sum().backward()
    assert torch.equal(g_plain, x2.grad)


def test_omitting_use_reentrant_warns_and_runs_reentrant() -> None:
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        y = checkpoint(lin, x)
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"  # the reentrant variant
    y_nr = checkpoint(lin, x, use_reentrant=False)
    assert type(y_nr.grad_fn).__name__ != "CheckpointFunctionBackward"
    # checkpoint_sequential behaves the same way
    seq = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    with pytest.warns(UserWarning, match="use_reentrant"):
        z = checkpoint_sequential(seq, 2, x)
    assert "CheckpointFunctionBackward" in _graph_node_names(z)


def test_warning_recommends_use_reentrant_false() -> None:
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checkpoint(lin, x)
    messages = " ".join(str(w.message) for w in caught)
    assert "use_reentrant=False is recommended" in messages
    # the documentation itself, not only the warning, makes the recommendation
    doc = " ".join((checkpoint.__doc__ or "").split())
    assert "It is recommended that you use ``use_reentrant=False``" in doc


def test_reentrant_rejects_autograd_grad() -> None:
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    y = checkpoint(lin, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match=r"incompatible with \.grad\(\)"):
        torch.autograd.grad(y.sum(), x)
    y = checkpoint(lin, x, use_reentrant=False)
    (gx,) = torch.autograd.grad(y.sum(), x)
    (expected,) = torch.autograd.grad(lin(x).sum(), x)
    assert torch.equal(gx, expected)  # the same gradient as without checkpointing


def test_reentrant_rejects_keyword_arguments() -> None:
    def scaled(a: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return (a * scale).sin()

    x = torch.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(scaled, x, scale=2.0, use_reentrant=True)
    y = checkpoint(scaled, x, scale=2.0, use_reentrant=False)
    assert torch.allclose(y, (x * 2.0).sin())

    # The error is checkpoint's own check, not a limit of autograd.Function: apply itself
    # passes a keyword argument through to forward.
    class Scaled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, scale=1.0):  # type: ignore[no-untyped-def, override]
            return a * scale

        @staticmethod
        def backward(ctx, g):  # type: ignore[no-untyped-def, override]
            return g, None

    assert torch.equal(Scaled.apply(x, scale=2.0), x * 2.0)


def test_determinism_check_compares_metadata_never_values() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    # global state the block reads; changed between forward and backward below
    state: dict[str, object] = {"scale": 1.0, "cols": 4, "dtype": torch.float32, "extra": True}

    def block(t: torch.Tensor) -> torch.Tensor:
        y = lin(t)[:, : state["cols"]] * state["scale"]  # type: ignore[misc]
        y = y.exp() if state["extra"] else y  # exp saves one more tensor when it runs
        return y.to(state["dtype"]).sin().float().sum(1)  # type: ignore[arg-type]

    def grad_after_change(key: str, value: object, check: str = "default") -> torch.Tensor:
        x.grad = None
        out = checkpoint(block, x, use_reentrant=False, determinism_check=check)
        old, state[key] = state[key], value
        try:
            out.sum().backward()
        finally:
            state[key] = old
        assert x.grad is not None
        return x.grad.clone()

    block(x).sum().backward()
    assert x.grad is not None
    plain = x.grad.clone()
    # the default check lets a value-only change through: no error, a wrong gradient
    assert not torch.equal(grad_after_change("scale", 2.0), plain)
    # ... while a change of shape or of dtype in a recomputed tensor raises
    for key, value in (("cols", 3), ("dtype", torch.float64)):
        with pytest.raises(CheckpointError, match="different metadata than during the forward"):
            grad_after_change(key, value)
    # "none" skips even that check: the same dtype change raises nothing
    grad_after_change("dtype", torch.float64, check="none")
    # ... while the count of saved tensors is compared at either setting, "none" included
    for check in ("none", "default"):
        with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
            grad_after_change("extra", False, check=check)
    # no level compares values, and the option is a string, not a boolean switch
    for bad in ("strict", "full", "values", True, None):
        with pytest.raises(ValueError, match="determinism_check should be one of"):
            checkpoint(lin, x, use_reentrant=False, determinism_check=bad)


def test_debug_and_context_fn_need_non_reentrant() -> None:
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lin, x, use_reentrant=True, debug=True)
    sac = functools.partial(create_selective_checkpoint_contexts, [torch.ops.aten.mm.default])
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lin, x, use_reentrant=True, context_fn=sac)
    # the check comes before the function: a counted function never runs
    runs = [0]

    def counted(a: torch.Tensor) -> torch.Tensor:
        runs[0] += 1
        return lin(a)

    for kw in ({"debug": True}, {"context_fn": sac}):
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            checkpoint(counted, x, use_reentrant=True, **kw)
    assert runs == [0]
    # both are accepted by the non-reentrant variant
    checkpoint(lin, x, use_reentrant=False, debug=True).sum().backward()
    checkpoint(lin, x, use_reentrant=False, context_fn=sac).sum().backward()


def _counted_sequential(n: int) -> tuple[torch.nn.Sequential, list[int]]:
    calls = [0] * n
    mods = []
    for i in range(n):
        m = torch.nn.Linear(4, 4)

        def hook(_mod, _inp, i=i):  # type: ignore[no-untyped-def]
            calls[i] += 1

        m.register_forward_pre_hook(hook)
        mods.append(m)
    return torch.nn.Sequential(*mods), calls


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential_leaves_last_segment_unchecked(use_reentrant: bool) -> None:
    x = torch.randn(2, 4, requires_grad=True)
    # 6 modules, 3 segments: chunks [0,1] [2,3] [4,5]; the last chunk is not checkpointed
    seq, calls = _counted_sequential(6)
    checkpoint_sequential(seq, 3, x, use_reentrant=use_reentrant).sum().backward()
    assert calls == [2, 2, 2, 2, 1, 1]
    # 7 modules, 3 segments: chunks of 7 // 3 = 2; the remainder joins the last, unchecked chunk
    seq, calls = _counted_sequential(7)
    checkpoint_sequential(seq, 3, x, use_reentrant=use_reentrant).sum().backward()
    assert calls == [2, 2, 2, 2, 1, 1, 1]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential_early_stop_skips_a_trailing_layer_that_saves_nothing(
    use_reentrant: bool,
) -> None:
    # The condition the question's prompt names (nn.Linear layers): a chunk whose last
    # layer saves nothing for backward (Flatten, a view) is cut short by early stop in the
    # non-reentrant variant, so that layer runs only once; the reentrant variant reruns it.
    calls = [0] * 6
    mods: list[torch.nn.Module] = [
        torch.nn.Linear(4, 4),
        torch.nn.Flatten(),
        torch.nn.Linear(4, 4),
        torch.nn.Linear(4, 4),
        torch.nn.Linear(4, 4),
        torch.nn.Linear(4, 4),
    ]
    for i, m in enumerate(mods):
        m.register_forward_pre_hook(lambda _m, _i, i=i: calls.__setitem__(i, calls[i] + 1))
    x = torch.randn(2, 4, requires_grad=True)
    seq = torch.nn.Sequential(*mods)
    checkpoint_sequential(seq, 3, x, use_reentrant=use_reentrant).sum().backward()
    assert calls == ([2, 2, 2, 2, 1, 1] if use_reentrant else [2, 1, 2, 2, 1, 1])


def test_preserve_rng_state_defaults_to_true_and_replays_dropout() -> None:
    drop = torch.nn.Dropout(0.5)
    x = torch.ones(1000, requires_grad=True)
    torch.manual_seed(0)
    # preserve_rng_state left at its default
    y = checkpoint(drop, x, use_reentrant=False)
    y.sum().backward()
    # the recomputed mask is the forward mask: gradient is non-zero exactly where y is
    assert torch.equal(y != 0, x.grad != 0)
    x.grad = None
    y = checkpoint(drop, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    assert not torch.equal(y != 0, x.grad != 0)


def test_early_stop_skips_tail_of_function() -> None:
    def run(use_reentrant: bool, early_stop: bool = True) -> list[str]:
        log: list[str] = []

        def unneeded(a: torch.Tensor) -> None:
            log.append("unneeded")
            a.exp()  # an op whose output backward never needs, before the last needed op

        def body(a: torch.Tensor) -> torch.Tensor:
            log.append("start")
            s = a.sin()
            unneeded(a)
            b = s.cos()  # the last op whose saved tensors backward needs
            log.append("end")  # runs after every needed tensor exists
            return b

        x = torch.randn(3, requires_grad=True)
        y = checkpoint(body, x, use_reentrant=use_reentrant, early_stop=early_stop)
        y.sum().backward()
        return log

    full = ["start", "unneeded", "end"]
    assert run(use_reentrant=True) == full + full  # whole function again
    # stopped early, but not pruned op by op: the unneeded op before the last needed one reruns
    assert run(use_reentrant=False) == full + ["start", "unneeded"]
    assert run(use_reentrant=False, early_stop=False) == full + full


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_grad_mode_during_first_forward(use_reentrant: bool) -> None:
    modes: list[bool] = []

    def body(a: torch.Tensor) -> torch.Tensor:
        modes.append(torch.is_grad_enabled())
        return a.sin().cos()

    x = torch.randn(3, requires_grad=True)
    y = checkpoint(body, x, use_reentrant=use_reentrant, early_stop=False)
    y.sum().backward()
    first_forward, recompute = modes
    # reentrant runs the original forward under no_grad; non-reentrant records the graph
    assert first_forward is (not use_reentrant)
    assert recompute is True


def test_context_fn_gives_one_context_to_forward_and_one_to_recompute() -> None:
    lin = torch.nn.Linear(8, 8)
    log: list[str] = []

    @contextlib.contextmanager
    def tag(name: str):  # type: ignore[no-untyped-def]
        log.append(f"enter {name}")
        yield

    def fn(t: torch.Tensor) -> torch.Tensor:
        log.append("run")
        return torch.tanh(lin(t))

    x = torch.randn(4, 8, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=False, context_fn=lambda: (tag("forward"), tag("recompute")))
    assert log == ["enter forward", "run"]  # the first context wraps the original call
    y.sum().backward()
    assert log == ["enter forward", "run", "enter recompute", "run"]  # the second, the rerun
    # a single context manager is not a pair
    with pytest.raises(TypeError):
        checkpoint(fn, x, use_reentrant=False, context_fn=lambda: tag("only"))


def test_nested_checkpoint_reruns_the_inner_function_twice_in_backward() -> None:
    lin = torch.nn.Linear(8, 8)
    calls = {"inner": 0, "outer": 0}

    def inner(t: torch.Tensor) -> torch.Tensor:
        calls["inner"] += 1
        return torch.tanh(lin(t))

    def outer(t: torch.Tensor) -> torch.Tensor:
        calls["outer"] += 1
        return torch.tanh(lin(checkpoint(inner, t, use_reentrant=False)))

    x = torch.randn(4, 8, requires_grad=True)
    out = checkpoint(outer, x, use_reentrant=False)
    assert calls == {"inner": 1, "outer": 1}
    out.sum().backward()
    # the outer recompute runs inner again (to rebuild inner's input to the outer ops), and
    # inner's own saved tensors need a second, inner recompute
    assert calls == {"inner": 3, "outer": 2}
    ref_x = x.detach().clone().requires_grad_(True)
    torch.tanh(lin(torch.tanh(lin(ref_x)))).sum().backward()
    assert torch.allclose(x.grad, ref_x.grad)

    # The third run needs outer to save inner's output: with outer returning it bare, the
    # outer rerun stops before reaching anything inner must rebuild, and inner runs twice.
    calls.update(inner=0, outer=0)

    def bare_outer(t: torch.Tensor) -> torch.Tensor:
        calls["outer"] += 1
        return checkpoint(inner, t, use_reentrant=False)

    checkpoint(bare_outer, torch.randn(4, 8, requires_grad=True), use_reentrant=False).sum().backward()
    assert calls == {"inner": 2, "outer": 2}

    # What outer must save is something built from y, not y itself: tanh saves its output
    # (computed from y) and is enough for a third run; y * 2 saves nothing and gives two.
    def tail_outer(tail):  # type: ignore[no-untyped-def]
        def f(t: torch.Tensor) -> torch.Tensor:
            calls["outer"] += 1
            return tail(checkpoint(inner, t, use_reentrant=False))

        return f

    probe = torch.tanh(torch.randn(3, requires_grad=True))
    assert torch.equal(probe.grad_fn._saved_result, probe)  # type: ignore[union-attr]
    for tail, runs in ((torch.tanh, 3), (lambda y: y * 2, 2)):
        calls.update(inner=0, outer=0)
        checkpoint(tail_outer(tail), torch.randn(4, 8, requires_grad=True), use_reentrant=False).sum().backward()
        assert calls["inner"] == runs


def _two_output_runs(grouped: bool, shared: bool, retain_first: bool = True) -> tuple[int, torch.Tensor | str]:
    """Runs of a checkpointed function with two outputs, backward called on each in turn
    (the first with retain_graph=retain_first), with or without one GraphExecGroup around both
    calls. shared: both outputs go through one op (sin) inside the region. Returns (runs,
    x.grad) or (runs, the error's class name)."""
    torch.manual_seed(0)
    w1 = torch.randn(8, 8, requires_grad=True)
    w2 = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8, requires_grad=True)
    runs = 0

    def heads(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        nonlocal runs
        runs += 1
        h = t.sin() if shared else t
        return torch.tanh(h @ w1), torch.tanh(h @ w2)

    a, b = checkpoint(heads, x, use_reentrant=False)
    try:
        with GraphExecGroup() if grouped else contextlib.nullcontext():
            a.sum().backward(retain_graph=retain_first)
            b.sum().backward()
    except CheckpointError as error:
        assert "already unpacked once" in str(error)
        return runs, type(error).__name__
    assert x.grad is not None
    return runs, x.grad


def test_graph_exec_group_shares_a_recompute_only_between_disjoint_calls() -> None:
    # outputs on separate paths: each backward call reruns the region (1 + 2 runs) ...
    runs_alone, grad_alone = _two_output_runs(grouped=False, shared=False)
    assert runs_alone == 3
    # ... and one group lets the second call use the first call's rerun: 1 + 1 runs
    runs_grouped, grad_grouped = _two_output_runs(grouped=True, shared=False)
    assert runs_grouped == 2
    assert isinstance(grad_alone, torch.Tensor) and isinstance(grad_grouped, torch.Tensor)
    assert torch.equal(grad_alone, grad_grouped)
    # outputs that share an op need its saved tensor in both calls: fine without a group
    # (3 runs), refused inside one (the second call finds the tensor already unpacked)
    runs_shared, grad_shared = _two_output_runs(grouped=False, shared=True)
    assert runs_shared == 3 and isinstance(grad_shared, torch.Tensor)
    assert _two_output_runs(grouped=True, shared=True) == (2, "CheckpointError")
