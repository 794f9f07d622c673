"""Fact tests for questions/large-scale.yaml (CPU build of PyTorch, small tensors)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from tests.facts.support import SavedBytes


class Attention(nn.Module):
    """Unfused attention, as in K22's analysis: scores, softmax and dropout are s x s."""

    def __init__(self, h: int = 32, heads: int = 4, core_checkpoint: bool = False) -> None:
        super().__init__()
        self.heads, self.core_checkpoint = heads, core_checkpoint
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)

    def core(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        probs = F.dropout(torch.softmax(scores, dim=-1), p=0.1, training=True)
        return probs @ v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        if self.core_checkpoint:
            ctx = checkpoint(self.core, q, k, v, use_reentrant=False)
        else:
            ctx = self.core(q, k, v)
        return self.proj(ctx.transpose(1, 2).reshape(b, s, h))


def _saved(model: nn.Module, s: int) -> int:
    torch.manual_seed(0)
    x = torch.randn(2, s, 32, requires_grad=True)
    with SavedBytes(exclude=model) as saved:
        model(x)
    return saved.nbytes


def test_attention_core_is_the_part_that_grows_with_sequence_squared() -> None:
    torch.manual_seed(0)
    full = Attention()
    selective = Attention(core_checkpoint=True)
    selective.load_state_dict(full.state_dict())

    s = 64
    full_1, full_2 = _saved(full, s), _saved(full, 2 * s)
    sel_1, sel_2 = _saved(selective, s), _saved(selective, 2 * s)

    # keeping everything: doubling s more than doubles the saved bytes (s^2 terms)
    assert full_2 > 3 * full_1
    # recomputing only the attention core: what is left grows linearly with s
    assert sel_2 == 2 * sel_1
    # and it is much smaller than keeping the s x s tensors
    assert sel_1 < full_1 / 2

    # same gradients either way (dropout masks replayed by RNG-state restore)
    grads = []
    for model in (full, selective):
        model.zero_grad()
        torch.manual_seed(1)
        x = torch.randn(2, s, 32)
        model(x).sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def _core_share(h: int, heads: int, s: int) -> float:
    """Share of an attention block's saved bytes that recomputing the core removes."""
    torch.manual_seed(0)
    full = Attention(h=h, heads=heads)
    selective = Attention(h=h, heads=heads, core_checkpoint=True)
    selective.load_state_dict(full.state_dict())
    x = torch.randn(2, s, h, requires_grad=True)
    nbytes = []
    for model in (full, selective):
        with SavedBytes(exclude=model) as saved:
            model(x)
        nbytes.append(saved.nbytes)
    return 1 - nbytes[1] / nbytes[0]


def test_core_recompute_share_grows_with_heads_and_sequence_and_falls_with_width() -> None:
    # K22's 5as/h against 34: the s x s part grows with heads a and length s, not with h
    base = _core_share(h=32, heads=4, s=64)
    assert _core_share(h=32, heads=4, s=128) > base  # longer sequence
    assert _core_share(h=32, heads=8, s=64) > base  # more heads
    assert _core_share(h=64, heads=4, s=64) < base  # wider hidden size


def test_in_flight_microbatches_each_hold_their_activations_until_backward() -> None:
    torch.manual_seed(0)
    stage = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32), nn.GELU())
    micro = [torch.randn(8, 32, requires_grad=True) for _ in range(4)]

    def forward_all(ckpt: bool) -> tuple[int, list[torch.Tensor]]:
        with SavedBytes(exclude=stage) as saved:
            outs = [checkpoint(stage, x, use_reentrant=False) if ckpt else stage(x) for x in micro]
        return saved.nbytes, outs

    with SavedBytes(exclude=stage) as one:
        stage(micro[0])
    # all forwards before any backward (GPipe-style fill): every micro-batch's activations live
    held, outs = forward_all(ckpt=False)
    assert held == 4 * one.nbytes
    # re-materialization: only each micro-batch's stage input is held
    held_ckpt, outs_ckpt = forward_all(ckpt=True)
    assert held_ckpt == 4 * micro[0].untyped_storage().nbytes()
    assert held_ckpt < held / 4
    for out in outs + outs_ckpt:
        out.sum().backward()


def _per_layer_bytes(s: int, b: int, h: int, t: int, full: bool) -> float:
    """K22's per-layer activation memory: full recompute keeps the 16-bit layer input
    (2sbh); selective recompute with tensor and sequence parallelism keeps 34sbh/t."""
    return 2 * s * b * h if full else 34 * s * b * h / t


def test_full_recompute_keeps_less_than_selective_until_t_passes_17() -> None:
    s, b, h = 2048, 1, 12288
    for t in (1, 2, 4, 8, 16):
        assert _per_layer_bytes(s, b, h, t, full=True) < _per_layer_bytes(s, b, h, t, full=False)
    assert _per_layer_bytes(s, b, h, 8, full=False) / _per_layer_bytes(s, b, h, 8, full=True) == 34 / 16
    assert _per_layer_bytes(s, b, h, 32, full=True) > _per_layer_bytes(s, b, h, 32, full=False)
