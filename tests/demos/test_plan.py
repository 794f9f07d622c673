"""`python -m demos.plan` held to PyTorch's planner test (test/distributed/_tools/test_sac_ilp.py),
to its own whole-step traces and to real CPU runs of the code it prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from demos.memory import LiveTensorMeter, backward
from demos.plan import (
    GIB,
    POLICIES,
    Request,
    check_on_cpu,
    choose,
    composed_peak,
    cuda_kernels,
    emit_code,
    enumerate_points,
    layer_stats,
    make_model,
    plan,
    run_emitted,
    trace_plan,
)
from demos.plan_models import PRESETS
from tests.conftest import installed_or_skip

ROOT = Path(__file__).resolve().parents[2]
#: ilp_utils.get_peak_memory_runtime_baseline of the test's model, as test_sac_ilp_case1 asserts it
TORCH_BASELINE = 2_583_888_896
AC_ONLY = ("none", "sac-mm", "sac-mm-attn", "full")  # what sac_milp chooses among (it never offloads)
SAC_TEST = PRESETS["torch-sac-test"]


def sac_test(gib: float, accounting: str) -> Request:
    # the test: batch 8 x 1,024, Adam, world_size 4, memory_budget in GiB with no margin
    return Request("torch-sac-test", 8, 1024, "fp32", "adam", 4, gib, 0.0, AC_ONLY, accounting=accounting)


def test_baseline_of_pytorchs_planner_test_model_within_five_percent() -> None:
    p = plan(sac_test(2.4, "torch-bound"))
    assert abs(p.torch_baseline_bytes - TORCH_BASELINE) <= 0.05 * TORCH_BASELINE
    assert p.layers == 4


def test_choices_at_the_three_budgets_match_sac_milp() -> None:
    tight = plan(sac_test(1.6, "torch-bound"))
    assert tight.fits and tight.assignment is not None
    assert "none" not in tight.assignment  # every one of the four layers checkpointed
    loose = plan(sac_test(2.4, "torch-bound"))
    assert loose.fits and loose.chosen == {"none": 4} and loose.recomputed_flops == 0
    impossible = plan(sac_test(0.8, "torch-bound"))
    assert not impossible.fits and impossible.chosen is None
    assert impossible.sentence.count(". ") == 0 and impossible.sentence.endswith(" GiB.")
    assert "the least any plan reaches is" in impossible.sentence


def test_simultaneous_peak_needs_less_checkpointing_than_sac_milps_bound() -> None:
    # our own accounting (the step's peak, optimizer state included) agrees at 2.4 and 0.8 GiB and
    # needs fewer layers checkpointed at 1.6 GiB, since the bound adds temporaries that never coexist
    loose, impossible = plan(sac_test(2.4, "peak")), plan(sac_test(0.8, "peak"))
    assert loose.chosen == {"none": 4}
    assert not impossible.fits
    tight = plan(sac_test(1.6, "peak"))
    bound = plan(sac_test(1.6, "torch-bound"))
    assert tight.fits and tight.predicted_peak_bytes is not None
    assert tight.predicted_peak_bytes <= tight.usable_bytes
    assert tight.recomputed_flops is not None and bound.recomputed_flops is not None
    assert tight.recomputed_flops <= bound.recomputed_flops


def test_more_memory_never_yields_more_recomputed_flops() -> None:
    req = Request("torch-sac-test", 8, 1024, "fp32", "adam", 4, 1.0, 0.0)
    stats, static = layer_stats(req, SAC_TEST)
    for accounting in ("peak", "torch-bound"):
        points = enumerate_points(stats, static, POLICIES, 4, accounting)
        costs = []
        for tenth in range(5, 30):
            pick = choose(points, int(tenth / 10 * GIB))
            costs.append(None if pick is None else pick.cost)
        fitted = [c for c in costs if c is not None]
        assert fitted, accounting
        assert costs.index(fitted[0]) + len(fitted) == len(costs)  # once a plan fits, more memory fits too
        assert fitted == sorted(fitted, reverse=True)


@pytest.mark.parametrize(
    "assignment",
    [["full", "full", "none", "none"], ["none", "full", "sac-mm", "none"], ["sac-mm-attn", "sac-mm", "full", "none"]],
)
def test_composed_peak_is_the_whole_step_traced_with_the_printed_code(assignment: list[str]) -> None:
    req = sac_test(1.6, "peak")
    stats, _ = layer_stats(req, SAC_TEST)
    traced, _ = trace_plan(req, SAC_TEST, assignment)
    assert composed_peak(stats, assignment) == traced.peak


@pytest.mark.parametrize(
    ("model", "assignment"),
    [
        ("torch-sac-test", ["none"] * 4),
        ("torch-sac-test", ["full", "sac-mm-attn", "sac-mm-attn", "none"]),
        ("torch-sac-test", ["full"] * 4),
        ("hf-gpt2", ["full"] * 6 + ["sac-mm"] * 3 + ["none"] * 3),
    ],
)
def test_plan_run_on_the_cpu_peaks_within_five_percent_of_its_prediction(model: str, assignment: list[str]) -> None:
    preset = PRESETS[model]
    req = Request(model, preset.batch, preset.seq, optimizer=preset.optimizer)
    check = check_on_cpu(req, assignment, factor=8)
    # the CPU allocator's own events (torch.profiler) against the plan's composed prediction
    assert abs(check.predicted_peak_bytes - check.measured_peak_bytes) <= 0.05 * check.measured_peak_bytes
    assert abs(check.predicted_saved_bytes - check.measured_saved_bytes) <= 0.02 * check.measured_saved_bytes


def test_the_printed_code_executed_saves_the_predicted_bytes() -> None:
    req = Request("torch-sac-test", 8, 128, "fp32", "adam", 1, 1.0, 0.0, width=96, vocab=1024)
    assignment = ["full", "sac-mm", "sac-mm-attn", "none"]
    stats, _ = layer_stats(req, SAC_TEST)
    none = stats.costs["none"].saved_per_layer
    predicted = stats.traces["none"].saved + sum(stats.costs[p].saved_per_layer - none for p in assignment)
    code = emit_code(SAC_TEST, assignment)
    assert "apply_activation_checkpointing(model" in code and "create_selective_checkpoint_contexts" in code
    with cuda_kernels():  # real tensors: the code as a user pastes it
        torch.manual_seed(0)
        built = make_model(req, SAC_TEST)
        run_emitted(code, built.model)
        ids = torch.randint(0, 1024, (8, 128))
        meter = LiveTensorMeter()
        with meter:
            loss = built.loss(ids)
            saved = meter.live_bytes
            backward(loss)
    assert saved == predicted
    wrapped = [type(m).__name__ for m in built.model.layers]
    assert wrapped == ["CheckpointWrapper", "CheckpointWrapper", "CheckpointWrapper", "SacTestBlock"]


def test_hf_uniform_plan_prints_gradient_checkpointing_enable_with_context_fn() -> None:
    preset = PRESETS["hf-gpt2"]
    req = Request("hf-gpt2", 2, 64, layers=2)
    code = emit_code(preset, ["sac-mm", "sac-mm"])
    assert "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=" in code
    assert '"context_fn": functools.partial(create_selective_checkpoint_contexts, SAVE)' in code
    with FakeTensorMode():
        built = make_model(req, preset)
        run_emitted(code, built.model)
    assert all(getattr(block, "gradient_checkpointing", False) for block in built.layers)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "demos.plan", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def test_cli_json_and_help() -> None:
    proc = run_cli("--model", "torch-sac-test", "--shards", "4", "--gpu-gib", "1.6", "--margin-gib", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["fits"] and out["code"] and sum(out["chosen"].values()) == 4
    assert [r for r in out["frontier"] if r["chosen"]]
    assert set(out["breakdown"]) >= {"parameters", "optimizer state", "gradients", "saved activations", "LM head"}
    assert proc.stderr == ""
    helped = run_cli("--help")
    assert helped.returncode == 0
    for name in [*PRESETS, *POLICIES, "fp32", "bf16-autocast", "adamw", "sgd", "adapters", "default hf-gpt2"]:
        assert name in helped.stdout, name


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "gpt5"], "Unknown model 'gpt5'"),
        (["--batch", "٣"], "--batch must be a whole number"),
        (["--gpu-gib", "lots"], "--gpu-gib must be a number of GiB"),
        (["--policies", "full"], "--policies must name none"),
        (["--margin-gib", "30"], "must be less than --gpu-gib"),
    ],
)
def test_cli_bad_input_is_one_sentence(args: list[str], fragment: str) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert fragment in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_gpt2_loss_frees_its_logits_without_garbage_collection() -> None:
    import gc
    import weakref

    from demos.hf import build_gpt2, gpt2_loss

    torch.manual_seed(0)
    model = build_gpt2(1, 32, 2, 64)
    ids = torch.randint(0, 50257, (1, 16))
    gc.disable()
    try:
        loss = gpt2_loss(model, ids)
        logits = weakref.ref(loss._logits)
        assert logits() is not None  # alive while the loss is, as a training loop's outputs are
        backward(loss)
        del loss
        assert logits() is None  # freed at once: no reference cycle waits for gc
    finally:
        gc.enable()


def test_chart_is_a_png_with_the_frontier_and_the_breakdown(tmp_path: Path) -> None:
    installed_or_skip("matplotlib")
    from PIL import Image

    from demos.plan_chart import plan_chart

    p = plan(sac_test(1.6, "peak"))
    path = tmp_path / "plan.png"
    plan_chart(p, str(path))
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 800


@pytest.mark.parametrize(
    ("req", "param_bytes_each", "state_per_param"),
    [
        (Request("llama-7b", 1, 128, "bf16", "sgd", 8, layers=2), 2, 1),  # bf16 weights, one momentum buffer
        (Request("llama-1b", 1, 128, "bf16-autocast", layers=2), 4, 2),  # fp32 weights, AdamW's two moments
    ],
)
def test_dtype_optimizer_and_shards_change_the_static_memory(
    req: Request, param_bytes_each: int, state_per_param: int
) -> None:
    p = plan(req)
    assert p.fits and p.breakdown is not None
    with FakeTensorMode():
        built = make_model(req, PRESETS[req.model])
        params = list({id(q): q for q in built.model.parameters()}.values())
    count = sum(q.numel() for q in params)
    assert {q.element_size() for q in params} == {param_bytes_each}
    state = p.breakdown["optimizer state"]
    assert abs(state - state_per_param * count * param_bytes_each // req.shards) <= 4 * len(params)


def test_frozen_base_with_adapters_trains_only_the_adapters() -> None:
    req = Request("gpt2-medium", 1, 64, optimizer="adapters", layers=2)
    p = plan(req)
    assert p.fits and p.breakdown is not None
    with FakeTensorMode():
        built = make_model(req, PRESETS[req.model])
    trainable = [q for q in built.model.parameters() if q.requires_grad]
    assert trainable and all(q.shape[0] == 16 or q.shape[1] == 16 for q in trainable)  # LoRA rank 16
    assert p.breakdown["optimizer state"] < 0.05 * p.breakdown["parameters"]
