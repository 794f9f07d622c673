"""Fact tests for questions/correctness.yaml (what recomputation can change, torch 2.13)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils.checkpoint import CheckpointError, checkpoint

from tests.facts.support import held_output_bytes, largest_difference, layernorm_mlp, parameter_grads

BOTH = pytest.mark.parametrize("use_reentrant", [False, True])


def _dropout_grads(mode: str, use_reentrant: bool = False, preserve: bool = True):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16)
    drop = torch.nn.Dropout(0.5)
    x = torch.randn(8, 16, requires_grad=True)

    def f(a: torch.Tensor) -> torch.Tensor:
        return drop(lin(a)).tanh()

    torch.manual_seed(123)
    if mode == "plain":
        y = f(x)
    else:
        y = checkpoint(f, x, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    (y * torch.arange(16.0)).sum().backward()
    return lin.weight.grad.clone(), x.grad.clone()


@BOTH
def test_checkpointing_leaves_gradients_unchanged(use_reentrant: bool) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 16), torch.nn.LayerNorm(16)
    )
    x = torch.randn(8, 16, requires_grad=True)
    model(x).square().sum().backward()
    ref = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad(set_to_none=True)
    x.grad = None
    checkpoint(model, x, use_reentrant=use_reentrant).square().sum().backward()
    got = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    for a, b in zip(ref, got, strict=True):
        assert torch.equal(a, b)  # bit-identical on the CPU


@BOTH
def test_dropout_gradients_identical_with_rng_replay(use_reentrant: bool) -> None:
    ref = _dropout_grads("plain")
    got = _dropout_grads("ckpt", use_reentrant, preserve=True)
    for a, b in zip(ref, got, strict=True):
        assert torch.equal(a, b)  # bit-identical


class _Watched(torch.nn.Module):
    """Linear, dropout, then a scale read from `self.scale` at call time (global state the
    block depends on). Each call records the RNG state it starts from, whether dropout is
    in training mode, the dtypes of its results and, when `record`, its dropout mask."""

    def __init__(self, record: bool = True) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(16, 16)
        self.drop = torch.nn.Dropout(0.5)
        self.scale = 1.0
        self.record = record
        self.rng: list[torch.Tensor] = []
        self.training_flags: list[bool] = []
        self.masks: list[torch.Tensor] = []
        self.dtypes: set[torch.dtype] = set()

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        self.rng.append(torch.get_rng_state())
        self.training_flags.append(self.drop.training)
        h = self.drop(self.lin(a))
        if self.record:
            self.masks.append((h == 0).detach())
        out = (h * self.scale).tanh()
        self.dtypes |= {h.dtype, out.dtype}
        return out


def _watched_grads(
    use_reentrant: bool | None, *, preserve: bool = True, scale_in_backward: float = 1.0
) -> tuple[_Watched, torch.Tensor]:
    """(block, input gradient): plain when use_reentrant is None, else checkpointed. Between
    forward and backward, random numbers are drawn and the block's scale is set."""
    block = _Watched()
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1), requires_grad=True)
    torch.manual_seed(123)
    if use_reentrant is None:
        y = block(x)
    else:
        y = checkpoint(block, x, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    torch.rand(100)  # the RNG moves on before backward, as it does in a real step
    block.scale = scale_in_backward
    (y * torch.arange(16.0)).sum().backward()
    assert x.grad is not None
    return block, x.grad.clone()


@BOTH
def test_exact_gradients_need_the_rerun_to_see_what_forward_saw(use_reentrant: bool) -> None:
    _, plain = _watched_grads(None)
    block, same = _watched_grads(use_reentrant)
    # dropout inside, either variant: bit-identical, and the rerun stays in float32
    assert torch.equal(same, plain)
    assert len(block.rng) == 2 and block.dtypes == {torch.float32}
    # what breaks it: the rerun starting from a different random state ...
    _, fresh_rng = _watched_grads(use_reentrant, preserve=False)
    assert not torch.equal(fresh_rng, plain)
    # ... or global state the block reads changing between forward and backward
    _, changed = _watched_grads(use_reentrant, scale_in_backward=2.0)
    assert not torch.equal(changed, plain)
    # the prompt's argument that requires grad: with only a data batch that does not, the
    # default (use_reentrant left out, so reentrant after a warning) records no graph and
    # the block's weight gets no gradient, while the non-reentrant variant still gives one
    if not use_reentrant:
        return
    lin, head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    data = torch.randn(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = checkpoint(lin, data)
    messages = " ".join(str(w.message) for w in caught)
    assert "use_reentrant parameter should be passed explicitly" in messages
    assert "None of the inputs have requires_grad=True" in messages
    head(out).sum().backward()
    assert lin.weight.grad is None and head.weight.grad is not None
    head(checkpoint(lin, data, use_reentrant=False)).sum().backward()
    assert lin.weight.grad is not None


@BOTH
def test_recompute_restores_the_rng_state_forward_started_from(use_reentrant: bool) -> None:
    block, _ = _watched_grads(use_reentrant)
    forward_rng, recompute_rng = block.rng
    # the RNG moved on after forward, yet the recompute started from forward's state ...
    assert torch.equal(recompute_rng, forward_rng)
    assert not torch.equal(torch.get_rng_state(), forward_rng)
    # ... so dropout, still in training mode, drew the same mask
    assert block.training_flags == [True, True]
    assert torch.equal(block.masks[0], block.masks[1]) and block.masks[0].any()
    # without the replay the recompute draws a different mask
    block, _ = _watched_grads(use_reentrant, preserve=False)
    assert not torch.equal(block.masks[0], block.masks[1])
    # no mask is kept from forward to backward: after a checkpointed forward no op output
    # but the result is alive, while the plain forward keeps dropout's mask among others
    x = torch.randn(8, 16, requires_grad=True)
    plain, checkpointed = _Watched(record=False), _Watched(record=False)
    _, plain_kept = held_output_bytes(lambda: plain(x))
    _, checkpoint_kept = held_output_bytes(lambda: checkpoint(checkpointed, x, use_reentrant=use_reentrant))
    assert checkpoint_kept == 0 and plain_kept >= x.nbytes


@BOTH
def test_dropout_gradients_silently_differ_without_rng_replay(use_reentrant: bool) -> None:
    ref = _dropout_grads("plain")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning is raised either
        got = _dropout_grads("ckpt", use_reentrant, preserve=False)
    assert not torch.equal(ref[0], got[0])
    assert not torch.equal(ref[1], got[1])


@BOTH
def test_batchnorm_running_stats_updated_twice(use_reentrant: bool) -> None:
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(8)
    x = torch.randn(4, 8, requires_grad=True)
    y = checkpoint(bn, x, use_reentrant=use_reentrant)
    assert bn.num_batches_tracked.item() == 1
    mean_after_forward = bn.running_mean.clone()
    y.sum().backward()
    assert bn.num_batches_tracked.item() == 2  # the recompute counted the batch again
    assert not torch.equal(bn.running_mean, mean_after_forward)  # and moved the mean again
    # without checkpointing: one update
    bn2 = torch.nn.BatchNorm1d(8)
    bn2(x).sum().backward()
    assert bn2.num_batches_tracked.item() == 1


@BOTH
def test_side_effects_run_again_in_backward(use_reentrant: bool) -> None:
    calls = [0]
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)

    def body(a: torch.Tensor) -> torch.Tensor:
        calls[0] += 1  # e.g. a step counter or a log line, on the first line
        return torch.nn.functional.gelu(lin(a))

    x = torch.randn(3, 4, requires_grad=True)
    y = checkpoint(body, x, use_reentrant=use_reentrant)
    assert calls[0] == 1  # forward calls the function at once, it does not defer it
    y.sum().backward()
    assert calls[0] == 2  # the recompute called it again, early stop or not

    # the condition the prompt names (a layer): a region that saves nothing for backward is
    # never rerun by the non-reentrant variant, while the reentrant one always reruns it
    calls[0] = 0

    def saves_nothing(a: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return a * 2  # a multiply by a Python number keeps no tensor for backward

    checkpoint(saves_nothing, x, use_reentrant=use_reentrant).sum().backward()
    assert calls[0] == (2 if use_reentrant else 1)

    # why the prompt's input comes out of a trained layer (so it requires grad): given only
    # a data batch, the reentrant variant keeps no graph, so it never reruns (and the
    # layer's weight gets no gradient)
    calls[0] = 0
    lin.zero_grad()
    head = torch.nn.Linear(4, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "None of the inputs have requires_grad=True"
        head(checkpoint(body, torch.randn(3, 4), use_reentrant=use_reentrant)).sum().backward()
    if use_reentrant:
        assert calls[0] == 1 and lin.weight.grad is None
    else:
        assert calls[0] == 2 and lin.weight.grad is not None


def test_frozen_input_reentrant_gives_none_grads() -> None:
    torch.manual_seed(0)
    block = torch.nn.Linear(4, 4)
    head = torch.nn.Linear(4, 4)
    frozen = torch.randn(2, 4)  # a data batch, or the output of a frozen embedding
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = head(checkpoint(block, frozen, use_reentrant=True))
    out.sum().backward()
    assert block.weight.grad is None  # the checkpointed layer learns nothing
    assert head.weight.grad is not None  # layers after it still do
    block.zero_grad(set_to_none=True)
    head(checkpoint(block, frozen, use_reentrant=False)).sum().backward()
    assert block.weight.grad is not None
    # making the input require grad also fixes the reentrant variant
    block.zero_grad(set_to_none=True)
    head(checkpoint(block, frozen.clone().requires_grad_(), use_reentrant=True)).sum().backward()
    assert block.weight.grad is not None


def test_reentrant_ignores_tensors_inside_a_list() -> None:
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)

    def body(items: list[torch.Tensor]) -> torch.Tensor:
        return lin(items[0])

    # forward finds no top-level tensor that requires grad, and says so
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(body, [x], use_reentrant=True)
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        y.sum().backward()  # the prompt's call: a backward from y alone
    # had y fed a layer with weights, backward would run and x and lin would learn nothing
    head = torch.nn.Linear(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = checkpoint(body, [x], use_reentrant=True)
    head(y).sum().backward()
    assert x.grad is None and lin.weight.grad is None and head.weight.grad is not None
    y = checkpoint(body, [x], use_reentrant=False)
    y.sum().backward()
    assert x.grad is not None


def test_default_determinism_check_catches_shape_change() -> None:
    state = {"calls": 0}

    def body(a: torch.Tensor) -> torch.Tensor:
        state["calls"] += 1
        rows = 4 if state["calls"] == 1 else 3  # global state changes between passes
        return a[:rows].sin()

    x = torch.randn(4, 4, requires_grad=True)
    y = checkpoint(body, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        y.sum().backward()


def test_value_change_gives_silently_wrong_gradient() -> None:
    state = {"calls": 0}

    def body(a: torch.Tensor) -> torch.Tensor:
        state["calls"] += 1
        scale = float(state["calls"])  # 1.0 in forward, 2.0 in the recompute
        return torch.sin(a * scale)  # same shape, different values on recompute

    x = torch.randn(5, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = checkpoint(body, x, use_reentrant=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either
        y.sum().backward()  # and no error
    assert state["calls"] == 2
    right = torch.cos(x.detach())  # d/dx sin(1.0 * x)
    assert not torch.allclose(x.grad, right)
    # backward mixed the runs: sin's saved input came from the recompute (scale 2), the
    # multiply's own factor from forward (scale 1)
    assert torch.allclose(x.grad, torch.cos(2 * x.detach()))

    # the condition the prompt names: the changed value must reach a tensor saved for
    # backward. With x * scale alone the multiply keeps its forward factor and nothing is rerun.
    state["calls"] = 0
    x.grad = None

    def scale_only(a: torch.Tensor) -> torch.Tensor:
        state["calls"] += 1
        return a * float(state["calls"])

    checkpoint(scale_only, x, use_reentrant=False).sum().backward()
    assert state["calls"] == 1 and torch.equal(x.grad, torch.ones(5))  # forward's factor, 1.0


@BOTH
def test_autocast_state_is_replayed_in_recompute(use_reentrant: bool) -> None:
    dtypes: list[torch.dtype] = []

    enabled: list[bool] = []

    def body(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        enabled.append(torch.is_autocast_enabled("cpu"))
        out = a @ w
        dtypes.append(out.dtype)
        # sin saves the matmul's output, so even the default early stop has to rerun the matmul
        return out.sin().float().sum(dim=1)

    a = torch.randn(4, 4, requires_grad=True)
    w = torch.randn(4, 4, requires_grad=True)
    body(a, w)
    assert dtypes == [torch.float32]  # outside autocast the body's matmul is float32
    dtypes.clear()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = checkpoint(body, a, w, use_reentrant=use_reentrant)  # the defaults otherwise
    assert dtypes == [torch.bfloat16]
    assert not torch.is_autocast_enabled("cpu")
    y.sum().backward()  # backward runs outside autocast
    assert dtypes == [torch.bfloat16, torch.bfloat16]  # the recompute ran the matmul in bf16 again
    assert enabled[-2:] == [True, True]  # inside the rerun, forward's autocast was back on
    # the inputs' dtype does not decide it: float16 inputs are cast too, float64 is left alone
    for dtype, expected in ((torch.float16, torch.bfloat16), (torch.float64, torch.float64)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            m = torch.ones(2, 2, dtype=dtype)
            assert (m @ m).dtype == expected


def _draw_after_step(mode: str) -> float:
    """One forward and backward of a dropout block, then the next number the global CPU
    generator gives."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8, requires_grad=True)

    def block(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(lin(t), p=0.5, training=True)

    if mode == "plain":
        y = block(x)
    elif mode == "no-replay":
        y = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
    else:
        y = checkpoint(block, x, use_reentrant=(mode == "reentrant"))
    y.sum().backward()
    return torch.rand(1).item()


def test_recompute_leaves_the_global_random_stream_where_the_plain_model_does() -> None:
    plain = _draw_after_step("plain")
    # the replayed recompute draws from a restored copy of the state, then puts it back
    assert _draw_after_step("non-reentrant") == plain
    assert _draw_after_step("reentrant") == plain
    # without replay the recompute draws fresh numbers from the live generator and moves it on
    assert _draw_after_step("no-replay") != plain


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_gradient_penalty_through_checkpoint_needs_non_reentrant() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)

    def critic(t: torch.Tensor) -> torch.Tensor:
        return torch.tanh(lin(t)) ** 2

    x = torch.randn(4, 8, requires_grad=True)
    (g,) = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    expected = lin.weight.grad.clone()

    lin.zero_grad()
    y = checkpoint(critic, x, use_reentrant=False)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    assert torch.equal(lin.weight.grad, expected)

    # reentrant: torch.autograd.grad is refused, and backward(create_graph=True) leaves an
    # input gradient with no graph behind it, so the penalty cannot be differentiated
    y = checkpoint(critic, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        torch.autograd.grad(y.sum(), x, create_graph=True)
    x.grad = None
    lin.zero_grad()
    checkpoint(critic, x, use_reentrant=True).sum().backward(create_graph=True)
    assert x.grad.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.grad.pow(2).sum().backward()

    # In the full WGAN-GP loss nothing fails: the penalty is a constant, so backward
    # silently drops its term. Real and fake samples require grad here, so the reentrant
    # critic terms themselves reach the weights.
    real = torch.randn(4, 8, requires_grad=True)
    fake = torch.randn(4, 8, requires_grad=True)

    def weight_grad(use_reentrant: bool | None, with_penalty: bool) -> torch.Tensor:
        def run(t: torch.Tensor) -> torch.Tensor:
            return critic(t) if use_reentrant is None else checkpoint(critic, t, use_reentrant=use_reentrant)

        x.grad = None
        if use_reentrant:
            run(x).sum().backward(create_graph=True)
            gp = x.grad.pow(2).sum()
        else:
            (g,) = torch.autograd.grad(run(x).sum(), x, create_graph=True)
            gp = g.pow(2).sum()
        lin.zero_grad()
        loss = run(fake).mean() - run(real).mean()
        (loss + 10 * gp if with_penalty else loss).backward()
        return lin.weight.grad.clone()

    plain = weight_grad(None, True)
    assert not torch.equal(plain, weight_grad(None, False))  # the penalty does move them
    assert torch.equal(weight_grad(False, True), plain)
    dropped = weight_grad(True, True)  # no error ...
    assert torch.equal(dropped, weight_grad(True, False))  # ... and no penalty in it
    assert not torch.equal(dropped, plain)


def test_compiled_gradients_differ_by_the_decompositions_rounding() -> None:
    """The /demo's budget rows on the CPU compile with aot_eager_decomp_partition: the
    partitioner plus Inductor's decompositions, no code generation or fusion. The same
    partitioner without decompositions (aot_eager) matches eager bit for bit, so the last-bit
    difference comes from the decomposed ops, and it is the same whatever the budget."""
    import torch._dynamo

    net, x = layernorm_mlp()

    def grads(forward) -> list[torch.Tensor]:  # type: ignore[no-untyped-def]
        return parameter_grads(net, x, forward)

    eager = grads(net)
    assert largest_difference(eager, grads(lambda t: checkpoint(net, t, use_reentrant=False))) == 0.0
    diffs = {}
    try:
        for backend in ("aot_eager", "aot_eager_decomp_partition"):
            for budget in (1.0, 0.0):
                torch._dynamo.reset()
                with torch._functorch.config.patch(activation_memory_budget=budget):
                    diffs[backend, budget] = largest_difference(eager, grads(torch.compile(net, backend=backend)))
    finally:
        torch._dynamo.reset()
    scale = max(g.abs().max().item() for g in eager)
    assert diffs["aot_eager", 1.0] == diffs["aot_eager", 0.0] == 0.0  # no decompositions: exact
    decomposed = diffs["aot_eager_decomp_partition", 1.0]
    assert 0.0 < decomposed < 1e-6 * scale  # the last bits of float32, not a different gradient
    # budget 1 (the default min cut, which reruns cheap ops) as budget 0 (which reruns the most)
    assert diffs["aot_eager_decomp_partition", 0.0] == decomposed
