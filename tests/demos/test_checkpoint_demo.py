"""The checkpoint demo on the CPU: memory ratios, meters, gradients, CLI and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from demos.chart import png_text
from demos.checkpoint import DemoConfig, main, run_demo
from demos.estimate import trace_demo_step
from demos.memory import LiveTensorMeter, profiler_allocations
from demos.models import build_model
from demos.report import DemoReport
from demos.strategies import SAVED_OPS, MatmulSavePolicy, loss_of, make_forward
from tests.conftest import installed_or_skip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def default_report() -> DemoReport:
    """The default-size run (blocks, 9 layers, 512 tokens, width 128), one timed step,
    with the profiler's allocator events as a second meter."""
    return run_demo(DemoConfig(repeat=1, check=True), estimate=True)


def test_every_default_strategy_is_measured(default_report: DemoReport) -> None:
    assert [r.strategy for r in default_report.results] == ["none", "block", "sqrt", "selective"]


def test_block_peak_is_at_most_a_third_of_none(default_report: DemoReport) -> None:
    # 9 layers: block keeps 9 inputs and one layer's activations where none keeps 9 layers'
    none, block = default_report.result("none"), default_report.result("block")
    assert block.peak_bytes <= none.peak_bytes / 3


def test_sqrt_and_selective_sit_between_block_and_none(default_report: DemoReport) -> None:
    none = default_report.result("none").peak_bytes
    block = default_report.result("block").peak_bytes
    assert block < default_report.result("sqrt").peak_bytes < none
    assert block < default_report.result("selective").peak_bytes < none


def test_every_gradient_is_bit_identical(default_report: DemoReport) -> None:
    assert all(r.grads_identical for r in default_report.results)


def test_the_two_meters_agree_within_two_percent(default_report: DemoReport) -> None:
    for r in default_report.results:
        assert r.peak_check_bytes is not None
        assert abs(r.peak_bytes - r.peak_check_bytes) <= 0.02 * r.peak_check_bytes, r


def test_fake_tensor_estimate_matches_the_measured_peak(default_report: DemoReport) -> None:
    for r in default_report.results:
        assert r.estimate_bytes is not None
        assert abs(r.estimate_bytes - r.peak_bytes) <= 0.05 * r.peak_bytes, r


def test_saved_bytes_follow_the_strategy(default_report: DemoReport) -> None:
    saved = {r.strategy: r.saved_bytes for r in default_report.results}
    # block keeps one 512 x 128 float32 input per layer (plus the scalar loss)
    assert saved["block"] == 9 * 512 * 128 * 4 + 4
    assert saved["block"] < saved["sqrt"] < saved["selective"] < saved["none"]


def test_theory_predicts_the_none_activations(default_report: DemoReport) -> None:
    theory = default_report.theory
    assert theory is not None and theory.segments == 3
    assert theory.predicted["sqrt"] < theory.predicted["none"]
    measured = default_report.result("none").saved_bytes
    assert abs(theory.predicted["none"] - measured) <= 0.01 * measured


def test_selective_policy_names_overloads_and_matches() -> None:
    assert all(isinstance(op, torch._ops.OpOverload) for op in SAVED_OPS)
    torch.manual_seed(0)
    model = build_model("blocks", 2, 16)
    policy = MatmulSavePolicy()
    loss_of(make_forward(model, "selective", policy)(torch.randn(8, 16))).backward()
    assert policy.saved == 2 * 2  # two Linear layers (addmm) per block, forward only


def test_a_packet_instead_of_an_overload_is_refused() -> None:
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    with pytest.raises(ValueError):
        create_selective_checkpoint_contexts([torch.ops.aten.mm])


def test_meter_ignores_views_and_preexisting_storage() -> None:
    x = torch.randn(256, 256)
    with LiveTensorMeter() as meter:
        v = x.t()
        w = x[:10]
        x.add_(1.0)
    assert meter.peak_bytes == 0
    with LiveTensorMeter() as meter:
        y = x * 2
        z = y.view(-1)
        del y, z
    assert meter.peak_bytes == 256 * 256 * 4 and meter.live_bytes == 0
    del v, w


