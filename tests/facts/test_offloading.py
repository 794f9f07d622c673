"""Fact tests for questions/offloading.yaml (activation offloading, torch 2.13, CPU build).

Each test runs on the CPU with small tensors and asserts the behaviour a question rests
on. There is no GPU here, so facts about the device-to-host path are shown through the
part the CPU can see: which tensors the pack hook receives, what it returns, which copy
calls it makes (recorded by patching), and how many forward ops backward runs.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.graph import save_on_cpu, saved_tensors_hooks
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    OffloadWrapper,
    apply_activation_checkpointing,
    offload_wrapper,
)
from torch.distributed.fsdp import CPUOffload, CPUOffloadPolicy
from torch.overrides import TorchFunctionMode
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode

from tests.facts.support import Block, OpCounter, SavedBytes, SavedMeter, make_stack, param_ptrs, run_chain

FORWARD_MATMULS = ("addmm", "mm")


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


class _Recorder:
    """saved_tensors_hooks that delegate to another pair and log what they see."""

    def __init__(self, inner: saved_tensors_hooks | None = None) -> None:
        self.inner = inner
        self.packed: list[torch.Tensor] = []
        self.stored: list[object] = []  # what the inner pack hook returned, per pack
        self.unpacks = 0
        self.events: list[str] = []

    def pack(self, t: torch.Tensor):  # type: ignore[no-untyped-def]
        self.packed.append(t)
        self.events.append("pack")
        out = self.inner.pack_hook(t) if self.inner else t
        self.stored.append(out)
        return out

    def unpack(self, p):  # type: ignore[no-untyped-def]
        self.unpacks += 1
        self.events.append("unpack")
        return self.inner.unpack_hook(p) if self.inner else p

    def hooks(self) -> saved_tensors_hooks:
        return saved_tensors_hooks(self.pack, self.unpack)


# ----------------------------------------------------------------------------- tests


def test_offloading_runs_no_forward_op_in_backward() -> None:
    model = make_stack(n=3, h=16)
    x = torch.randn(8, 16, requires_grad=True)

    def backward_matmuls(mode: str) -> int:
        m = copy.deepcopy(model)
        if mode == "offload":
            with save_on_cpu():
                out = m(x)
        else:
            out = run_chain(m, x, ckpt=(mode == "checkpoint"))
        with OpCounter() as ops:
            out.sum().backward()
        return sum(ops.ops[name] for name in FORWARD_MATMULS)

    plain, offload, ckpt = (backward_matmuls(m) for m in ("plain", "offload", "checkpoint"))
    assert offload == plain  # offloading adds no compute to backward
    assert ckpt > plain  # checkpointing reruns the forward matmuls

    # What it spends instead: with pin_memory=True, save_on_cpu copies every saved tensor into
    # a host buffer of its own (a fresh torch.empty + copy_, even on this CPU build, where the
    # default .cpu() would return the tensor itself), same dtype and values, and backward
    # copies each one back exactly once.
    rec = _Recorder(inner=save_on_cpu(pin_memory=True))
    m = copy.deepcopy(model)
    with rec.hooks():
        out = m(x)
    assert rec.packed and len(rec.stored) == len(rec.packed)
    for t, (device, host) in zip(rec.packed, rec.stored, strict=True):  # type: ignore[misc]
        assert device == t.device and host.device == torch.device("cpu")
        assert host.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
        assert host.dtype == t.dtype and torch.equal(host, t)
    assert sum(h.nbytes for _, h in rec.stored) == sum(t.nbytes for t in rec.packed)  # type: ignore[misc]
    with OpCounter() as ops:
        out.sum().backward()
    assert rec.unpacks == len(rec.packed)  # one copy back per saved tensor
    assert sum(ops.ops[name] for name in FORWARD_MATMULS) == plain  # and still no recompute


def test_pack_runs_in_forward_and_unpack_in_backward() -> None:
    torch.manual_seed(0)
    block = Block(8)
    x = torch.randn(4, 8, requires_grad=True)
    rec = _Recorder()
    with rec.hooks():
        y = block(x)
        assert rec.events and set(rec.events) == {"pack"}  # forward only packs
        after_forward = len(rec.events)
    y.sum().backward()
    assert set(rec.events[after_forward:]) == {"unpack"}  # backward only unpacks
    assert rec.unpacks == len(rec.packed)  # each saved tensor is read back once


def test_save_on_cpu_keeps_cpu_tensors_as_they_are() -> None:
    x = torch.randn(16, 16, requires_grad=True)
    device, kept = save_on_cpu().pack_hook(x)
    assert device == torch.device("cpu")
    assert kept.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()  # no copy
    # the same holds for every tensor a CPU forward pass saves: nothing moves, nothing is freed
    torch.manual_seed(0)
    block = Block(16)
    hooks = save_on_cpu()
    same: list[bool] = []

    def pack(t: torch.Tensor):  # type: ignore[no-untyped-def]
        dev, stored = hooks.pack_hook(t)
        same.append(stored.untyped_storage().data_ptr() == t.untyped_storage().data_ptr())
        return dev, stored

    with saved_tensors_hooks(pack, hooks.unpack_hook):
        out = block(x)
    out.sum().backward()
    assert same and all(same)


def test_pin_memory_makes_both_copies_non_blocking(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With a CUDA device present, pin_memory=True allocates the host copy pinned and
    issues non_blocking copies both ways. The CPU build has no CUDA, so CUDA's presence
    and the pinned allocation are simulated and the calls are recorded."""
    calls: dict[str, list[object]] = {"empty_pin": [], "copy_nb": [], "to_nb": []}
    real_empty, real_copy, real_to = torch.empty, torch.Tensor.copy_, torch.Tensor.to

    def fake_empty(*size, pin_memory=False, **kw):  # type: ignore[no-untyped-def]
        calls["empty_pin"].append(pin_memory)
        return real_empty(*size, **kw)

    def rec_copy(self, src, non_blocking=False):  # type: ignore[no-untyped-def]
        calls["copy_nb"].append(non_blocking)
        return real_copy(self, src)

    def rec_to(self, *args, non_blocking=False, **kw):  # type: ignore[no-untyped-def]
        calls["to_nb"].append(non_blocking)
        return real_to(self, *args, **kw)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch, "empty", fake_empty)
    monkeypatch.setattr(torch.Tensor, "copy_", rec_copy)
    monkeypatch.setattr(torch.Tensor, "to", rec_to)

    x = torch.randn(4, 4)
    pinned = save_on_cpu(pin_memory=True)
    device, host = pinned.pack_hook(x)
    back = pinned.unpack_hook((device, host))
    assert calls["empty_pin"] == [True]  # the host copy is allocated in pinned memory
    assert calls["copy_nb"] == [True]  # device-to-host copy is asynchronous
    assert calls["to_nb"] == [True]  # host-to-device copy in backward is asynchronous
    assert torch.equal(back, x)

    calls["to_nb"].clear()
    default = save_on_cpu()  # pin_memory=False: a plain .cpu() and a blocking copy back
    default.unpack_hook(default.pack_hook(x))
    assert calls["to_nb"] == [False]
    assert calls["empty_pin"] == [True]  # no pinned allocation was made this time


