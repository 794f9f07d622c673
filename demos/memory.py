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
OPTIMIZER = "optimizer"


def _storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage (the C++ StorageImpl), valid for fake tensors too."""
    return int(t.untyped_storage()._cdata)


@dataclass(frozen=True)
class PeakComposition:
    """What was live at the peak, by the phase that allocated it (bytes)."""

    by_phase: dict[str, int]
    gradient_bytes: int


class LiveTensorMeter(TorchDispatchMode):
    """A dispatch mode that tracks the bytes of live tensor storages created under it.

    ``peak_bytes`` is the highest sum of live storage bytes seen; storages that existed
    before the meter was entered (parameters, inputs) are never counted, and neither is
    an output that shares storage with one of the operator's inputs (views, in-place ops).
    """

    def __init__(self, device_type: str | None = None) -> None:
        super().__init__()
        self.device_type = device_type
        self.live_bytes = 0
        self.peak_bytes = 0
        self.phase = FORWARD
        self._serial_of: dict[int, int] = {}
        self._events: list[tuple[int, int]] = []
        self._phase_of: dict[int, str] = {}
        self._peak_event = -1
        self._next_serial = 0

    # -- bookkeeping -------------------------------------------------------------
    def set_phase(self, phase: str) -> None:
        self.phase = phase

    def _released(self, key: int, serial: int, nbytes: int) -> None:
        self.live_bytes -= nbytes
        if self._serial_of.get(key) == serial:
            del self._serial_of[key]
        self._events.append((serial, -nbytes))

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
        input_keys = {_storage_key(a) for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self._track(t, input_keys)
        return out

    # -- analysis ----------------------------------------------------------------
    def composition_at_peak(self, gradients: list[torch.Tensor]) -> PeakComposition:
        """Split the peak by allocating phase; gradient storages are counted apart."""
        grad_serials = {self._serial_of[k] for k in (_storage_key(g) for g in gradients) if k in self._serial_of}
        live: dict[int, int] = {}
        for serial, nbytes in self._events[: self._peak_event + 1]:
            if nbytes > 0:
                live[serial] = nbytes
            else:
                live.pop(serial, None)
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


@contextmanager
def profiler_allocations() -> Iterator[AllocationTrace]:
    """Record CPU allocator events with ``torch.profiler`` and replay them.

    The peak is the highest running sum of allocation sizes (frees are negative) since
    the block was entered, the same events the profiler's memory timeline is built from.
    """
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    trace = AllocationTrace()
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with prof:
        yield trace
    assert prof.profiler is not None
    tree = prof.profiler.kineto_results.experimental_event_tree()
    events: list[tuple[int, int]] = []
    stack = list(tree)
    while stack:
        node = stack.pop()
        if node.typed[0] == _EventType.Allocation:
            fields = node.typed[1]
            if fields.device.type == "cpu":
                events.append((node.start_time_ns, int(fields.alloc_size)))
        stack.extend(node.children)
    events.sort(key=lambda e: e[0])
    running = 0
    peak = 0
    for _, size in events:
        running += size
        peak = max(peak, running)
    trace.peak_bytes = peak
    trace.end_bytes = running
    trace.events = len(events)
    log.debug("profiler: %d allocation events, peak %d bytes", len(events), peak)


@dataclass(frozen=True)
class CudaStepMemory:
    """CUDA caching-allocator figures for one step, above the pre-step baseline."""

    peak_bytes: int
    after_forward_bytes: int
    reserved_bytes: int


def cuda_step_memory(
    device: torch.device,
    forward: Callable[[], torch.Tensor],
) -> CudaStepMemory:
    """Run ``forward()`` then backward on its loss, reading the CUDA allocator."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    baseline = torch.cuda.memory_allocated(device)
    loss = forward()
    torch.cuda.synchronize(device)
    after_forward = torch.cuda.memory_allocated(device) - baseline
    loss.backward()
    del loss
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - baseline
    reserved = torch.cuda.max_memory_reserved(device)
    return CudaStepMemory(peak_bytes=int(peak), after_forward_bytes=int(after_forward), reserved_bytes=int(reserved))
