"""Fact tests for questions/schedules.yaml (torch 2.13, CPU, small tensors).

A chain of N equal layers is split into k segments; each segment is checkpointed.
Memory is the bytes of tensors saved for backward (saved_tensors_hooks, one count per
storage). The peak over forward and backward is measured with use_reentrant=True, whose
recompute saves through the same hooks (non-reentrant keeps its recomputed tensors in its
own store, out of sight of outer hooks); what is kept after forward is checked with both.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from tests.facts.support import LiveBytes, SavedMeter, grad_ptrs, make_stack, param_ptrs


class Layer(nn.Module):
    """A parameter-free layer of `depth` sin ops: it saves its input plus depth-1 tensors
    of the same size inside, so `depth` is its activation cost in units of its input."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.depth = depth
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        for _ in range(self.depth):
            x = torch.sin(x)  # sin saves its input for backward (d sin = cos)
        return x


N = 16
SHAPE = (64, 64)
UNIT = 64 * 64 * 4  # bytes of one layer input (fp32)


def run_segments(layers: list[Layer], x: torch.Tensor, k: int | None, reentrant: bool) -> torch.Tensor:
    """k=None: no checkpointing; otherwise k equal segments, every one checkpointed."""
    if k is None:
        for layer in layers:
            x = layer(x)
        return x
    size = len(layers) // k

    def segment(i: int):
        def fn(h: torch.Tensor) -> torch.Tensor:
            for layer in layers[i * size : (i + 1) * size]:
                h = layer(h)
            return h

        return fn

    for i in range(k):
        x = checkpoint(segment(i), x, use_reentrant=reentrant)
    return x


def measure(depth: int, k: int | None, n: int = N) -> tuple[int, int]:
    """(units kept after forward, peak units over forward + backward) for n layers."""
    layers = [Layer(depth) for _ in range(n)]
    x = torch.randn(*SHAPE, requires_grad=True)
    with SavedMeter() as m:
        out = run_segments(layers, x, k, reentrant=True)
        after_forward = m.live
        out.sum().backward()
    assert m.live == 0
    return after_forward // UNIT, m.peak // UNIT


