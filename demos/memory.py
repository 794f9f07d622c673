"""Peak-memory meters for one training step.

Every meter measures memory *above* what existed before the step started: parameters,
the input batch and anything else already allocated are not counted, while everything
the step allocates is, including the parameter gradients it creates (gradients are set
to ``None`` before a measured step, as ``zero_grad()`` does by default).

- :class:`LiveTensorMeter` counts tensor storages as operators create them, each storage
  once, views and outputs that alias an input excluded, and subtracts a storage when it
  dies. It works on CPU, CUDA and fake tensors (nothing allocated).
- :func:`profiler_allocations` replays the allocator's own allocation and free events
  recorded by ``torch.profiler`` (``profile_memory=True``), the data the profiler's memory
  timeline is built from. It is an independent check of the meter on the CPU.
- :func:`cuda_step_memory` reads the CUDA caching allocator's statistics.

Process RSS is deliberately not a measure here: glibc keeps freed memory and a child
process inherits its parent's peak.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

log = logging.getLogger(__name__)

FORWARD = "forward"
BACKWARD = "backward"
RECOMPUTE = "recompute"
OPTIMIZER = "optimizer"
#: At most this many timeline points per phase (forward, backward).
TIMELINE_POINTS = 150
#: The profiler range that marks the backward pass (see :func:`profiler_allocations`).
BACKWARD_RANGE = "demos::backward"


@dataclass(frozen=True)
class Timeline:
    """Live bytes through one step, at most ``2 * TIMELINE_POINTS + 1`` points.

    ``x`` is the step's progress: 0 to 1 through the forward pass, 1 to 2 through the
    backward pass (allocator events counted evenly within each), so every strategy's
    forward and backward line up. ``phase`` is ``forward``, ``backward`` or
    ``recompute`` (a checkpointed region rerun during backward). Each point is the
    highest value in its stretch of events, so ``max(live_bytes)`` is the step's peak.
    """

    x: list[float]
    live_bytes: list[int]
    phase: list[str]

    @property
    def peak_bytes(self) -> int:
        return max(self.live_bytes, default=0)


def build_timeline(samples: list[tuple[int, str]], backward_start: int, points: int = TIMELINE_POINTS) -> Timeline:
    """Down-sample (live bytes, phase) after each event; events from ``backward_start`` on are backward."""
    xs: list[float] = [0.0]
    live: list[int] = [0]
    phases: list[str] = [FORWARD]
    backward_start = max(0, min(backward_start, len(samples)))
    for offset, part in ((0.0, samples[:backward_start]), (1.0, samples[backward_start:])):
        n = len(part)
        if n == 0:
            continue
        buckets = min(points, n)
        for b in range(buckets):
            lo, hi = b * n // buckets, (b + 1) * n // buckets
            i = max(range(lo, hi), key=lambda k: part[k][0])
            xs.append(round(offset + hi / n, 4))
            live.append(part[i][0])
            phases.append(part[i][1])
    return Timeline(xs, live, phases)


def backward(loss: torch.Tensor) -> None:
    """``loss.backward()`` (typed: torch leaves ``Tensor.backward`` unannotated)."""
    loss.backward()  # type: ignore[no-untyped-call]


def _tensors(tree: Any) -> list[torch.Tensor]:
    """The tensors in nested tuples, lists and dicts (a fast path of pytree's flatten)."""
    found: list[torch.Tensor] = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif item is not None and not isinstance(item, (int, float, bool, str, torch.dtype, torch.device)):
            stack.extend(t for t in tree_flatten(item)[0] if isinstance(t, torch.Tensor))
    return found


def _storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage (the C++ StorageImpl), valid for fake tensors too."""
    return int(t.untyped_storage()._cdata)


@dataclass(frozen=True)
class PeakComposition:
    """What was live at the peak, by the phase that allocated it (bytes)."""

    by_phase: dict[str, int]
    gradient_bytes: int


class LiveTensorMeter(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """A dispatch mode that tracks the bytes of live tensor storages created under it.

    ``peak_bytes`` is the highest sum of live storage bytes seen; storages that existed
    before the meter was entered (parameters, inputs) are never counted, and neither is
    an output that shares storage with one of the operator's inputs (views, in-place ops).
    """

    def __init__(self, device_type: str | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.device_type = device_type
        self.live_bytes = 0
        self.peak_bytes = 0
        self.phase = FORWARD
        self._serial_of: dict[int, int] = {}
        self._events: list[tuple[int, int]] = []
        self._samples: list[tuple[int, str]] = []
        self._phase_of: dict[int, str] = {}
        self._peak_event = -1
        self._next_serial = 0
        self._backward_start: int | None = None
        self._end: int | None = None
        self._outer: list[str] = []

    # -- bookkeeping -------------------------------------------------------------
    def set_phase(self, phase: str) -> None:
        if phase == BACKWARD and self._backward_start is None:
            self._backward_start = len(self._samples)
        self.phase = phase

    def recompute_started(self) -> None:
        """A checkpointed region starts; during backward that is a recomputation."""
        self._outer.append(self.phase)
        if self.phase == BACKWARD:
            self.phase = RECOMPUTE

    def recompute_ended(self) -> None:
        self.phase = self._outer.pop() if self._outer else self.phase

    def __exit__(self, *args: Any) -> None:
        self._end = len(self._samples)
        super().__exit__(*args)  # type: ignore[no-untyped-call]

    def timeline(self, points: int = TIMELINE_POINTS) -> Timeline:
        """The step's live bytes, forward then backward (see :class:`Timeline`)."""
        samples = self._samples[: self._end]
        start = len(samples) if self._backward_start is None else self._backward_start
        return build_timeline(samples, start, points)

    def _released(self, key: int, serial: int, nbytes: int) -> None:
        self.live_bytes -= nbytes
        if self._serial_of.get(key) == serial:
            del self._serial_of[key]
        self._events.append((serial, -nbytes))
        self._samples.append((self.live_bytes, self.phase))

    def _track(self, t: torch.Tensor, input_keys: set[int]) -> None:
        if self.device_type is not None and t.device.type != self.device_type:
            return
        storage = t.untyped_storage()
        key = int(storage._cdata)
        if key in input_keys or key in self._serial_of:
            return
        nbytes = int(storage.nbytes())
        if nbytes == 0:
            return
        serial = self._next_serial
        self._next_serial += 1
        self._serial_of[key] = serial
        self._phase_of[serial] = self.phase
        self.live_bytes += nbytes
        self._events.append((serial, nbytes))
        self._samples.append((self.live_bytes, self.phase))
        weakref.finalize(storage, self._released, key, serial, nbytes)
        if self.live_bytes > self.peak_bytes:
            self.peak_bytes = self.live_bytes
            self._peak_event = len(self._events) - 1

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        input_keys = {_storage_key(a) for a in _tensors((args, kwargs))}
        if isinstance(out, torch.Tensor):
            self._track(out, input_keys)
        else:
            for t in _tensors(out):
                self._track(t, input_keys)
        return out

    # -- analysis ----------------------------------------------------------------
    def live_bytes_at_peak(self) -> dict[int, int]:
        """The storages alive at the peak (serial -> bytes), replayed from the events."""
        live: dict[int, int] = {}
        for serial, nbytes in self._events[: self._peak_event + 1]:
            if nbytes > 0:
                live[serial] = nbytes
            else:
                live.pop(serial, None)
        return live

    def composition_at_peak(self, gradients: list[torch.Tensor]) -> PeakComposition:
        """Split the peak by allocating phase; gradient storages are counted apart."""
        grad_serials = {self._serial_of[k] for k in (_storage_key(g) for g in gradients) if k in self._serial_of}
        live = self.live_bytes_at_peak()
        by_phase: dict[str, int] = {}
        grad_bytes = 0
        for serial, nbytes in live.items():
            if serial in grad_serials:
                grad_bytes += nbytes
            else:
                phase = self._phase_of[serial]
                by_phase[phase] = by_phase.get(phase, 0) + nbytes
        return PeakComposition(by_phase=by_phase, gradient_bytes=grad_bytes)


@dataclass
class AllocationTrace:
    """Filled in when :func:`profiler_allocations` exits."""

    peak_bytes: int = 0
    end_bytes: int = 0
    events: int = 0
    marks: dict[str, int] = field(default_factory=dict)
    timeline: Timeline | None = None


def quiet_profiler() -> None:
    """Keep Kineto's progress lines (``USDT:... profiler_start``, ``STAGE:... Completed Stage``)
    off stderr. Kineto reads KINETO_LOG_LEVEL when the process's first profiler starts; with torch
    2.13 level 5 still prints the USDT lines and 6 prints none. A level the user set is kept."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")


@contextmanager
def profiler_allocations() -> Iterator[AllocationTrace]:
    """Record CPU allocator events with ``torch.profiler`` and replay them.

    The peak is the highest running sum of allocation sizes (frees are negative) since
    the block was entered, the same events the profiler's memory timeline is built from.
    Allocations after the start of a ``record_function(BACKWARD_RANGE)`` are backward.
    It sees compiled code too, which a dispatch mode does not (Dynamo runs eagerly under one).
    """
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    quiet_profiler()
    trace = AllocationTrace()
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with prof:
        yield trace
    assert prof.profiler is not None and prof.profiler.kineto_results is not None
    tree = prof.profiler.kineto_results.experimental_event_tree()
    events: list[tuple[int, int]] = []
    backward_at: int | None = None
    stack = list(tree)
    while stack:
        node = stack.pop()
        if node.typed[0] == _EventType.Allocation:
            fields = node.typed[1]
            if fields.device.type == "cpu":
                events.append((node.start_time_ns, int(fields.alloc_size)))
        elif node.name == BACKWARD_RANGE:
            backward_at = node.start_time_ns if backward_at is None else min(backward_at, node.start_time_ns)
        stack.extend(node.children)
    events.sort(key=lambda e: e[0])
    running = 0
    peak = 0
    samples: list[tuple[int, str]] = []
    start = len(events)
    for i, (when, size) in enumerate(events):
        if backward_at is not None and when >= backward_at and start == len(events):
            start = i
            trace.marks["forward_end"] = running
        running += size
        peak = max(peak, running)
        samples.append((running, FORWARD if start == len(events) else BACKWARD))
    trace.marks.setdefault("forward_end", running)
    trace.peak_bytes = peak
    trace.end_bytes = running
    trace.events = len(events)
    trace.timeline = build_timeline(samples, start)
    log.debug("profiler: %d allocation events, peak %d bytes", len(events), peak)


@dataclass(frozen=True)
class CudaStepMemory:
    """CUDA caching-allocator figures for one step, above the pre-step baseline."""

    peak_bytes: int
    after_forward_bytes: int
    reserved_bytes: int
    timeline: Timeline | None = None


#: Allocator history entries kept for one step's timeline.
CUDA_HISTORY_ENTRIES = 2_000_000


def _cuda_timeline(trace: list[dict[str, Any]], backward_start: int) -> Timeline:
    """Replay the allocator's history: ``alloc`` adds a block, ``free_requested`` removes it."""
    running = 0
    samples: list[tuple[int, str]] = []
    start = 0
    for i, entry in enumerate(trace):
        if i == backward_start:
            start = len(samples)
        action = entry.get("action")
        if action == "alloc":
            running += int(entry["size"])
        elif action == "free_requested":
            running -= int(entry["size"])
        else:
            continue
        samples.append((running, FORWARD if i < backward_start else BACKWARD))
    if backward_start >= len(trace):
        start = len(samples)
    return build_timeline(samples, start)


def cuda_step_memory(
    device: torch.device,
    forward: Callable[[], torch.Tensor],
    timeline: bool = False,
) -> CudaStepMemory:
    """Run ``forward()`` then backward on its loss, reading the CUDA allocator.

    With ``timeline`` the allocator's memory history (``_record_memory_history``, no stack
    traces) is recorded for the step and replayed into a :class:`Timeline`; a snapshot
    taken at the end of the forward pass marks where backward starts.
    """
    index = device.index if device.index is not None else torch.cuda.current_device()
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    baseline = torch.cuda.memory_allocated(device)
    if timeline:
        torch.cuda.memory._record_memory_history(
            enabled="all", context=None, stacks="python", max_entries=CUDA_HISTORY_ENTRIES, clear_history=True
        )
    try:
        loss = forward()
        torch.cuda.synchronize(device)
        after_forward = torch.cuda.memory_allocated(device) - baseline
        backward_start = len(torch.cuda.memory._snapshot()["device_traces"][index]) if timeline else 0
        backward(loss)
        del loss
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - baseline
        reserved = torch.cuda.max_memory_reserved(device)
        line = None
        if timeline:
            line = _cuda_timeline(torch.cuda.memory._snapshot()["device_traces"][index], backward_start)
    finally:
        if timeline:
            torch.cuda.memory._record_memory_history(enabled=None)
    return CudaStepMemory(
        peak_bytes=int(peak), after_forward_bytes=int(after_forward), reserved_bytes=int(reserved), timeline=line
    )
