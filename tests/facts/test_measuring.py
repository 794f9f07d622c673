"""Fact tests for questions/measuring.yaml (CPU build of PyTorch, small tensors)."""

from __future__ import annotations

import sys
import warnings

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from tests.facts.support import OpCounter, SavedBytes


def _mlp(width: int = 256, depth: int = 4) -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width, bias=False), nn.Tanh()]
    return nn.Sequential(*layers)


def test_out_of_memory_error_is_one_class() -> None:
    assert torch.OutOfMemoryError is torch.cuda.OutOfMemoryError
    assert issubclass(torch.OutOfMemoryError, RuntimeError)  # caught by `except RuntimeError`


def test_saved_tensor_hooks_measure_what_checkpointing_drops() -> None:
    model = _mlp()
    x = torch.randn(64, 256, requires_grad=True)

    # sys.getsizeof sees the Python object, not the tensor's data
    big = torch.zeros(1024, 1024)
    assert sys.getsizeof(big) < 1024
    assert big.untyped_storage().nbytes() == 4 * 1024 * 1024

    with SavedBytes(exclude=model) as plain:
        model(x)
    with SavedBytes(exclude=model) as ckpt:
        checkpoint(model, x, use_reentrant=False)
    # without checkpointing: the input and the four Tanh outputs (each Tanh output is saved
    # by Tanh and again by the next Linear, but it is one storage, counted once)
    one = 64 * 256 * 4
    assert plain.nbytes == 5 * one
    # with the whole model checkpointed: only its input is kept
    assert ckpt.nbytes == one


def test_dispatch_mode_counts_recomputed_matmuls() -> None:
    model = _mlp(depth=3)
    x = torch.randn(8, 256, requires_grad=True)

    def backward_mm(ckpt: bool) -> int:
        out = checkpoint(model, x, use_reentrant=False) if ckpt else model(x)
        with OpCounter() as bwd:
            out.sum().backward()
        return bwd.counts[torch.ops.aten.mm.default]

    plain = backward_mm(False)
    ckpt = backward_mm(True)
    # three Linear layers: backward needs 2 matmuls each (input and weight grads)...
    assert plain == 6
    # ...and checkpointing adds the three forward matmuls rerun during backward
    assert ckpt == plain + 3


def test_profiler_memory_timeline_export_is_deprecated(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = _mlp(width=32, depth=2)
    x = torch.randn(4, 32, requires_grad=True)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    ) as prof:
        model(x).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof.export_memory_timeline(str(tmp_path / "timeline.json"), device="cpu")
    messages = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
    assert any("export_memory_timeline" in m and "deprecated" in m for m in messages)
    assert (tmp_path / "timeline.json").stat().st_size > 0  # still works in 2.13
    assert any("_record_memory_history" in m for m in messages)  # the suggested replacement
