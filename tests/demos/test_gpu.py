"""The GPU path, run on a real NVIDIA GPU by bench/gpu_check.sh (skipped without one)."""

from __future__ import annotations

import pytest
import torch

from demos.checkpoint import DemoConfig, run_demo

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU (CUDA)"),
]


def test_every_strategy_on_cuda() -> None:
    report = run_demo(
        DemoConfig(
            device="cuda",
            layers=8,
            tokens=4096,
            width=256,
            repeat=2,
            strategies=("none", "block", "sqrt", "selective", "offload"),
        )
    )
    none = report.result("none")
    assert all(r.grads_identical for r in report.results)
    assert report.result("block").peak_bytes <= 0.35 * none.peak_bytes
    assert report.result("offload").saved_bytes < 0.2 * none.saved_bytes
    for r in report.results:
        # allocator peak against the live-tensor meter (the allocator rounds to 512 bytes)
        assert abs(r.peak_bytes - r.peak_check_bytes) <= 0.05 * r.peak_bytes, r
        assert r.reserved_bytes is not None and r.reserved_bytes >= r.peak_bytes
        if r.strategy != "offload" and r.estimate_bytes is not None:
            assert abs(r.estimate_bytes - r.peak_bytes) <= 0.05 * r.peak_bytes, r