def test_meter_and_profiler_agree_on_the_chain() -> None:
    torch.manual_seed(0)
    model = build_model("chain", 32, 64)
    x = torch.randn(512, 64)
    forward = make_forward(model, "sqrt")
    with profiler_allocations() as trace, LiveTensorMeter() as meter:
        loss_of(forward(x)).backward()
    assert trace.events > 0
    assert abs(meter.peak_bytes - trace.peak_bytes) <= 0.02 * trace.peak_bytes


def test_chain_sweep_sqrt_is_six_times_below_none_at_256() -> None:
    # the chain's own default size (2,048 tokens), as `--sweep 16,256` runs it
    cfg = DemoConfig(model="chain", tokens=2048, strategies=("none", "sqrt"), repeat=1, sweep=(16, 256))
    report = run_demo(cfg, estimate=False)
    none, sqrt = report.result("none", 256), report.result("sqrt", 256)
    assert none.peak_bytes >= 6 * sqrt.peak_bytes
    assert all(r.grads_identical for r in report.results)


def test_fake_trace_allocates_nothing_real() -> None:
    traced = trace_demo_step("blocks", 64, 65536, 1024, "none")  # about 35 GiB if real
    assert traced.peak_bytes > 30 * 1024**3


# -- the CLI ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--strategies", "none,magic"], "Unknown strategy 'magic'"),
        (["--strategies", "offload"], "offload strategy needs a CUDA GPU"),
        (["--layers", "abc"], "--layers must be a whole number"),
        (["--tokens", "0"], "--tokens must be between 1"),
        (["--model", "resnet"], "Unknown model 'resnet'"),
        (["--strategies", "budget", "--budgets", "0.5,2"], "--budgets value must be a number from 0 to 1"),
        (["--model", "transformer", "--width", "130", "--heads", "4"], "must be a multiple of --heads"),
        (["--model", "hf-gpt2", "--strategies", "sqrt"], "hf-gpt2 model runs none, block, offload"),
        (["--sweep", "4,16", "--strategies", "budget"], "run it without --sweep"),
        (["--device", "tpu"], "Unknown device 'tpu'"),
        (["--sweep", "4,x"], "--sweep depth must be a whole number"),
        (["--nonsense"], "Unrecognized arguments"),
        (["--layers", "4096", "--tokens", "1048576", "--width", "16384"], "Refused: the estimated peak"),
        (["--time-budget", "0.5"], "over the 0.5 s budget"),
    ],
)
def test_bad_input_gets_one_sentence_and_exit_2(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    message = captured.err.strip()
    assert fragment in message
    assert "\n" not in message and message.endswith(".")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown without a GPU")
def test_cuda_without_gpu_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--device", "cuda"]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err


def test_json_and_chart_from_a_subprocess(tmp_path: Path) -> None:
    chart = tmp_path / "demo.png"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "demos.checkpoint",
            "--layers",
            "4",
            "--tokens",
            "512",
            "--repeat",
            "1",
            "--json",
            "--chart",
            str(chart),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)  # exactly one JSON object on stdout
    assert {
        "device",
        "torch",
        "model",
        "layers",
        "tokens",
        "width",
        "dtype",
        "params_bytes",
        "results",
        "theory",
        "wall_s",
        "chart",
    } <= set(out)
    assert out["device"] == "cpu" and out["chart"] == str(chart)
    assert [r["strategy"] for r in out["results"]] == ["none", "block", "sqrt", "selective"]
    for r in out["results"]:
        assert {"strategy", "peak_bytes", "peak_check_bytes", "saved_bytes", "step_ms", "grads_identical"} <= set(r)
        assert r["grads_identical"] is True
        assert {"estimate_bytes", "estimate_error_pct", "timeline", "label"} <= set(r)
        assert max(r["timeline"]["live_bytes"]) == r["peak_bytes"]
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert out["charts"]["timeline"] == str(chart)
    assert png_text(str(chart))["Lines"] == "4"  # one timeline per strategy
    assert png_text(out["charts"]["memory"])["Lines"] == "3"  # peaks, estimates, times


def test_sweep_chart_is_a_png(tmp_path: Path) -> None:
    installed_or_skip("matplotlib")
    from demos.chart import write_chart

    report = run_demo(
        DemoConfig(model="chain", tokens=256, width=32, strategies=("none", "sqrt"), repeat=1, sweep=(4, 16)),
        estimate=False,
    )
    path = write_chart(report, str(tmp_path / "sweep.png"))
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert png_text(path)["Lines"] == "2"  # none and sqrt against depth