def test_save_on_cpu_also_packs_weights_saved_for_backward() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(16, 16)
    x = torch.randn(4, 16, requires_grad=True)
    weight_storage = lin.weight.untyped_storage().data_ptr()
    # pin_memory=True: save_on_cpu writes a fresh host copy even on this CPU build (the default
    # .cpu() would hand back the CPU tensor itself and show nothing)
    rec = _Recorder(inner=save_on_cpu(pin_memory=True))
    with rec.hooks():
        y = lin(x)
    packed_ptrs = [t.untyped_storage().data_ptr() for t in rec.packed]
    # the matmul saves a view of the weight for the input gradient: it goes through the hook
    assert weight_storage in packed_ptrs
    assert x.untyped_storage().data_ptr() in packed_ptrs
    # and save_on_cpu copies it out in full, like any activation: it has no parameter filter
    i = packed_ptrs.index(weight_storage)
    view, (_, host) = rec.packed[i], rec.stored[i]  # type: ignore[misc]
    assert host.untyped_storage().data_ptr() != weight_storage
    assert torch.equal(host, view) and torch.equal(host, lin.weight.t())
    assert host.nbytes == lin.weight.nbytes
    # the module still holds the parameter on its own storage: the copy frees none of it
    # (on a GPU, test_on_a_gpu_a_saved_weight_view_is_copied_out_and_back_for_nothing)
    assert lin.weight.untyped_storage().data_ptr() == weight_storage and lin.weight.is_leaf
    y.sum().backward()
    assert rec.unpacks == len(rec.packed)  # the weight's copy comes back in backward too
    assert lin.weight.grad is not None


