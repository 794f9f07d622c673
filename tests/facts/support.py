"""Helpers shared by the fact tests (torch 2.13, CPU, small tensors).

Memory is measured without touching process memory: either as the bytes of tensors that
autograd saves for backward (seen through torch.autograd.graph.saved_tensors_hooks), or as
the bytes of op outputs still alive after a forward pass (a TorchDispatchMode holding weak
references). Either way each storage is counted once, by its data_ptr.
"""

from __future__ import annotations

import gc
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Self

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import saved_tensors_hooks
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import checkpoint

# ----------------------------------------------------------------------------- memory meters


def param_ptrs(m: nn.Module) -> set[int]:
    """data_ptrs of the storages of m's parameters (to leave them out of a count)."""
    return {p.untyped_storage().data_ptr() for p in m.parameters()}


class _Packed:
    """What SavedMeter stores for one saved tensor; releases its share of the count on delete."""

    __slots__ = ("t", "meter", "key", "counted")

    def __init__(self, t: torch.Tensor, meter: SavedMeter, key: int, counted: bool) -> None:
        self.t = t
        self.meter = meter
        self.key = key
        self.counted = counted

    def __del__(self) -> None:
        if self.counted:
            self.meter._release(self.key)


class SavedMeter:
    """Bytes of tensors autograd saves for backward while the context is active.

    Each distinct storage (by data_ptr) is counted once while some saved tensor holds it:
    `live` follows saves and releases, `peak` is the highest `live` seen. `ignore` holds
    data_ptrs (parameters) left out of the count. `packs` and `unpacks` count every save
    and every read by backward; `shapes` lists (shape, dtype) of each counted save.
    """

    def __init__(self, ignore: set[int] | None = None) -> None:
        self.ignore = ignore or set()
        self.refs: dict[int, list[int]] = {}
        self.live = 0
        self.peak = 0
        self.packs = 0
        self.unpacks = 0
        self.shapes: list[tuple[tuple[int, ...], torch.dtype]] = []

    def _pack(self, t: torch.Tensor) -> _Packed:
        self.packs += 1
        key = t.untyped_storage().data_ptr()
        counted = key not in self.ignore
        if counted:
            self.shapes.append((tuple(t.shape), t.dtype))
            entry = self.refs.setdefault(key, [t.untyped_storage().nbytes(), 0])
            if entry[1] == 0:
                self.live += entry[0]
                self.peak = max(self.peak, self.live)
            entry[1] += 1
        return _Packed(t, self, key, counted)

    def _unpack(self, p: _Packed) -> torch.Tensor:
        self.unpacks += 1
        return p.t

    def _release(self, key: int) -> None:
        e = self.refs[key]
        e[1] -= 1
        if e[1] == 0:
            self.live -= e[0]
            del self.refs[key]

    def __enter__(self) -> Self:
        self._ctx = saved_tensors_hooks(self._pack, self._unpack)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


class SavedBytes:
    """Record the unique storages autograd saves for backward (parameters excluded).

    Unlike SavedMeter it never forgets a storage: `nbytes` and `count` are everything
    saved while the context was active, whether or not backward has freed it since.
    """

    def __init__(self, exclude: nn.Module | None = None) -> None:
        self.storages: dict[int, int] = {}
        self._skip = param_ptrs(exclude) if exclude is not None else set()

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in self._skip:
            self.storages[s.data_ptr()] = s.nbytes()
        return t

    def __enter__(self) -> Self:
        self._hooks = saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._hooks.__exit__(*exc)

    @property
    def nbytes(self) -> int:
        """Total bytes of the distinct storages saved."""
        return sum(self.storages.values())

    @property
    def count(self) -> int:
        """Number of distinct storages saved."""
        return len(self.storages)


class OutputTracker(TorchDispatchMode):
    """Remembers (weakly) every tensor an op produces while the mode is active."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[weakref.ref[torch.Tensor]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.refs.append(weakref.ref(t))
        return out


def held_output_bytes(run: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Call `run()`; return its result and the bytes of op outputs still alive afterwards.

    The result's own storage is left out. What is still alive after the forward pass is
    what autograd (or a checkpoint cache) keeps for backward. Unique storages are counted
    once, by data_ptr.
    """
    mode = OutputTracker()
    with mode:
        out = run()
    gc.collect()
    result_ptr = out.untyped_storage().data_ptr()
    storages: dict[int, int] = {}
    for ref in mode.refs:
        t = ref()
        if t is None:
            continue
        st = t.untyped_storage()
        if st.data_ptr() != result_ptr:
            storages[st.data_ptr()] = st.nbytes()
    return out, sum(storages.values())


