"""Fact tests for questions/memory-anatomy.yaml (torch 2.13, CPU, small tensors).

Activation memory is measured as the bytes of tensors autograd saves for backward,
seen through torch.autograd.graph.saved_tensors_hooks, one count per storage (data_ptr).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tests.facts.support import SavedMeter, make_stack, param_ptrs, run_chain


def nbytes(ts: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in ts)


def test_checkpointing_leaves_parameter_gradient_and_optimizer_memory_unchanged() -> None:
    sizes = {}
    for ckpt in (False, True):
        model = make_stack()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randn(8, 16, 32, generator=torch.Generator().manual_seed(1))
        with SavedMeter(ignore=param_ptrs(model)) as m:
            out = run_chain(model, x, ckpt)
            activations = m.live
            out.square().mean().backward()
        opt.step()
        params = list(model.parameters())
        state = [v for p in params for v in opt.state[p].values() if v.dim() > 0]
        sizes[ckpt] = (activations, nbytes(params), nbytes([p.grad for p in params]), nbytes(state))
    (act0, p0, g0, s0), (act1, p1, g1, s1) = sizes[False], sizes[True]
    # activations saved for backward shrink ninefold (each block keeps its input, not its
    # input plus two 4x-wide hidden tensors) ...
    assert act0 == 9 * act1
    assert (p0, g0, s0) == (p1, g1, s1)  # ... weights, gradients and AdamW state do not
    assert g0 == p0 and s0 == 2 * p0


def test_adamw_keeps_two_fp32_values_per_parameter() -> None:
    model = make_stack(n=1)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 32)).sum().backward()
    opt.step()
    per_param = {k: v for p in model.parameters() for k, v in opt.state[p].items() if v.dim() > 0}
    assert sorted(per_param) == ["exp_avg", "exp_avg_sq"]  # momentum and variance
    state_bytes = sum(
        v.numel() * v.element_size() for p in model.parameters() for v in opt.state[p].values() if v.dim() > 0
    )
    assert state_bytes == 8 * n_params


def test_sgd_momentum_keeps_one_fp32_value_per_parameter() -> None:
    model = make_stack(n=1)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 32)).sum().backward()
    opt.step()
    state = [v for p in model.parameters() for v in opt.state[p].values()]
    assert sum(v.numel() * v.element_size() for v in state) == 4 * n_params


def activation_bytes(model: nn.Module, x: torch.Tensor) -> int:
    with SavedMeter(ignore=param_ptrs(model)) as m:
        out = model(x)
        live = m.live
    del out
    return live


def test_saved_activation_bytes_grow_linearly_with_batch_and_sequence() -> None:
    model = make_stack(n=2)
    base = activation_bytes(model, torch.randn(2, 16, 32))
    assert activation_bytes(model, torch.randn(4, 16, 32)) == 2 * base  # batch x2
    assert activation_bytes(model, torch.randn(2, 32, 32)) == 2 * base  # sequence x2
    assert activation_bytes(model, torch.randn(8, 64, 32)) == 16 * base


class UnfusedAttention(nn.Module):
    def __init__(self, h: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
        probs = scores.softmax(dim=-1)  # (b, heads, s, s)
        return self.proj((probs @ v).transpose(1, 2).reshape(b, s, h))


def test_unfused_attention_saves_a_tensor_quadratic_in_sequence_length() -> None:
    torch.manual_seed(0)
    b, h, a = 2, 32, 4
    attn = UnfusedAttention(h, a)
    f = {s: activation_bytes(attn, torch.randn(b, s, h)) for s in (16, 32)}
    # f(s) = linear(s) + quadratic(s); f(2s) - 2 f(s) = 2 * quadratic(s)
    quadratic = (f[32] - 2 * f[16]) // 2
    assert quadratic == b * a * 16 * 16 * 4  # one fp32 (b, a, s, s) softmax output
    assert f[32] > 2 * f[16]


def test_checkpointed_layer_keeps_only_its_input() -> None:
    model = make_stack(n=3)
    b, s, h = 4, 16, 32
    x = torch.randn(b, s, h)
    with SavedMeter(ignore=param_ptrs(model)) as m:
        out = run_chain(model, x, ckpt=True)
        assert m.live == 3 * b * s * h * 4  # one fp32 (b, s, h) input per layer
    assert out.requires_grad


def test_autocast_saves_16_bit_activations_and_a_16_bit_weight_copy() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(64, 64, bias=False)
    x = torch.randn(8, 64, requires_grad=True)  # as inside a model: the input needs a gradient
    with SavedMeter(ignore=param_ptrs(lin)) as m, torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.relu(lin(x))
    saved = set(m.shapes)
    assert ((8, 64), torch.bfloat16) in saved  # activations stored in 2 bytes
    assert ((64, 64), torch.bfloat16) in saved  # plus a bf16 copy of the fp32 weight
    assert all(dtype == torch.bfloat16 for _, dtype in saved)
    assert lin.weight.dtype == torch.float32  # the fp32 weight stays too
    assert out.dtype == torch.bfloat16


def test_saved_activations_peak_at_end_of_forward_and_are_freed_during_backward() -> None:
    model = make_stack(n=4)
    x = torch.randn(4, 16, 32)
    during_forward: list[int] = []
    during_backward: list[int] = []
    with SavedMeter(ignore=param_ptrs(model)) as m:
        h = x
        for layer in model:
            h = layer(h)
            during_forward.append(m.live)
            h.register_hook(lambda g: during_backward.append(m.live) or g)
        h.sum().backward()
        after = m.live
    assert during_forward == sorted(during_forward)  # grows layer by layer
    assert m.peak == during_forward[-1]  # highest when forward ends
    assert during_backward == sorted(during_backward, reverse=True)  # falls as backward runs
    assert during_backward[-1] < m.peak and after == 0
