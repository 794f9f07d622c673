"""The fake-tensor estimate against a real measured run of the same code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from demos.estimate import main, measure_training_step
from demos.models import TransformerConfig
from tests.conftest import installed_or_skip

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "gpt2": TransformerConfig("tiny-gpt2", 512, 2, 64, 4, 4, 256, "gpt2", 128, True),
    "llama": TransformerConfig("tiny-llama", 512, 2, 64, 4, 2, 176, "llama", 128, True),
}


@pytest.mark.parametrize("style", ["gpt2", "llama"])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_estimate_within_five_percent_of_a_real_run(style: str, checkpointing: bool) -> None:
    cfg = TINY[style]
    estimate, _ = measure_training_step(cfg, 4, 128, checkpointing, fake=True)
    measured, profiler_peak = measure_training_step(cfg, 4, 128, checkpointing, fake=False)
    assert profiler_peak is not None
    # the real run's allocator peak (profiler) against the fake trace: within 5%
    assert abs(estimate.step_peak_bytes - profiler_peak) <= 0.05 * profiler_peak
    assert estimate.parameters_bytes == measured.parameters_bytes
    assert estimate.optimizer_state_bytes == measured.optimizer_state_bytes


def test_breakdown_adds_up_and_checkpointing_saves() -> None:
    cfg = TINY["gpt2"]
    without, _ = measure_training_step(cfg, 4, 128, False)
    with_ckpt, _ = measure_training_step(cfg, 4, 128, True)
    for b in (without, with_ckpt):
        parts = (
            b.parameters_bytes + b.gradients_bytes + b.optimizer_state_bytes + b.activations_bytes + b.temporaries_bytes
        )
        assert parts == b.total_bytes
        assert b.optimizer_state_bytes >= 2 * b.parameters_bytes  # AdamW: two moments
    assert with_ckpt.saved_bytes < without.saved_bytes


def test_estimate_cli_json() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "demos.estimate",
            "--preset",
            "gpt2-small",
            "--batch",
            "4",
            "--seq",
            "512",
            "--gpu-gib",
            "1",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["preset"] == "gpt2-small"
    # 124M parameters (tied embeddings) in float32
    assert 480e6 < out["without"]["parameters_bytes"] < 520e6
    assert out["with_checkpointing"]["total_bytes"] < out["without"]["total_bytes"]
    assert "1 GiB GPU" in out["verdict"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--preset", "gpt5"], "Unknown preset 'gpt5'"),
        (["--batch", "two"], "--batch must be a whole number"),
        (["--seq", "4096"], "--seq must be between 1 and 1,024"),
        (["--gpu-gib", "-3"], "--gpu-gib must be a positive number"),
    ],
)
def test_estimate_bad_input(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err


# -- Hugging Face's GPT-2 against the published Mosaic figures -----------------------


@pytest.fixture(scope="module")
def mosaic() -> dict[str, float]:
    installed_or_skip("transformers")
    from demos.estimate import estimate, steps_gib

    e = estimate("hf-gpt2", 4, 512, 24.0, kernels="cuda")
    return {"without": steps_gib(e.without), "with": steps_gib(e.with_checkpointing)}


def test_hf_gpt2_estimate_within_five_percent_of_the_mosaic_tutorial(mosaic: dict[str, float]) -> None:
    # optimizer state plus the step's peak (what the tutorial's steps allocate), GiB
    assert abs(mosaic["without"] - 4.62) <= 0.05 * 4.62, mosaic
    assert abs(mosaic["with"] - 2.55) <= 0.05 * 2.55, mosaic


def test_hf_gpt2_optimizer_state_follows_from_the_parameters() -> None:
    installed_or_skip("transformers")
    from demos.estimate import PRESETS, measure_training_step

    b, _ = measure_training_step(PRESETS["hf-gpt2"], 1, 64, False, kernels="cuda")
    assert b.optimizer_state_bytes == 2 * b.parameters_bytes + 4 * 148  # two moments, a step count per tensor


def test_estimate_cli_says_which_kernels_it_assumed() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "demos.estimate", "--preset", "gpt2-small", "--batch", "1", "--seq", "64", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["kernels"] == "cuda"