def test_only_the_innermost_saved_tensors_hooks_apply() -> None:
    torch.manual_seed(0)
    lin = nn.Linear(8, 8)
    x = torch.randn(4, 8, requires_grad=True)
    outer, inner = _Recorder(), _Recorder()
    with outer.hooks():
        a = lin(x).sin()
        n_outer = len(outer.packed)
        with inner.hooks():  # an identity pair, like torchtune's NoOpManager
            b = a.cos()
    assert len(outer.packed) == n_outer  # the outer (offloading) hooks saw nothing inside
    assert len(inner.packed) == 1  # cos saved its input through the inner pair only
    (a + b).sum().backward()
    assert x.grad is not None


def test_save_on_cpu_around_checkpoint_offloads_only_its_input() -> None:
    torch.manual_seed(0)
    block = Block(8)
    reference = copy.deepcopy(block)
    x = torch.randn(4, 8, requires_grad=True)
    rec = _Recorder(inner=save_on_cpu())
    with rec.hooks():
        y = checkpoint(block, x, use_reentrant=False)
    # the block's intermediates are not saved at all; only its input goes through the hooks
    assert [t.untyped_storage().data_ptr() for t in rec.packed] == [x.untyped_storage().data_ptr()]
    y.sum().backward()
    assert block.calls == 2  # the intermediates come from the recompute
    x_ref = x.detach().clone().requires_grad_()
    reference(x_ref).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=0, atol=0)
    got = _grads(block)
    for name, g in _grads(reference).items():
        torch.testing.assert_close(got[name], g, rtol=0, atol=0)


def test_matmul_flops_grow_faster_than_its_saved_bytes() -> None:
    def measure(h: int) -> tuple[int, int, int]:
        torch.manual_seed(0)
        lin = nn.Linear(h, h, bias=False)
        x = torch.randn(32, h, requires_grad=True)
        with FlopCounterMode(display=False) as flops, SavedMeter(param_ptrs(lin)) as saved:
            out = lin(x)
        with SavedMeter() as every:  # a second run: only the innermost pair of hooks would see saves
            again = lin(x)
        del out, again
        return flops.get_total_flops(), saved.peak, every.peak

    f1, b1, all1 = measure(256)
    f2, b2, all2 = measure(512)
    assert f2 == 4 * f1  # FLOPs of the matmul: batch x h x h
    assert b2 == 2 * b1  # activation bytes saved for backward: batch x h
    # so the compute that can hide a transfer grows twice as fast as the bytes to move;
    # the weight view Linear also saves (h x h, the parameter's storage) quadruples, which is
    # why the question counts activation bytes only
    assert all2 - b2 == 4 * (all1 - b1) > 0


def test_fsdp_cpu_offload_configs_have_no_activation_setting() -> None:
    assert [f.name for f in dataclasses.fields(CPUOffload)] == ["offload_params"]
    assert [f.name for f in dataclasses.fields(CPUOffloadPolicy)] == ["pin_memory"]
    assert "parameters" in (CPUOffload.__doc__ or "")
    doc = CPUOffloadPolicy.__doc__ or ""
    assert "parameters, gradients, and optimizer states" in doc
    assert "activation" not in (CPUOffload.__doc__ or "").lower() + doc.lower()


def test_apply_activation_checkpointing_accepts_offload_wrapper() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(Block(16), Block(16), nn.Linear(16, 1))
    reference = copy.deepcopy(model)
    apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=offload_wrapper, check_fn=lambda m: isinstance(m, Block)
    )
    assert isinstance(model[0], OffloadWrapper) and isinstance(model[1], OffloadWrapper)
    assert isinstance(model[2], nn.Linear)
    x = torch.randn(8, 16)
    model(x).sum().backward()
    reference(x).sum().backward()
    blocks = [m._checkpoint_wrapped_module for m in (model[0], model[1])]
    assert [b.calls for b in blocks] == [1, 1]  # offloaded, not recomputed
    got = _grads(reference)
    for (name, g), (_, p) in zip(got.items(), model.named_parameters(), strict=True):
        torch.testing.assert_close(p.grad, g, rtol=0, atol=0, msg=name)