class LiveBytes(TorchDispatchMode):
    """Bytes of op outputs alive at each moment while the mode is active, and their peak.

    Every tensor an op produces (forward, recompute, gradients) is counted once per storage
    (by data_ptr) from its creation until the last tensor on that storage is freed, which a
    weakref.finalize notices. Storages listed in `ignore` (parameters, preallocated .grad
    buffers) are left out. Unlike the saved-tensor meters it also sees what non-reentrant
    checkpoint rebuilds during backward, so `peak` is the step's peak of op outputs.
    """

    def __init__(self, ignore: set[int] | None = None) -> None:
        super().__init__()
        self.ignore = ignore or set()
        self.refs: dict[int, list[int]] = {}
        self.live = 0
        self.peak = 0

    def _drop(self, key: int) -> None:
        entry = self.refs[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.live -= entry[0]
            del self.refs[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key in self.ignore or storage.nbytes() == 0:
                continue
            entry = self.refs.setdefault(key, [storage.nbytes(), 0])
            if entry[1] == 0:
                self.live += entry[0]
                self.peak = max(self.peak, self.live)
            entry[1] += 1
            weakref.finalize(t, self._drop, key)
        return out


def grad_ptrs(m: nn.Module) -> set[int]:
    """data_ptrs of the .grad buffers of m's parameters (run one backward first)."""
    return {p.grad.untyped_storage().data_ptr() for p in m.parameters() if p.grad is not None}


# ----------------------------------------------------------------------------- op counting


class OpCounter(TorchDispatchMode):
    """Counts the aten ops that run while the mode is active.

    `counts` is keyed by op overload (e.g. torch.ops.aten.mm.default), `ops` by overload
    packet name (e.g. "mm").
    """

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[Any] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.counts[func] += 1
        return func(*args, **(kwargs or {}))

    @property
    def ops(self) -> Counter[str]:
        """The counts summed by overload packet name."""
        by_name: Counter[str] = Counter()
        for func, n in self.counts.items():
            by_name[func.overloadpacket.__name__] += n
        return by_name


# ----------------------------------------------------------------------------- small models


class Block(nn.Module):
    """A residual MLP block x + down(act(up(x))) that saves several activations inside
    (like a transformer MLP) and counts how often its forward runs in `calls`."""

    def __init__(self, h: int = 16, act: Callable[[torch.Tensor], torch.Tensor] = F.gelu) -> None:
        super().__init__()
        self.up = nn.Linear(h, 4 * h)
        self.down = nn.Linear(4 * h, h)
        self.act = act
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x + self.down(self.act(self.up(x)))


def make_stack(n: int = 4, h: int = 32, layer: Callable[[int], nn.Module] = Block) -> nn.Sequential:
    """n layers `layer(h)` built right after torch.manual_seed(0): the same weights each call."""
    torch.manual_seed(0)
    return nn.Sequential(*(layer(h) for _ in range(n)))


def run_chain(
    layers: Iterable[nn.Module], x: torch.Tensor, ckpt: bool = False, use_reentrant: bool = False
) -> torch.Tensor:
    """Run x through the layers in turn, each one checkpointed on its own when `ckpt`."""
    for layer in layers:
        x = checkpoint(layer, x, use_reentrant=use_reentrant) if ckpt else layer(x)
    return x


def layernorm_mlp() -> tuple[nn.Sequential, torch.Tensor]:
    """A seeded LayerNorm-Linear-GELU-Linear block (64 wide) and a batch of 32 for it: the
    compiled-gradient checks compare its gradients across ways of running it."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
    return net, torch.randn(32, 64)


def parameter_grads(
    net: nn.Module, x: torch.Tensor, forward: Callable[[torch.Tensor], torch.Tensor]
) -> list[torch.Tensor]:
    """`net`'s parameter gradients of mean(forward(x)^2), from zero."""
    net.zero_grad()
    forward(x).pow(2).mean().backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None for g in grads), "every parameter gets a gradient"
    return [g.clone() for g in grads if g is not None]


def largest_difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest elementwise difference between two lists of gradients."""
    return max((p - q).abs().max().item() for p, q in zip(a, b, strict=True))
