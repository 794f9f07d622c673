"""Issue 30's honest times for demos.checkpoint: medians with their spread, compiled runs apart
from eager ones, the CPU caveats said once, --help that lists what there is, a quiet stderr."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from demos import estimate
from demos.checkpoint import (
    CPU_ESTIMATE_NOTE,
    CPU_TIMES_NOTE,
    DEFAULT_STRATEGIES,
    MODEL_DEFAULTS,
    DemoConfig,
    format_table,
    main,
    run_demo,
    step_times,
)
from demos.models import MODEL_KINDS, PRESETS
from demos.report import DemoReport, StrategyResult
from demos.strategies import STRATEGIES

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
NOISE = ("USDT:", "STAGE:", "CPUAllocator", "Memory block of unknown size")


# -- 1. the median and its spread ------------------------------------------------------


def test_four_repeats_or_more_give_the_interquartile_range() -> None:
    times = step_times([0.010, 0.011, 0.012, 0.013, 0.100])  # one slow outlier
    assert times.median_ms == 12.0
    assert times.kind == "iqr" and times.spread_ms == (11.0, 13.0)  # the outlier does not widen it
    assert times.runs_ms == (10.0, 11.0, 12.0, 13.0, 100.0)
    assert not times.wide


def test_fewer_than_four_give_min_max_and_one_gives_none() -> None:
    two = step_times([0.020, 0.010])
    assert (two.median_ms, two.spread_ms, two.kind) == (15.0, (10.0, 20.0), "min-max")
    assert two.wide  # 10 ms apart around a 15 ms median
    one = step_times([0.010])
    assert (one.median_ms, one.spread_ms, one.kind, one.wide) == (10.0, None, "", False)


def test_a_run_reports_the_median_of_its_repeats_and_their_spread() -> None:
    report = run_demo(DemoConfig(layers=2, tokens=64, width=32, strategies=("none", "block"), repeat=4), estimate=False)
    for r in report.results:
        assert len(r.step_ms_runs) == 4 and r.step_ms_spread_kind == "iqr"
        assert r.step_ms == pytest.approx(statistics.median(r.step_ms_runs), abs=0.011)  # each rounded to 0.01
        assert r.step_ms_spread is not None
        low, high = r.step_ms_spread
        assert min(r.step_ms_runs) <= low <= r.step_ms <= high <= max(r.step_ms_runs)
    row = json.loads(json.dumps(report.to_json()))["results"][0]
    assert {"step_ms", "step_ms_spread", "step_ms_spread_kind", "step_ms_runs", "step_ms_wide"} <= set(row)


def _row(
    label: str, step_ms: float, spread: tuple[float, float], wide: bool = False, extra: dict[str, object] | None = None
) -> StrategyResult:
    strategy = "budget" if label.startswith("budget") else label
    budget = float(label.split()[1]) if strategy == "budget" else None
    base: dict[str, object] = {
        "strategy": strategy,
        "peak_bytes": 40 * MIB,
        "peak_check_bytes": None,
        "saved_bytes": 20 * MIB,
        "step_ms": step_ms,
        "grads_identical": strategy != "budget",
        "label": label,
        "budget": budget,
        "meter": "CPU allocator events recorded by torch.profiler" if budget is not None else "live-tensor meter",
        "step_ms_runs": (spread[0], step_ms, step_ms, spread[1]),
        "step_ms_spread": spread,
        "step_ms_spread_kind": "iqr",
        "step_ms_wide": wide,
        "grad_max_diff": 0.0 if budget is None else 1e-9,
    }
    base.update(extra or {})
    return StrategyResult(**base)  # type: ignore[arg-type]


def _report(device: str = "cpu", estimated: bool = True) -> DemoReport:
    est: dict[str, object] = {"estimate_bytes": 40 * MIB, "estimate_error_pct": 0.0} if estimated else {}
    rows = [
        _row("none", 50.0, (48.0, 52.0), extra=est),
        _row("selective", 60.0, (30.0, 90.0), wide=True, extra=est),
        _row("budget 1", 100.0, (99.0, 101.0)),
        _row("budget 0.5", 80.0, (79.0, 81.0), extra={"peak_bytes": 30 * MIB}),
    ]
    return DemoReport(
        device=device,
        torch="2.13.0",
        model="transformer",
        layers=4,
        tokens=256,
        width=128,
        dtype="float32",
        threads=2,
        params_bytes=MIB,
        input_bytes=MIB,
        results=rows,
        theory=None,
        wall_s=1.0,
        heads=4,
        batch=4,
    )


def test_the_table_shows_the_spread_and_marks_a_wide_one() -> None:
    lines = format_table(_report()).splitlines()
    assert "spread ms" in lines[1]
    none = next(line for line in lines if line.startswith("none "))
    selective = next(line for line in lines if line.startswith("selective "))
    assert "48.0-52.0 " in none and "!" not in none
    assert "30.0-90.0!" in selective
    legend = next(line for line in lines if line.startswith("step ms:"))
    assert "median of 4 timed steps" in legend and "interquartile range" in legend and "! marks" in legend


def test_the_cpu_times_note_is_printed_once_on_a_cpu_run_only() -> None:
    assert format_table(_report("cpu")).count(CPU_TIMES_NOTE) == 1
    assert "CPU step times do not carry over to GPUs" in CPU_TIMES_NOTE
    assert CPU_TIMES_NOTE not in format_table(_report("NVIDIA H200"))


# -- 2. compiled runs apart ------------------------------------------------------------


def test_compiled_runs_are_labelled_and_set_apart_against_compiled_budget_1() -> None:
    lines = format_table(_report()).splitlines()
    labels = [line.split("  ")[0].strip() for line in lines[2:]]
    separator = next(i for i, line in enumerate(lines) if line.startswith("-- compiled"))
    assert "another graph" in lines[separator] and "torch.profiler" in lines[separator]  # its own meter
    assert labels[: separator - 2] == ["none", "selective"]  # the eager rows, above it
    assert lines[separator + 1].startswith("compiled budget 1 ")
    half = lines[separator + 2]
    assert half.startswith("compiled budget 0.5 ")
    assert "0.75x" in half and "0.80x" in half  # 30/40 MiB and 80/100 ms against compiled budget 1
    assert "budget 0.5" not in "\n".join(lines[:separator])


# -- 3. --help -------------------------------------------------------------------------


def test_checkpoint_help_lists_models_strategies_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for name in (*MODEL_KINDS, *STRATEGIES):
        assert f"\n  {name} " in text, name
    layers, tokens, width, heads, batch = MODEL_DEFAULTS["transformer"]
    assert f"default {layers} layers, batch {batch} x {tokens} tokens, width {width}, {heads} heads" in text
    flat = " ".join(text.split())  # argparse wraps the help strings
    assert f"default {','.join(DEFAULT_STRATEGIES)}" in flat
    assert "(default 3)" in flat and "(default blocks" in flat and "(default 1,0.5,0.2,0)" in flat


def test_estimate_help_lists_presets_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        estimate.main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    for name in PRESETS:
        assert f"\n  {name} " in text, name
    flat = " ".join(text.split())  # argparse wraps the help strings
    for default in ("(default gpt2-small)", "(default 8)", "(default 1024)", "(default 24)", "(default cuda)"):
        assert default in flat


# -- 4. the estimate on the CPU --------------------------------------------------------


def test_the_cpu_estimate_says_it_agrees_with_its_own_bookkeeping() -> None:
    text = format_table(_report("cpu"))
    assert text.count(CPU_ESTIMATE_NOTE) == 1 and "+0.0%" in CPU_ESTIMATE_NOTE
    assert "not that the estimate predicts a GPU's peak" in CPU_ESTIMATE_NOTE
    assert CPU_ESTIMATE_NOTE not in format_table(_report("cpu", estimated=False))
    assert CPU_ESTIMATE_NOTE not in format_table(_report("NVIDIA H200"))


# -- 5. a quiet stderr -----------------------------------------------------------------


def test_a_demo_with_the_profiler_and_a_compiled_run_writes_nothing_to_stderr() -> None:
    args = "--model transformer --layers 1 --tokens 16 --width 32 --heads 2 --batch 1"
    args += " --strategies none,budget --budgets 0 --repeat 1 --check"
    proc = subprocess.run(
        [sys.executable, "-m", "demos.checkpoint", *args.split()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert not [line for line in proc.stderr.splitlines() if line.startswith(NOISE) or NOISE[2] in line]
    assert proc.stderr == ""
    assert "compiled budget 0" in proc.stdout