def test_unpack_hooks_travel_with_the_saved_tensors() -> None:
    torch.manual_seed(0)
    block = Block(8)
    reference = copy.deepcopy(block)
    x0 = torch.randn(4, 8)
    x_ref = x0.clone().requires_grad_()
    F.gelu(reference(x_ref)).sum().backward()
    for pin in (False, True):
        # pin_memory=True copies each saved tensor into a host buffer of its own even on this
        # CPU build (the default .cpu() hands back the CPU tensor itself), so there backward
        # really has to fetch copies, not the originals
        block.zero_grad()
        x = x0.clone().requires_grad_()
        rec = _Recorder(inner=save_on_cpu(pin_memory=pin))
        with rec.hooks():
            y = F.gelu(block(x))
        assert rec.packed and rec.unpacks == 0
        if pin:
            for t, (_, host) in zip(rec.packed, rec.stored, strict=True):  # type: ignore[misc]
                assert host.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
        y.sum().backward()  # outside the context
        assert rec.unpacks == len(rec.packed)  # the hooks stored at pack time still ran
        if pin:
            # a contiguous copy of a saved view (the weight's transpose) can change a matmul's
            # last-bit rounding, so the copies match to float precision, not bit for bit
            torch.testing.assert_close(x.grad, x_ref.grad)
        else:
            torch.testing.assert_close(x.grad, x_ref.grad, rtol=0, atol=0)


def test_reading_saved_self_runs_the_unpack_hook_back_to_the_saved_device() -> None:
    rec = _Recorder(inner=save_on_cpu(pin_memory=True))
    x = torch.randn(64, requires_grad=True)
    with rec.hooks():
        y = x.sin()  # sin saves its input
    assert rec.unpacks == 0
    seen = y.grad_fn._saved_self  # type: ignore[union-attr]
    assert rec.unpacks == 1  # the read goes through the unpack hook, not to the stored value
    _ = y.grad_fn._saved_self  # type: ignore[union-attr]
    assert rec.unpacks == 2  # and every read does it again
    assert torch.equal(seen, x)
    # what that hook hands back is the host copy moved to the device recorded at pack time
    # (on a GPU: a copy to CUDA issued on the current stream, after the offload copy); the
    # meta device stands in for CUDA on this CPU build
    host = x.detach().clone()
    back = save_on_cpu(pin_memory=True).unpack_hook((torch.device("meta"), host))
    assert back.device == torch.device("meta") and back is not host