def test_memory_is_u_shaped_in_segment_count_with_minimum_at_sqrt_n() -> None:
    peaks = {k: measure(depth=1, k=k)[1] for k in (1, 2, 4, 8, 16)}
    # about k boundary inputs + one segment's N/k activations while it is recomputed
    assert peaks == {k: k + N // k - 1 for k in (1, 2, 4, 8, 16)}
    assert peaks == {1: 16, 2: 9, 4: 7, 8: 9, 16: 16}
    assert min(peaks, key=peaks.__getitem__) == 4  # sqrt(16)
    assert measure(depth=1, k=None)[1] == 16  # no checkpointing: every layer's activations


def test_best_spacing_grows_like_sqrt_n_and_so_does_the_peak() -> None:
    best: dict[int, tuple[int, int]] = {}
    for n in (4, 16, 64):
        peaks = {k: measure(depth=1, k=k, n=n)[1] for k in (1, 2, 4, 8, 16, 32, 64) if k <= n}
        k = min(peaks, key=peaks.__getitem__)
        best[n] = (k, peaks[k])
        assert measure(depth=1, k=None, n=n)[1] == n  # without checkpoints: all n layers
    # the best segment count is sqrt(N), and the peak is 2 sqrt(N) - 1 units: 16 times the
    # layers costs 4 times the boundaries kept and 4 times one segment rebuilt, not 16 times
    assert best == {4: (2, 3), 16: (4, 7), 64: (8, 15)}


def test_heavier_layers_move_the_best_segment_count_up() -> None:
    # each layer saves 4 units (its input + 3 inside): memory ~ k + 4N/k, best at k = sqrt(4N)
    peaks = {k: measure(depth=4, k=k)[1] for k in (2, 4, 8, 16)}
    assert peaks == {2: 33, 4: 19, 8: 15, 16: 19}
    assert min(peaks, key=peaks.__getitem__) == 8
    assert measure(depth=4, k=None)[1] == 64


def _chain(part: list[Layer]):  # type: ignore[no-untyped-def]
    """The layers of one segment run in turn, as one function to checkpoint."""

    def fn(h: torch.Tensor) -> torch.Tensor:
        for layer in part:
            h = layer(h)
        return h

    return fn


def test_segments_keep_only_their_boundary_inputs_after_forward() -> None:
    for reentrant in (True, False):
        for k in (2, 4, 8):
            layers = [Layer(4) for _ in range(N)]
            x = torch.randn(*SHAPE, requires_grad=True)
            boundaries: list[torch.Tensor] = []  # what each segment is handed
            size = N // k
            with SavedMeter() as m:
                h = x
                for i in range(k):
                    boundaries.append(h)
                    h = checkpoint(_chain(layers[i * size : (i + 1) * size]), h, use_reentrant=reentrant)
                out = h
                assert m.live == k * UNIT
                # the storages held are each segment's input (x, then the outputs of segments
                # 0..k-2), not its output: the last segment's output is held by no one
                assert set(m.refs) == {t.untyped_storage().data_ptr() for t in boundaries}
                assert out.untyped_storage().data_ptr() not in m.refs
            assert out.requires_grad


def test_checkpointing_every_layer_keeps_every_layer_input() -> None:
    for reentrant in (True, False):
        layers = [Layer(1) for _ in range(N)]
        x = torch.randn(*SHAPE, requires_grad=True)
        with SavedMeter() as m:
            out = run_segments(layers, x, N, reentrant=reentrant)
            every_layer = m.live
        del out
        assert every_layer == N * UNIT  # one input per layer
    # with layers that save only their input, that is as much as no checkpointing at all
    assert measure(depth=1, k=N)[0] == measure(depth=1, k=None)[0] == N


def test_segment_schedule_reruns_each_layer_once() -> None:
    for reentrant in (True, False):
        for k in (2, 4, 8, 16):
            layers = [Layer(2) for _ in range(N)]
            x = torch.randn(*SHAPE, requires_grad=True)
            run_segments(layers, x, k, reentrant=reentrant).sum().backward()
            # one forward plus one recompute per layer, whatever the number of segments
            assert [layer.calls for layer in layers] == [2] * N


def _step_peak(run, stack: nn.Sequential, x: torch.Tensor) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(bytes of op outputs alive when forward ends, peak over forward and backward)."""
    stack(x).sum().backward()  # allocate the .grad buffers first, so they are left out
    with LiveBytes(ignore=param_ptrs(stack) | grad_ptrs(stack)) as meter:
        y = run(x)
        after_forward = meter.live
        y.sum().backward()
    return after_forward, meter.peak


def test_one_checkpoint_around_the_whole_model_keeps_the_peak_and_adds_a_forward() -> None:
    stack = make_stack(8, 32)
    x = torch.randn(64, 32, requires_grad=True)
    plain_end, plain_peak = _step_peak(lambda t: stack(t), stack, x)
    for block in stack:
        block.calls = 0
    whole_end, whole_peak = _step_peak(lambda t: checkpoint(stack, t, use_reentrant=False), stack, x)
    assert whole_end < plain_end / 10  # after forward, almost nothing is held...
    # ...but backward rebuilds every layer at once: the peak does not fall, it rises a little
    # (measured: 647,176 against 639,112 bytes, +1.3%)
    assert plain_peak < whole_peak < 1.1 * plain_peak
    assert sum(b.calls for b in stack) == 2 * len(stack) + len(stack)  # warm-up, forward, rerun
    for block in stack:
        block.calls = 0
    # the same model in 4 checkpointed segments: a lower peak for the same one extra forward
    segments = [stack[i : i + 2] for i in range(0, 8, 2)]

    def four(t: torch.Tensor) -> torch.Tensor:
        for seg in segments:
            t = checkpoint(seg, t, use_reentrant=False)
        return t

    _, four_peak = _step_peak(four, stack, x)
    assert four_peak < 0.6 * whole_peak


def test_with_unequal_layers_the_boundary_should_balance_bytes_not_layer_counts() -> None:
    """8 layers: the first 4 save 4 units each, the last 4 save 1 unit each (20 in all)."""

    def peak(boundary: int) -> int:
        layers = [Layer(4) for _ in range(4)] + [Layer(1) for _ in range(4)]
        x = torch.randn(*SHAPE, requires_grad=True)

        def part(chunk: list[Layer]):  # type: ignore[no-untyped-def]
            def fn(h: torch.Tensor) -> torch.Tensor:
                for layer in chunk:
                    h = layer(h)
                return h

            return fn

        with SavedMeter() as m:
            h = checkpoint(part(layers[:boundary]), x, use_reentrant=True)
            out = checkpoint(part(layers[boundary:]), h, use_reentrant=True)
            out.sum().backward()
        return m.peak // UNIT

    peaks = {b: peak(b) for b in range(1, 8)}
    assert peaks == {1: 17, 2: 13, 3: 12, 4: 16, 5: 17, 6: 18, 7: 19}
    # the middle layer (4) rebuilds the whole heavy half at once; the best boundary sits
    # inside the heavy half, where the two segments hold 12 and 8 units
    assert min(peaks, key=peaks.__getitem__) == 3
    assert peaks[6] > peaks[4]  # moving the boundary into the light half makes it worse


def test_demo_sqrt_peak_is_above_block_for_nine_blocks() -> None:
    """The demo `layers=9 tokens=512 strategies=block,sqrt` on the CPU: sqrt
    (checkpoint_sequential, 3 segments) holds more after forward and peaks higher than
    block, and its peak falls in the backward after its last rerun."""
    from demos.checkpoint import parse_args, run_demo

    argv = ["--layers", "9", "--tokens", "512", "--strategies", "block,sqrt", "--repeat", "1", "--device", "cpu"]
    cfg = parse_args(argv)
    results = {r.strategy: r for r in run_demo(cfg, estimate=False).results}
    block, sqrt = results["block"], results["sqrt"]
    mib = 2**20
    # the figures the demo's table prints (MiB, one decimal)
    assert (round(sqrt.saved_bytes / mib, 1), round(block.saved_bytes / mib, 1)) == (8.8, 2.3)
    assert (round(sqrt.peak_bytes / mib, 1), round(block.peak_bytes / mib, 1)) == (12.5, 7.8)
    assert sqrt.peak_bytes > 1.5 * block.peak_bytes  # sqrt's peak is the higher one
    for r in (block, sqrt):
        assert max(r.timeline.live_bytes) == r.peak_bytes
    phases = sqrt.timeline.phase
    live = sqrt.timeline.live_bytes
    at = live.index(sqrt.peak_bytes)
    reruns = [i for i in range(1, len(phases)) if phases[i] == "recompute" and phases[i - 1] != "recompute"]
    assert len(reruns) == 2  # two checkpointed segments, one rerun each
    last_rerun_end = max(i for i, p in enumerate(phases) if p == "recompute")
    assert phases[at] == "backward" and at > last_rerun_end  # the peak: backward after the last rerun

    # when forward ends, sqrt already holds more than block (its unchecked last segment)
    def forward_end(r) -> int:  # type: ignore[no-untyped-def]
        ph = r.timeline.phase
        return r.timeline.live_bytes[max(i for i, p in enumerate(ph) if p == "forward")]

    assert forward_end(sqrt) > 2 * forward_end(block)
