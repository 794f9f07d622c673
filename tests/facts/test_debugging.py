"""Fact tests for questions/debugging.yaml (checkpoint errors, debug mode, memory
snapshots; torch 2.13, CPU build).

Each test runs the behaviour a question rests on with small tensors on the CPU. CUDA-only
facts (the OOM message, recording a real allocator history) have no test; where part of
such a fact is visible on the CPU (a signature default, the snapshot reader in
torch.cuda._memory_viz), that part is tested.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import sys
import traceback

import pytest
import torch
from torch import nn
from torch.cuda import _memory_viz
from torch.utils.checkpoint import (
    CheckpointError,
    checkpoint,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
)

MiB = 1 << 20


def _dropout_block() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Dropout(0.5), nn.Linear(16, 8))


def _forward_train_backward_eval(
    block: nn.Module, x: torch.Tensor, *, use_reentrant: bool = False, **kw: object
) -> None:
    """Forward in train mode, switch to eval (as a quick validation would), then backward."""
    block.train()
    y = checkpoint(block, x, use_reentrant=use_reentrant, **kw)
    block.eval()
    y.sum().backward()


# ----------------------------------------------------------------------------- tests


def test_error_in_recompute_surfaces_from_backward_with_forward_frames() -> None:
    calls = {"n": 0}

    def block_forward(u: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        if calls["n"] == 2:  # the second run is the recompute inside backward
            raise MemoryError("simulated allocation failure")
        return u.sin().cos()

    x = torch.randn(4, 8, requires_grad=True)
    y = checkpoint(block_forward, x, use_reentrant=False)  # forward succeeds
    with pytest.raises(MemoryError) as info:
        y.sum().backward()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "backward" in frames
    assert frames[-1] == "block_forward"  # the failing line is in the forward code
    assert frames.index("backward") < frames.index("block_forward")


def test_memory_history_is_unbounded_by_default(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    params = inspect.signature(torch.cuda.memory._record_memory_history).parameters
    assert params["max_entries"].default == sys.maxsize
    assert params["enabled"].default == "all"
    # what a call without max_entries hands the allocator (the CUDA binding is recorded,
    # since this CPU build has none): a cap of sys.maxsize events, that is none
    handed: list[tuple[object, ...]] = []
    monkeypatch.setattr(torch._C, "_cuda_record_memory_history", lambda *a: handed.append(a), raising=False)
    torch.cuda.memory._record_memory_history()
    ((enabled, _context, _stacks, max_entries, *_rest),) = handed
    assert (enabled, max_entries) == ("all", sys.maxsize)


@pytest.mark.gpu
def test_on_a_gpu_the_history_grows_without_a_cap_and_max_entries_keeps_the_latest() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from torch.cuda import memory

    def churn(n: int) -> None:
        for _ in range(n):
            t = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
            del t

    try:
        memory._record_memory_history(clear_history=True)  # the defaults: no max_entries
        churn(300)
        uncapped = memory._snapshot()["device_traces"][0]
        churn(300)
        # every alloc and free is still there, and the history only grows
        assert len(uncapped) >= 600
        assert len(memory._snapshot()["device_traces"][0]) >= len(uncapped) + 600
        assert all(e["frames"] for e in uncapped if e["action"] == "alloc")  # with stacks
        memory._record_memory_history(enabled=None)
        memory._record_memory_history(max_entries=100, clear_history=True)
        churn(300)
        marker = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")  # the latest event
        capped = memory._snapshot()["device_traces"][0]
        # a ring buffer: at most 100 events, the newest kept
        assert len(capped) == 100
        assert capped[-1]["action"] == "alloc" and capped[-1]["size"] >= marker.nbytes
    finally:
        memory._record_memory_history(enabled=None)


def test_snapshot_reader_counts_gaps_as_reserved_but_free() -> None:
    def block(addr: int, size: int, state: str) -> dict[str, object]:
        return {"address": addr, "size": size, "requested_size": size, "state": state, "frames": []}

    segment = {
        "address": 0,
        "total_size": 40 * MiB,
        "stream": 0,
        "segment_type": "large",
        "allocated_size": 20 * MiB,
        "active_size": 20 * MiB,
        "blocks": [
            block(0, 10 * MiB, "active_allocated"),
            block(10 * MiB, 10 * MiB, "inactive"),
            block(20 * MiB, 10 * MiB, "active_allocated"),
            block(30 * MiB, 10 * MiB, "inactive"),
        ],
    }
    # This CPU check covers only the snapshot reader's half of dbg-snapshot-gaps: it sums
    # the two gaps into one total_free. The allocator's half (a 15 MiB request is not placed
    # in those gaps but in a new segment) needs a GPU: test_on_a_gpu_two_10_mib_gaps_cannot_
    # serve_15_mib below, gpu-marked and skipped without CUDA.
    report = _memory_viz.segsum({"segments": [segment], "device_traces": []})
    assert "total_reserved: 40.0MiB" in report
    assert "total_allocated: 20.0MiB" in report
    # the inactive blocks are reserved memory that is free, and not by rounding (external);
    # the reader sums them into one figure that says nothing about whether they touch
    assert "total_free: 20.0MiB (0.0% internal)" in report


@pytest.mark.gpu
def test_on_a_gpu_two_10_mib_gaps_cannot_serve_15_mib() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
        pytest.skip("expandable segments grow a segment instead of reserving a new one")
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # no cached free block of 15 MiB or more is left over
    whole = torch.empty(40 * MiB, dtype=torch.uint8, device="cuda")
    base = whole.data_ptr()
    del whole  # one 40 MiB segment, cached and free
    blocks = [torch.empty(10 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
    assert sorted(b.data_ptr() - base for b in blocks) == [0, 10 * MiB, 20 * MiB, 30 * MiB]
    del blocks[3], blocks[1]  # active, free, active, free: 20 MiB free in two pieces
    reserved = torch.cuda.memory_reserved()
    request = torch.empty(15 * MiB, dtype=torch.uint8, device="cuda")
    assert not base <= request.data_ptr() < base + 40 * MiB  # placed outside the segment
    assert torch.cuda.memory_reserved() >= reserved + 15 * MiB  # a new segment was reserved
    del request, blocks
    torch.cuda.empty_cache()


def test_eval_switch_before_backward_changes_saved_count() -> None:
    x = torch.randn(4, 8, requires_grad=True)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved") as err:
        _forward_train_backward_eval(_dropout_block(), x)
    # in eval mode dropout saves nothing: one tensor fewer in the recompute
    message = str(err.value)
    assert "saved during forward: 6\n" in message
    assert "saved during recomputation: 5." in message
    # the reentrant variant has no check: the gradient is silently wrong instead
    plain = _dropout_block()
    torch.manual_seed(1)
    plain(x).sum().backward()
    reentrant = _dropout_block()
    torch.manual_seed(1)
    _forward_train_backward_eval(reentrant, x, use_reentrant=True)
    assert not torch.equal(plain[0].weight.grad, reentrant[0].weight.grad)
    # with no switch the reentrant gradient matches
    same = _dropout_block()
    torch.manual_seed(1)
    checkpoint(same, x, use_reentrant=True).sum().backward()
    assert torch.equal(plain[0].weight.grad, same[0].weight.grad)


def test_determinism_check_none_keeps_the_count_check() -> None:
    x = torch.randn(4, 8, requires_grad=True)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        _forward_train_backward_eval(_dropout_block(), x, determinism_check="none")


def test_metadata_error_position_counts_saved_tensors() -> None:
    calls = {"n": 0}

    def body(u: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        a = u.sin()  # saves u: position 0
        b = a.cos()  # saves a: position 1
        k = 8 if calls["n"] == 1 else 6
        return b[:, :k].exp()  # exp saves its output: position 2, narrower on recompute

    x = torch.randn(4, 8, requires_grad=True)
    y = checkpoint(body, x, use_reentrant=False)
    with pytest.raises(CheckpointError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "have different metadata" in msg
    assert re.findall(r"tensor at position (\d+)", msg) == ["2"]
    assert "torch.Size([4, 8])" in msg and "torch.Size([4, 6])" in msg


def test_debug_mode_adds_op_logs_only_to_errors() -> None:
    x = torch.randn(4, 8, requires_grad=True)
    # no mismatch: debug mode prints nothing and raises nothing
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        block = _dropout_block()
        checkpoint(block, x, use_reentrant=False, debug=True).sum().backward()
    assert out.getvalue() == "" and err.getvalue() == ""
    # a mismatch: the error carries both runs' operator logs with stack traces
    with pytest.raises(CheckpointError) as info:
        _forward_train_backward_eval(_dropout_block(), x, debug=True)
    msg = str(info.value)
    assert "Operations executed during the original forward" in msg
    assert "Operations executed during recomputation" in msg
    assert "Stack traces of the operators" in msg
    fwd, rec = msg.split("Operations executed during recomputation")
    fwd = fwd.split("Operations executed during the original forward")[1]
    assert "bernoulli_" in fwd and "bernoulli_" not in rec.split("ERROR:")[0]  # dropout ran once
    # without debug the message is short and only points at the debug options
    with pytest.raises(CheckpointError) as plain:
        _forward_train_backward_eval(_dropout_block(), x)
    assert "Operations executed" not in str(plain.value)
    assert "set_checkpoint_debug_enabled" in str(plain.value)


def test_debug_context_must_be_active_during_forward() -> None:
    x = torch.randn(4, 8, requires_grad=True)
    # active only around backward: no operator log
    block = _dropout_block()
    y = checkpoint(block, x, use_reentrant=False)
    block.eval()
    with pytest.raises(CheckpointError) as late, set_checkpoint_debug_enabled(True):
        y.sum().backward()
    assert "Operations executed" not in str(late.value)
    # active around the forward: the log is there, even though backward runs outside it
    block = _dropout_block()
    with set_checkpoint_debug_enabled(True):
        y = checkpoint(block, x, use_reentrant=False)
    block.eval()
    with pytest.raises(CheckpointError) as early:
        y.sum().backward()
    assert "Operations executed during the original forward" in str(early.value)
    # the context overrides the argument: False wins over debug=True
    block = _dropout_block()
    with set_checkpoint_debug_enabled(False):
        y = checkpoint(block, x, use_reentrant=False, debug=True)
    block.eval()
    with pytest.raises(CheckpointError) as off:
        y.sum().backward()
    assert "Operations executed" not in str(off.value)


def test_mismatch_error_tip_names_compiled_graph_selection() -> None:
    calls = {"n": 0}

    def body(u: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        k = 8 if calls["n"] == 1 else 6
        return u[:, :k].sin()

    x = torch.randn(4, 8, requires_grad=True)
    y = checkpoint(body, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="have different metadata") as info:
        y.sum().backward()
    tip = str(info.value)
    assert "torch.compile with automatic_dynamic_shapes" in tip
    assert "different compiled graph" in tip
    assert "torch._dynamo.mark_dynamic()" in tip
    assert "_set_lru_cache(False)" in tip
    # the explain's scope: without debug the tip closes the message; with debug=True the
    # raised error is the operator-log template and the tip is only in its chained cause
    assert tip.rstrip().endswith("workaround examples.")
    calls["n"] = 0
    y = checkpoint(body, x, use_reentrant=False, debug=True)
    with pytest.raises(CheckpointError) as info:
        y.sum().backward()
    assert "different compiled graph" not in str(info.value)
    assert isinstance(info.value.__cause__, CheckpointError)
    assert "different compiled graph" in str(info.value.__cause__)


def test_early_stop_hides_extra_ops_at_the_end_of_recompute() -> None:
    calls = {"n": 0}

    def body(u: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        out = u.sin().cos()
        if calls["n"] > 1:
            out = out.exp()  # only on recompute, after the last tensor forward saved
        return out

    x = torch.randn(4, 8, requires_grad=True)
    y = checkpoint(body, x, use_reentrant=False)
    y.sum().backward()  # default early stop: no error
    x_ref = x.detach().clone().requires_grad_()
    x_ref.sin().cos().sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=0, atol=0)

    calls["n"] = 0
    x.grad = None
    with set_checkpoint_early_stop(False):
        y = checkpoint(body, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="trying to save more tensors during recomputation"):
        y.sum().backward()


def test_in_place_change_of_checkpoint_input_is_caught() -> None:
    def region(u: torch.Tensor) -> torch.Tensor:
        return (u * 3).sin()  # multiplying by a number saves nothing of u

    # without checkpointing nothing saved depends on u, so the change is harmless
    a = torch.randn(4, 8, requires_grad=True)
    u = a * 2
    y = region(u)
    with torch.no_grad():
        u.add_(1)
    y.sum().backward()
    assert a.grad is not None
    # with checkpointing the recompute needs u, so its version counter is checked
    for use_reentrant in (False, True):
        a = torch.randn(4, 8, requires_grad=True)
        u = a * 2
        y = checkpoint(region, u, use_reentrant=use_reentrant)
        with torch.no_grad():
            u.add_(1)
        # the error names the saved tensor's version: it is at version 1, backward expected 0
        with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; expected version 0"):
            y.sum().backward()


def test_reading_saved_tensors_twice_fails_inside_checkpoint() -> None:
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, u):  # type: ignore[no-untyped-def]
            ctx.save_for_backward(u)
            return u * u

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            (u,) = ctx.saved_tensors
            (u_again,) = ctx.saved_tensors  # a second read
            return 2 * u_again * grad

    x = torch.randn(4, 8, requires_grad=True)
    Square.apply(x.sin()).sum().backward()  # fine without checkpointing
    expected = x.grad.clone()
    x.grad = None
    y = checkpoint(lambda u: Square.apply(u.sin()), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="already unpacked once"):
        y.sum().backward()
    assert expected is not None


# ----------------------------------------------------------------------------- newest APIs (issue 22)


def test_region_memory_budget_refuses_eager_mode() -> None:
    from torch.autograd.graph import region_activation_memory_budget

    with pytest.raises(RuntimeError, match="only be used inside a torch.compile region"):
        with region_activation_memory_budget(0.0):
            pass
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        region_activation_memory_budget(1.5)
