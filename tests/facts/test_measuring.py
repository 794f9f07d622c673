"""Fact tests for questions/measuring.yaml (CPU build of PyTorch, small tensors)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

import pytest
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


def _escapes_except_memory_error(step: Callable[[], object]) -> BaseException:
    """Run `step` inside `try/except MemoryError`; return what got past that clause."""
    try:
        try:
            step()
        except MemoryError:
            pytest.fail("except MemoryError caught it")
    except RuntimeError as escaped:  # what a batch-size search should catch instead
        return escaped
    pytest.fail("step raised nothing")


def test_out_of_memory_error_is_a_runtime_error_not_a_memory_error() -> None:
    assert torch.OutOfMemoryError is torch.cuda.OutOfMemoryError  # one class, two names
    assert issubclass(torch.OutOfMemoryError, RuntimeError)
    assert not issubclass(torch.OutOfMemoryError, MemoryError)  # Python's host-memory error

    def step() -> None:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    assert type(_escapes_except_memory_error(step)) is torch.OutOfMemoryError


@pytest.mark.gpu
def test_on_a_gpu_a_failed_allocation_raises_out_of_memory_error_at_once() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    free, _total = torch.cuda.mem_get_info()
    escaped = _escapes_except_memory_error(lambda: torch.empty(4 * free, dtype=torch.uint8, device="cuda"))
    # raised by the allocation call itself, inside the try, as torch.OutOfMemoryError
    assert type(escaped) is torch.OutOfMemoryError
    assert "CUDA out of memory" in str(escaped)
    torch.cuda.empty_cache()  # emptying the cache changes nothing about the class raised
    escaped = _escapes_except_memory_error(lambda: torch.empty(4 * free, dtype=torch.uint8, device="cuda"))
    assert type(escaped) is torch.OutOfMemoryError


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
    # without leaving the parameters out, the uncheckpointed count also holds the four
    # weights the Linears save (their views share the weights' storages), bytes checkpointing
    # cannot free; inside the checkpoint they never reach this hook
    with SavedBytes() as plain_all:
        model(x)
    with SavedBytes() as ckpt_all:
        checkpoint(model, x, use_reentrant=False)
    weights = sum(p.untyped_storage().nbytes() for p in model.parameters())
    assert weights == 16 * one
    assert plain_all.nbytes == plain.nbytes + weights
    assert ckpt_all.nbytes == one


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
    # the warning's other name does not exist in 2.13; the snapshot writer is _dump_snapshot
    assert any("_export_memory_snapshot" in m for m in messages)
    assert not hasattr(torch.cuda.memory, "_export_memory_snapshot")
    assert callable(torch.cuda.memory._dump_snapshot)
    # profile_memory=True alone is not enough: the call warns, then raises ValueError
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as bare:
        model(x).sum().backward()
    with warnings.catch_warnings(record=True) as caught_bare:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="record_shapes=True, with_stack=True required"):
            bare.export_memory_timeline(str(tmp_path / "bare.json"), device="cpu")
    assert any(issubclass(w.category, FutureWarning) for w in caught_bare)


def test_reading_memory_after_forward_misses_the_backward_peak() -> None:
    from tests.facts.support import LiveBytes, grad_ptrs, make_stack, param_ptrs

    stack = make_stack(8, 32)
    segments = [stack[i : i + 4] for i in (0, 4)]
    x = torch.randn(64, 32, requires_grad=True)
    stack(x).sum().backward()  # allocate the .grad buffers first, so they are left out

    def step(ckpt: bool) -> tuple[int, int]:
        with LiveBytes(ignore=param_ptrs(stack) | grad_ptrs(stack)) as meter:
            t = x
            for seg in segments:
                t = checkpoint(seg, t, use_reentrant=False) if ckpt else seg(t)
            after_forward = meter.live
            t.sum().backward()
        return after_forward, meter.peak

    plain_after, plain_peak = step(ckpt=False)
    ckpt_after, ckpt_peak = step(ckpt=True)
    assert plain_peak < 1.2 * plain_after  # without checkpointing, forward's end is near the peak
    assert ckpt_peak > 4 * ckpt_after  # with it, the rebuilt segment pushes the peak into backward
    assert ckpt_peak < plain_peak  # checkpointing still lowers the real peak


def test_pack_hook_sees_every_save_not_every_activation() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    packed: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append(t)
        return t

    x = torch.randn(32, 64, requires_grad=True)
    unpacked: list[torch.Tensor] = []

    def unpack(t: torch.Tensor) -> torch.Tensor:
        unpacked.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(x)
        packs_in_forward = len(packed)
        out.sum().backward()
    # pack runs once per save, in forward; backward calls only the unpack hook
    assert packs_in_forward == len(packed) == len(unpacked) > 0
    biases = {m.bias.untyped_storage().data_ptr() for m in model if isinstance(m, nn.Linear)}
    assert not any(t.untyped_storage().data_ptr() in biases for t in packed)  # no bias is saved
    # numel() counts a view's own elements, not its base's storage: a column slice is a quarter
    view = x.detach()[:, :16]
    assert view.numel() * view.element_size() * 4 == view.untyped_storage().nbytes()
    naive = sum(t.numel() * t.element_size() for t in packed)
    assert naive == sum(t.untyped_storage().nbytes() for t in packed)  # no view here is partial
    unique = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in packed}
    activations = sum(n for ptr, n in unique.items() if ptr not in params)
    relu_out = [t for t in packed if t.untyped_storage().data_ptr() not in params and t is not x]
    # the ReLU output is saved twice: by ReLU (for its mask) and by the next Linear (its input)
    assert len(relu_out) == 2 and relu_out[0].untyped_storage().data_ptr() == relu_out[1].untyped_storage().data_ptr()
    assert any(t.untyped_storage().data_ptr() in params for t in packed)  # weights are packed too
    assert activations == 2 * 32 * 64 * 4  # x and the ReLU output
    assert naive > 2 * activations


def test_profile_plot_builds_a_memory_timeline_on_the_cpu() -> None:
    from torch.cuda import _memory_viz

    with pytest.raises(AttributeError):  # the CUDA recorder does not exist on a CPU-only build
        torch.cuda.memory._record_memory_history()
    torch.manual_seed(0)
    blocks = nn.Sequential(*(nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)) for _ in range(3)))
    x = torch.randn(128, 64, requires_grad=True)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True
    ) as prof:
        h = x
        for block in blocks:
            h = checkpoint(block, h, use_reentrant=False)
        h.sum().backward()
    snapshot = _memory_viz._profile_to_snapshot(prof)
    events = [e for trace in snapshot["device_traces"] for e in trace]
    actions = {e["action"] for e in events}
    assert {"alloc", "free_requested", "free_completed"} <= actions
    assert any(e.get("frames") for e in events if e["action"] == "alloc")  # stacks came along
    assert any(e.get("category") == "activation" for e in events)
    page = _memory_viz.profile_plot(prof)
    assert "Active Memory Timeline" in page and "base64" in page  # the snapshot is embedded


def test_memtracker_activation_counts_a_live_copy_autograd_never_saves() -> None:
    from torch.autograd.graph import saved_tensors_hooks
    from torch.distributed._tools.mem_tracker import MemTracker

    class Layer(nn.Module):
        def __init__(self, keep_copy: bool) -> None:
            super().__init__()
            self.lin = nn.Linear(256, 256, bias=False)
            self.keep_copy = keep_copy
            self.kept: list[torch.Tensor] = []

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.lin(x)
            if self.keep_copy:
                with torch.no_grad():
                    self.kept.append(y * 2)  # held by the module, never by autograd
            return torch.relu(y)

    def after_forward(keep_copy: bool) -> tuple[int, int]:
        torch.manual_seed(0)
        layer, x = Layer(keep_copy), torch.randn(64, 256)
        tracker = MemTracker()
        tracker.track_external(layer, x)
        saved: list[int] = []
        with tracker, saved_tensors_hooks(lambda t: saved.append(t.nbytes) or t, lambda t: t):
            out = layer(x)
            activation = tracker.get_tracker_snapshot("current")[torch.device("cpu")]["Activation"]
        assert out.requires_grad
        return activation, sum(saved)

    plain_act, plain_saved = after_forward(keep_copy=False)
    kept_act, kept_saved = after_forward(keep_copy=True)
    copy_bytes = 64 * 256 * 4
    assert kept_saved == plain_saved  # autograd saves nothing more
    assert kept_act == plain_act + copy_bytes  # MemTracker's Activation grows by the copy