class _TensorCalls(TorchFunctionMode):
    """Records the name and keyword arguments of every torch call made under it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, dict[str, object]]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        self.calls.append((getattr(func, "__name__", str(func)), dict(kwargs)))
        return func(*args, **kwargs)


def test_save_on_cpu_issues_both_copies_on_the_current_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why a read of grad_fn._saved_self is ordered after the offload on a GPU: neither the pack
    copy nor the unpack copy switches streams, records a stream or waits on an event, so both
    are queued on the current stream, one behind the other. If save_on_cpu ever moved either
    copy to a side stream (unordered without an event), this test fails on the CPU."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("save_on_cpu touched a stream or event API")

    for name in ("stream", "set_stream", "Stream", "Event", "current_stream", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, refuse)
    for name in ("Stream", "Event"):
        monkeypatch.setattr(torch, name, refuse)  # the device-generic stream API too
    monkeypatch.setattr(torch.Tensor, "record_stream", refuse)
    offload = save_on_cpu(pin_memory=True)
    packing = _TensorCalls()

    def pack(t: torch.Tensor) -> tuple[torch.device, torch.Tensor]:
        with packing:  # autograd runs pack hooks outside any mode entered around forward
            return offload.pack_hook(t)

    x = torch.randn(64, requires_grad=True)
    with saved_tensors_hooks(pack, offload.unpack_hook):
        y = x.sin()  # sin saves its input: one pack
    # one copy into a fresh host buffer, on whatever stream is current (non_blocking only
    # when the buffer could be pinned, i.e. with CUDA present)
    assert [name for name, _ in packing.calls if name in ("empty", "copy_")] == ["empty", "copy_"]
    copy_kwargs = next(kw for name, kw in packing.calls if name == "copy_")
    assert copy_kwargs == {"non_blocking": torch.cuda.is_available()}
    with _TensorCalls() as reading:
        seen = y.grad_fn._saved_self  # type: ignore[union-attr]
    # the read is one Tensor.to back to the recorded device, non_blocking as pin_memory asks,
    # and nothing else: no stream context, no event, no record_stream (the patches would raise)
    calls = [(name, kw) for name, kw in reading.calls if name != "__get__"]  # attribute reads aside
    assert calls == [("to", {"non_blocking": True})]
    assert torch.equal(seen, x)


@pytest.mark.gpu
def test_on_a_gpu_saved_self_is_stream_ordered_but_the_host_buffer_races() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    x = torch.randn(1 << 24, device="cuda", requires_grad=True)  # 64 MiB
    expected = x.detach().cpu()
    offload = save_on_cpu(pin_memory=True)
    packed: list[tuple[torch.device, torch.Tensor]] = []

    def pack(t: torch.Tensor) -> tuple[torch.device, torch.Tensor]:
        packed.append(offload.pack_hook(t))
        return packed[-1]

    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)  # about a second of GPU work queued ahead of the copy
    with saved_tensors_hooks(pack, offload.unpack_hook):
        y = x.sin()  # sin saves x: a non_blocking device-to-host copy into pinned memory
    host = packed[0][1]
    early = host.clone()  # the host buffer read right away, while the copy waits its turn
    seen = y.grad_fn._saved_self  # type: ignore[union-attr]
    assert seen.device.type == "cuda"
    assert torch.equal(seen.cpu(), expected)  # ordered after the offload copy: right values
    torch.cuda.synchronize()
    assert torch.equal(host, expected)  # the host copy is complete once the stream is done
    assert not torch.equal(early, expected)  # but read before that, it was not yet the data


def _torchtune_would_offload(t: torch.Tensor, min_offload_size: int = 1024) -> bool:
    """torchtune's OffloadActivations.pack_tensor test, as in its source
    (torchtune/training/_activation_offloading.py): big enough and not a Parameter or Buffer."""
    big = t.element_size() * t.nelement() >= min_offload_size
    return big and not isinstance(t, nn.Parameter) and not isinstance(t, nn.Buffer)


def test_linear_saves_a_weight_view_that_passes_a_parameter_type_filter() -> None:
    torch.manual_seed(0)
    linear = nn.Linear(64, 64)  # a 16 KiB weight, above the 1 KiB floor
    weight_ptr = linear.weight.untyped_storage().data_ptr()
    saved: list[torch.Tensor] = []
    for x in (torch.randn(4, 64, requires_grad=True), torch.randn(2, 3, 64, requires_grad=True)):
        saved.clear()
        with saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            linear(x).sum().backward()
        weights = [t for t in saved if t.untyped_storage().data_ptr() == weight_ptr]
        assert len(weights) == 1 and weights[0]._is_view()  # weight.t(), not the Parameter
        assert not isinstance(weights[0], nn.Parameter)
        assert _torchtune_would_offload(weights[0])  # so it would be copied to host every step
    # using the Parameter directly saves the Parameter itself, which the filter does catch
    saved.clear()
    with saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        (torch.randn(4, 64, requires_grad=True) @ linear.weight).sum().backward()
    direct = [t for t in saved if t.untyped_storage().data_ptr() == weight_ptr]
    assert len(direct) == 1 and isinstance(direct[0], nn.Parameter)
    assert not _torchtune_would_offload(direct[0])


# ----------------------------------------------------------------------------- on a GPU


def _needs_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


class _Offloaded:
    """save_on_cpu's hooks, logging (device saved, device stored, bytes stored) per pack and
    the device of every tensor handed back to backward."""

    def __init__(self) -> None:
        self.inner = save_on_cpu()
        self.packs: list[tuple[torch.device, torch.device, int]] = []
        self.unpacked: list[torch.device] = []

    def pack(self, t: torch.Tensor):  # type: ignore[no-untyped-def]
        device, stored = self.inner.pack_hook(t)
        self.packs.append((t.device, stored.device, stored.nbytes))
        return device, stored

    def unpack(self, packed):  # type: ignore[no-untyped-def]
        back = self.inner.unpack_hook(packed)
        self.unpacked.append(back.device)
        return back

    def hooks(self) -> saved_tensors_hooks:
        return saved_tensors_hooks(self.pack, self.unpack)

    @property
    def host_bytes(self) -> int:
        return sum(n for _, _, n in self.packs)


def _cuda_mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()


def _forward_held_bytes(run) -> tuple[torch.Tensor, int]:  # type: ignore[no-untyped-def]
    """(output, device bytes still allocated after the forward `run()`, beyond before it)."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = run()
    torch.cuda.synchronize()
    return out, torch.cuda.memory_allocated() - before


