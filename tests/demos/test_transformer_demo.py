"""The transformer demo on the CPU: every strategy, the budget dial, the timeline, the charts,
and the estimate beside each measurement (small sizes, one timed step each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from demos.chart import png_text, write_charts
from demos.checkpoint import DemoConfig, run_demo
from demos.memory import RECOMPUTE
from demos.report import DemoReport
from tests.conftest import installed_or_skip

STRATEGIES = ("none", "block", "sqrt", "selective", "selective-attn", "budget")
BUDGETS = (1.0, 0.5, 0.2, 0.0)


@pytest.fixture(scope="module")
def report() -> DemoReport:
    """A 4-layer GPT-style decoder, batch 2 x 128 tokens, width 64, 4 heads."""
    cfg = DemoConfig(
        model="transformer",
        layers=4,
        tokens=128,
        width=64,
        heads=4,
        batch=2,
        strategies=STRATEGIES,
        budgets=BUDGETS,
        repeat=1,
    )
    return run_demo(cfg, estimate=True)


def test_every_strategy_and_budget_is_measured(report: DemoReport) -> None:
    labels = [r.label for r in report.results]
    assert labels == ["none", "block", "sqrt", "selective", "selective-attn"] + [f"budget {b:g}" for b in BUDGETS]


def test_strategies_keep_less_than_none_in_the_order_theory_says(report: DemoReport) -> None:
    saved = {r.label: r.saved_bytes for r in report.results}
    lowest = max(saved["block"], saved["budget 0"])
    # block (layer inputs only) and budget 0.0 keep the least; selective keeps the matmul
    # outputs, and with attention recomputed too it keeps less again; none keeps everything
    assert lowest < saved["selective-attn"] < saved["selective"] < saved["none"]
    assert saved["block"] < saved["sqrt"] < saved["none"]
    for r in report.results:
        if r.strategy != "none" and r.label != "budget 1":
            assert r.peak_bytes < report.result("none").peak_bytes, r.label


def test_gradients_identical_or_within_the_stated_tolerance(report: DemoReport) -> None:
    for r in report.results:
        if r.strategy == "budget":
            # compiled code may reorder float sums: the largest difference is reported
            assert not r.grads_identical or r.grad_max_diff == 0.0
            assert r.grad_max_diff < 1e-5, r.label
        else:
            assert r.grads_identical and r.grad_max_diff == 0.0, r.label


def test_timeline_max_is_the_reported_peak(report: DemoReport) -> None:
    for r in report.results:
        t = r.timeline
        assert t is not None
        assert max(t.live_bytes) == r.peak_bytes, r.label
        assert len(t.x) <= 301 and t.x == sorted(t.x) and t.x[-1] == 2.0
        assert {"forward", "backward"} <= set(t.phase)
    recomputed = {r.label for r in report.results if r.timeline and RECOMPUTE in r.timeline.phase}
    assert recomputed == {"block", "sqrt", "selective", "selective-attn"}


def test_estimate_within_five_percent_on_the_cpu(report: DemoReport) -> None:
    for r in report.results:
        if r.strategy == "budget":
            continue
        assert r.estimate_bytes is not None and r.estimate_error_pct is not None
        assert abs(r.estimate_error_pct) < 5.0, r.label
        assert abs(r.estimate_bytes - r.peak_bytes) < 0.05 * r.peak_bytes


def test_budget_curve_is_monotone_in_memory(report: DemoReport) -> None:
    curve = [report.result("budget", budget=b) for b in BUDGETS]  # 1.0 down to 0.0
    peaks = [r.peak_bytes for r in curve]
    saved = [r.saved_bytes for r in curve]
    assert peaks == sorted(peaks, reverse=True) and len(set(peaks)) == len(peaks)
    assert saved == sorted(saved, reverse=True)


def test_charts_are_pngs_with_a_line_per_series(report: DemoReport, tmp_path: Path) -> None:
    installed_or_skip("matplotlib")
    charts = write_charts(report, str(tmp_path / "demo.png"))
    assert set(charts) == {"timeline", "memory", "budget"}
    assert charts["timeline"] == str(tmp_path / "demo.png")
    # timeline: one line per measured strategy and budget, overlaid
    assert png_text(charts["timeline"])["Lines"] == str(len(report.results))
    # budget curve: the budget line plus one point per other strategy
    assert png_text(charts["budget"])["Lines"] == str(1 + len(STRATEGIES) - 1)
    assert png_text(charts["memory"])["Lines"] == "3"
    for path in charts.values():
        assert Path(path).stat().st_size > 20_000
