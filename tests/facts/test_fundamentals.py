"""Fact tests for questions/fundamentals.yaml (torch 2.13, CPU, small tensors).

Each test runs the behaviour a question teaches and fails if PyTorch changes it.
Memory is measured as bytes of tensors saved for backward, seen through
torch.autograd.graph.saved_tensors_hooks and counted once per storage (data_ptr).
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import saved_tensors_hooks
from torch.utils.checkpoint import checkpoint

from tests.facts.support import SavedMeter, make_stack, param_ptrs, run_chain


def test_checkpointing_lowers_saved_bytes_and_keeps_gradients_identical() -> None:
    results = {}
    for ckpt in (False, True):
        blocks = make_stack()
        x = torch.randn(8, 16, 32, generator=torch.Generator().manual_seed(1), requires_grad=True)
        with SavedMeter(ignore=param_ptrs(blocks)) as m:
            out = run_chain(blocks, x, ckpt)
            saved_after_forward = m.live
            out.square().sum().backward()
        grads = [p.grad.clone() for p in blocks.parameters()] + [x.grad.clone()]
        results[ckpt] = (saved_after_forward, grads)
    plain_bytes, plain_grads = results[False]
    ckpt_bytes, ckpt_grads = results[True]
    # Checkpointing keeps only each block's input: far fewer saved bytes ...
    assert ckpt_bytes * 4 < plain_bytes
    # ... and the gradients are bit-identical: nothing is approximated or compressed.
    assert all(torch.equal(a, b) for a, b in zip(plain_grads, ckpt_grads, strict=True))


def test_checkpointed_region_reruns_its_forward_during_backward() -> None:
    for reentrant in (False, True):
        blocks = make_stack(n=3)
        x = torch.randn(4, 32, requires_grad=True)
        out = run_chain(blocks, x, ckpt=True, use_reentrant=reentrant)
        assert [b.calls for b in blocks] == [1, 1, 1]
        out.sum().backward()
        assert [b.calls for b in blocks] == [2, 2, 2]


def test_plain_model_runs_forward_once() -> None:
    blocks = make_stack(n=3)
    x = torch.randn(4, 32, requires_grad=True)
    run_chain(blocks, x, ckpt=False).sum().backward()
    assert [b.calls for b in blocks] == [1, 1, 1]


def test_backward_reads_the_saved_activations_and_frees_them() -> None:
    blocks = make_stack(n=2)
    x = torch.randn(4, 32, requires_grad=True)
    with SavedMeter() as m:
        out = run_chain(blocks, x, ckpt=False)
        assert m.packs > 0 and m.live > 0
        out.sum().backward()
        # every tensor saved in forward was read back by backward, then released
        assert m.unpacks == m.packs
        assert m.live == 0
    # the saved tensors are gone, so a second backward through the graph fails
    try:
        out.sum().backward()
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)
    else:
        raise AssertionError("second backward should fail once saved tensors are freed")


def saved_count(fn, *args: torch.Tensor) -> int:
    with SavedMeter() as m:
        fn(*args)
    return m.packs


def test_what_each_op_saves_for_backward() -> None:
    a = torch.randn(64, requires_grad=True)
    b = torch.randn(64, requires_grad=True)
    assert saved_count(torch.add, a, b) == 0  # d(a+b) needs neither input
    assert saved_count(torch.mul, a, b) == 2  # d(a*b)/da = b and d/db = a
    m1 = torch.randn(8, 8, requires_grad=True)
    m2 = torch.randn(8, 8, requires_grad=True)
    assert saved_count(torch.mm, m1, m2) == 2  # each input's gradient needs the other input
    with SavedMeter() as m:
        y = torch.tanh(a)  # tanh' = 1 - tanh^2: it saves its own output
    assert m.packs == 1
    assert next(iter(m.refs)) == y.untyped_storage().data_ptr()


def test_checkpoint_under_no_grad_does_nothing() -> None:
    for reentrant in (False, True):
        blocks = make_stack(n=2)
        x = torch.randn(4, 32, requires_grad=True)
        with torch.no_grad(), SavedMeter() as m, warnings.catch_warnings():
            # reentrant warns that the second block's input does not require grad
            warnings.simplefilter("ignore", UserWarning)
            out = run_chain(blocks, x, ckpt=True, use_reentrant=reentrant)
        assert m.packs == 0
        assert not out.requires_grad
        assert [b.calls for b in blocks] == [1, 1]


def test_checkpoint_keeps_the_region_input() -> None:
    blocks = make_stack(n=1)
    x = torch.randn(4, 32, requires_grad=True)
    with SavedMeter(ignore=param_ptrs(blocks)) as m:
        out = checkpoint(blocks[0], x, use_reentrant=False)
        # the only activation kept for the region is its input x
        assert set(m.refs) == {x.untyped_storage().data_ptr()}
    assert out.requires_grad


def test_gradients_identical_with_dropout_when_rng_is_replayed() -> None:
    def build() -> nn.Sequential:
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(32, 64), nn.Dropout(0.5), nn.GELU(), nn.Linear(64, 32))

    x0 = torch.randn(16, 32, generator=torch.Generator().manual_seed(2))
    grads = {}
    for mode in ("plain", "reentrant", "non-reentrant"):
        model = build()
        x = x0.clone().requires_grad_()
        torch.manual_seed(3)
        if mode == "plain":
            out = model(x)
        else:
            # preserve_rng_state left at its default: the test fails if the default stops
            # replaying the RNG state
            out = checkpoint(model, x, use_reentrant=(mode == "reentrant"))
        out.square().sum().backward()
        grads[mode] = [p.grad for p in model.parameters()] + [x.grad]
    for mode in ("reentrant", "non-reentrant"):
        assert all(torch.equal(a, b) for a, b in zip(grads["plain"], grads[mode], strict=True))
    # the replay is what makes them equal: without it the recompute draws new masks
    model = build()
    x = x0.clone().requires_grad_()
    torch.manual_seed(3)
    checkpoint(model, x, use_reentrant=False, preserve_rng_state=False).square().sum().backward()
    unreplayed = [p.grad for p in model.parameters()] + [x.grad]
    assert not all(torch.equal(a, b) for a, b in zip(grads["plain"], unreplayed, strict=True))


def test_linear_saves_its_input_only_for_the_weight_gradient() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(64, 64)
    x = torch.randn(32, 64, requires_grad=True)  # gradients must still flow to earlier layers
    with SavedMeter(ignore=param_ptrs(lin)) as trainable:
        y = lin(x)
    assert trainable.shapes == [((32, 64), torch.float32)]  # the input, for dL/dW = dy^T x
    y.sum().backward()
    assert x.grad is not None

    lin.requires_grad_(False)  # frozen weight: dL/dx = dy W needs only W
    x.grad = None
    with SavedMeter(ignore=param_ptrs(lin)) as frozen:
        y = lin(x)
    assert frozen.shapes == [] and frozen.peak == 0
    assert frozen.packs == 1  # the weight itself, which is a parameter, not an activation
    y.sum().backward()
    assert x.grad is not None
    # ... and that one saved tensor is the weight (a view of it), not the bias: the input
    # gradient dy W needs W and nothing else, for 2-D and 3-D inputs alike
    weight_ptr = lin.weight.untyped_storage().data_ptr()
    packed: list[int] = []
    for inp in (x, torch.randn(2, 16, 64, requires_grad=True)):
        packed.clear()
        with saved_tensors_hooks(lambda t: packed.append(t.untyped_storage().data_ptr()) or t, lambda t: t):
            lin(inp)
        assert packed == [weight_ptr]


def test_saved_activations_grow_in_proportion_to_depth() -> None:
    held = {}
    for n in (2, 4, 8):
        stack = make_stack(n, 32)
        x = torch.randn(8, 32, requires_grad=True)
        with SavedMeter(ignore=param_ptrs(stack)) as meter:
            stack(x)
        held[n] = meter.live
    assert held[4] == 2 * held[2] and held[8] == 2 * held[4]
    # a whole language model also holds tensors depth does not scale (embedding output,
    # vocabulary-sized logits and log-softmax): doubling the stack grows it by under 2x
    whole = {}
    for n in (2, 4):
        stack = make_stack(n, 32)
        torch.manual_seed(1)
        embed, head = nn.Embedding(4000, 32), nn.Linear(32, 4000)
        ids = torch.randint(0, 4000, (8, 16))
        ignore = param_ptrs(stack) | param_ptrs(embed) | param_ptrs(head)
        with SavedMeter(ignore=ignore) as meter:
            logits = head(stack(embed(ids)))
            F.cross_entropy(logits.flatten(0, 1), ids.flatten())
        whole[n] = meter.live
    assert whole[2] < whole[4] < 2 * whole[2]