@pytest.mark.gpu
def test_on_a_gpu_offloading_spends_copies_and_host_memory_not_compute() -> None:
    _needs_cuda()
    model = _cuda_mlp()
    x = torch.randn(512, 1024, device="cuda", requires_grad=True)
    out, plain_held = _forward_held_bytes(lambda: model(x))
    with SavedBytes(exclude=model) as saved:
        model(x)
    with OpCounter() as ops:
        out.sum().backward()
    plain_matmuls = sum(ops.ops[name] for name in FORWARD_MATMULS)
    expected = _grads(model)
    model.zero_grad()

    rec = _Offloaded()
    with rec.hooks():
        out, offload_held = _forward_held_bytes(lambda: model(x))
    # forward: every saved tensor was copied from the GPU into host memory ...
    assert rec.packs and all((d.type, s.type) == ("cuda", "cpu") for d, s, _ in rec.packs)
    assert rec.host_bytes >= saved.nbytes  # host RAM: at least what autograd saves
    # ... so the two 512 x 4096 hidden tensors no longer hold device memory
    hidden = 512 * 4096 * 4
    assert plain_held - offload_held >= 2 * hidden
    with OpCounter() as ops:
        out.sum().backward()
    # backward: each one was copied back to the GPU, and no forward matmul ran again
    assert len(rec.unpacked) == len(rec.packs) and {d.type for d in rec.unpacked} == {"cuda"}
    assert sum(ops.ops[name] for name in FORWARD_MATMULS) == plain_matmuls
    for name, grad in _grads(model).items():
        torch.testing.assert_close(grad, expected[name], rtol=0, atol=0)


@pytest.mark.gpu
def test_on_a_gpu_a_saved_weight_view_is_copied_out_and_back_for_nothing() -> None:
    _needs_cuda()
    torch.manual_seed(0)
    lin = nn.Linear(4096, 4096, bias=False).cuda()  # a 64 MiB weight
    x = torch.randn(8, 4096, device="cuda", requires_grad=True)  # a tiny activation
    weight_bytes = lin.weight.nbytes
    out, plain_held = _forward_held_bytes(lambda: lin(x))
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out.sum().backward()
    plain_backward_peak = torch.cuda.max_memory_allocated() - before
    lin.weight.grad = None
    x.grad = None

    rec = _Offloaded()
    with rec.hooks():
        out, offload_held = _forward_held_bytes(lambda: lin(x))
    # the weight's view went through the hook: a full host copy of the weight was made ...
    assert any(n == weight_bytes for _, _, n in rec.packs)
    assert rec.host_bytes >= weight_bytes + x.nbytes
    # ... yet no device memory was freed: the module still holds the parameter on the GPU
    assert lin.weight.device.type == "cuda" and offload_held >= plain_held
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out.sum().backward()
    # and backward copies it back to the GPU: a second 64 MiB on the device for a moment
    assert torch.cuda.max_memory_allocated() - before >= plain_backward_peak + 0.9 * weight_bytes


@pytest.mark.gpu
def test_on_a_gpu_fsdp2_cpu_offload_moves_parameters_and_gradients_not_activations() -> None:
    _needs_cuda()
    import socket

    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dist.init_process_group("cpu:gloo,cuda:nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        torch.cuda.set_device(0)
        model = _cuda_mlp()
        for layer in (model[0], model[2]):
            fully_shard(layer, offload_policy=CPUOffloadPolicy())
        fully_shard(model, offload_policy=CPUOffloadPolicy())
        # the sharded parameters live in host memory
        assert {p.to_local().device.type for p in model.parameters()} == {"cpu"}  # type: ignore[attr-defined]
        x = torch.randn(512, 1024, device="cuda")
        saved: list[tuple[torch.device, int]] = []

        def pack(t: torch.Tensor) -> torch.Tensor:
            saved.append((t.device, t.numel()))
            return t

        with saved_tensors_hooks(pack, lambda t: t):
            out = model(x)
        # the activations saved for backward stay on the GPU (the 512 x 4096 ones included)
        big = [device for device, numel in saved if numel >= 512 * 1024]
        assert len(big) >= 2 and {d.type for d in big} == {"cuda"}
        out.sum().backward()
        # gradients land on the host, and the optimizer steps there with its state
        assert {p.grad.to_local().device.type for p in model.parameters()} == {"cpu"}  # type: ignore[union-attr]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        opt.step()
        state = [v for p in model.parameters() for v in opt.state[p].values() if v.dim() > 0]
        assert state and {v.to_local().device.type for v in state} == {"cpu"}
    finally:
        dist.destroy_process_group()
